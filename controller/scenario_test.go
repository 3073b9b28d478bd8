package controller

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the expected decisions of testdata/unit/*.json")

// A scenario scripts a run: its turns, in order, and the decision expected
// after each. The harness plays the session: it accounts Spent (non-cached
// input plus output tokens, ElapsedMs, cost at the scenario's prices),
// counts Retries, keeps the last 20 turns and decisions, and sets a
// turn's Kind from the decision before it when the script leaves it empty.
// Go test -update rewrites every "want" from Decide; review the diff.
type scenario struct {
	Description     string         `json:"description"`
	Objective       string         `json:"objective"`
	Config          Config         `json:"config"`
	PricePerMTokIn  float64        `json:"pricePerMTokIn,omitempty"`
	PricePerMTokOut float64        `json:"pricePerMTokOut,omitempty"`
	Turns           []scenarioTurn `json:"turns"`
}

type scenarioTurn struct {
	// Turn is kept raw so -update does not rewrite the script.
	Turn     json.RawMessage `json:"turn"`
	UserStop bool            `json:"userStop,omitempty"`
	Model    *ModelAnswer    `json:"model,omitempty"`
	Want     *Decision       `json:"want"`
}

const keep = 20 // turns and decisions the session keeps

func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "unit", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found %d scenarios in testdata/unit, want at least 10", len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var sc scenario
			if err := strictDecode(data, &sc); err != nil {
				t.Fatalf("decoding %s: %v", file, err)
			}
			playScenario(t, &sc)
			if !*update {
				return
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(sc); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func playScenario(t *testing.T, sc *scenario) {
	var (
		spent   Spent
		elapsed int64
		retries int
		history []TurnSummary
		recent  []Decision
	)
	for i := range sc.Turns {
		st := &sc.Turns[i]
		var turn TurnSummary
		if err := strictDecode(st.Turn, &turn); err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
		if len(recent) > 0 && recent[len(recent)-1].Action == ActStop {
			t.Fatalf("turn %d follows a stop decision; end the script there", i+1)
		}
		if turn.Kind == "" && len(recent) > 0 {
			switch prev := recent[len(recent)-1]; {
			case prev.Action == ActReview:
				turn.Kind = KindReview
			case prev.WrapUp:
				turn.Kind = KindWrapUp
			}
		}
		u := turn.Usage
		spent.Turns++
		spent.Tokens += u.Input - u.Cached + u.Output
		spent.TimeMs += turn.ElapsedMs
		spent.CostUSD += (float64(u.Input-u.Cached)*sc.PricePerMTokIn + float64(u.Output)*sc.PricePerMTokOut) / 1e6
		elapsed += turn.ElapsedMs
		if turn.Status == StatusFailed && turn.Error != nil && turn.Error.Recoverable {
			retries++
		} else {
			retries = 0
		}

		in := Input{
			Objective: sc.Objective, Config: sc.Config, Spent: spent, RunElapsedMs: elapsed,
			Turn: turn, History: history, Recent: recent, UserStop: st.UserStop, Retries: retries, Model: st.Model,
		}
		got := Decide(in)

		r := Receipt{ID: "r", Seq: i, Input: in, Output: got, PolicyHash: PolicyHash(in.Config)}
		if _, same := Replay(roundTrip(t, r)); !same {
			t.Errorf("turn %d: the receipt does not replay", i+1)
		}

		if *update {
			st.Want = &got
		} else if st.Want == nil || !reflect.DeepEqual(got, *st.Want) {
			gotJSON, _ := json.MarshalIndent(got, "", "  ")
			wantJSON, _ := json.MarshalIndent(st.Want, "", "  ")
			t.Errorf("turn %d: Decide = %s\nwant %s\n(go test ./controller -run TestScenarios -update rewrites it)", i+1, gotJSON, wantJSON)
		}

		history = append(history, turn)
		history = history[max(0, len(history)-keep):]
		recent = append(recent, got)
		recent = recent[max(0, len(recent)-keep):]
	}
}
