package fullauto

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/protocol"
)

var update = flag.Bool("update", false, "rewrite the expected decisions of testdata/unit/*.json")

// A scenario scripts a drive: its turns, in order, and the decision expected
// after each. The harness drives a real Machine, so the accounting is the
// machine's (tokens from each turn's one model response, time from a clock
// that moves by each turn's ElapsedMs, cost at the scenario's prices,
// retries, the last 20 turns and decisions, the turn kinds it starts, the
// pending requests and timeouts it saw). A turn with userStop is stopped
// by the user while it runs. A paused drive is resumed before the next turn.
// Go test -update rewrites every "want" from the machine; review the diff.
type scenario struct {
	Description     string            `json:"description"`
	Objective       string            `json:"objective"`
	Config          controller.Config `json:"config"`
	PricePerMTokIn  float64           `json:"pricePerMTokIn,omitempty"`
	PricePerMTokOut float64           `json:"pricePerMTokOut,omitempty"`
	Turns           []scenarioTurn    `json:"turns"`
}

type scenarioTurn struct {
	// Turn is kept raw so -update does not rewrite the script.
	Turn     json.RawMessage         `json:"turn"`
	UserStop bool                    `json:"userStop,omitempty"`
	Model    *controller.ModelAnswer `json:"model,omitempty"`
	Want     *controller.Decision    `json:"want"`
}

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

// driver applies a machine's effects the way the session does, recording
// what a test looks at.
type driver struct {
	t        *testing.T
	m        *Machine
	now      int64
	seq      int
	starts   []TurnInput
	asked    *AskModel
	fp       *Fingerprint
	decided  []StoreReceipt
	notes    []Notify
	handoffs []Handoff
}

func (d *driver) apply(effs []Effect) {
	for i := 0; i < len(effs); i++ {
		switch e := effs[i].(type) {
		case StoreReceipt:
			d.seq++
			if e.Kind == ReceiptDecision {
				d.decided = append(d.decided, e)
				more := d.m.ReceiptStored(d.now, fmt.Sprintf("r%d", d.seq), d.seq)
				effs = append(effs[:i+1:i+1], append(more, effs[i+1:]...)...)
			}
		case StartTurn:
			if e.DelayMs > 0 {
				d.now += e.DelayMs
				d.apply(d.m.TimerFired(d.now, e.Token))
				continue
			}
			d.starts = append(d.starts, e.Input)
		case Fingerprint:
			d.fp = &e
		case AskModel:
			d.asked = &e
		case Notify:
			d.notes = append(d.notes, e)
		case Handoff:
			d.handoffs = append(d.handoffs, e)
		}
	}
}

func playScenario(t *testing.T, sc *scenario) {
	m := New(Options{ThreadID: "th", DecisionModel: true})
	d := &driver{t: t, m: m}
	effs, err := m.Start(0, protocol.FullAutoStartParams{ThreadID: "th", Objective: &sc.Objective}, "")
	if err != nil {
		t.Fatal(err)
	}
	m.drive.Config = sc.Config
	d.apply(effs)
	for i := range sc.Turns {
		st := &sc.Turns[i]
		var turn controller.TurnSummary
		if err := strictDecode(st.Turn, &turn); err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
		switch m.drive.State {
		case protocol.FullAutoStopped:
			t.Fatalf("turn %d follows a stop decision; end the script there", i+1)
		case protocol.FullAutoPaused:
			effs, err := m.Resume(d.now)
			if err != nil {
				t.Fatal(err)
			}
			d.apply(effs)
		}
		if len(d.starts) == 0 {
			t.Fatalf("turn %d: the machine started no turn", i+1)
		}
		kind := d.starts[len(d.starts)-1].Kind
		if turn.Kind != "" {
			kind = turn.Kind
		}
		d.starts = nil
		m.TurnStarted(d.now, turn.TurnID, kind)
		price := Price{InputPerMTok: sc.PricePerMTokIn, OutputPerMTok: sc.PricePerMTokOut}
		d.apply(m.ResponseDone(d.now, turn.TurnID, Response{Input: turn.Usage.Input, Cached: turn.Usage.Cached, Output: turn.Usage.Output, Price: price}))
		// Requests the turn left pending or saw time out, as the session
		// reports them.
		id := int64(100 * (i + 1))
		for range turn.PendingApprovals {
			id++
			_, _, effs := m.RequestForwarded(d.now, turn.TurnID, id, "command", "make it", "approve")
			d.apply(effs)
		}
		for range turn.PendingQuestions {
			id++
			_, _, effs := m.RequestForwarded(d.now, turn.TurnID, id, "question", "", "answer")
			d.apply(effs)
		}
		for range turn.ApprovalTimeouts {
			id++
			_, _, effs := m.RequestForwarded(d.now, turn.TurnID, id, "command", "deploy it", "approve")
			d.apply(effs)
			d.apply(m.RequestSettled(d.now, turn.TurnID, id, Settled{TimedOut: true}))
		}
		turn.PendingApprovals, turn.PendingQuestions, turn.ApprovalTimeouts = 0, 0, 0
		d.now += turn.ElapsedMs
		fp := turn.WorkspaceFingerprint
		turn.Kind, turn.Usage, turn.WorkspaceFingerprint = "", controller.Usage{}, ""
		d.decided, d.fp, d.asked = nil, nil, nil
		if st.UserStop {
			d.apply(m.Stop(d.now))
			d.apply(m.TurnEnded(d.now, TurnEnd{Summary: turn}))
			if d.fp != nil {
				t.Fatalf("turn %d: a stopped run decides on the turn the stop interrupted", i+1)
			}
		} else {
			d.apply(m.TurnEnded(d.now, TurnEnd{Summary: turn}))
			if d.fp == nil {
				t.Fatalf("turn %d: no decision under way after the turn", i+1)
			}
			d.apply(m.Fingerprinted(d.now, d.fp.Token, fp))
			if d.asked != nil {
				d.apply(m.ModelAnswered(d.now, d.asked.Token, st.Model))
			}
		}
		if len(d.decided) != 1 {
			t.Fatalf("turn %d: %d decisions, want 1", i+1, len(d.decided))
		}
		rec := d.decided[0]
		got := rec.Output.(controller.Decision)

		var in DecisionInput
		b, _ := json.Marshal(rec.Input)
		if err := json.Unmarshal(b, &in); err != nil {
			t.Fatal(err)
		}
		if _, why, same := ReplayDecision(in, got, rec.PolicyHash, rec.Executed, rec.Override); !same {
			t.Errorf("turn %d: the receipt does not replay: %s", i+1, why)
		}

		if *update {
			st.Want = &got
		} else if st.Want == nil || !reflect.DeepEqual(got, *st.Want) {
			gotJSON, _ := json.MarshalIndent(got, "", "  ")
			wantJSON, _ := json.MarshalIndent(st.Want, "", "  ")
			t.Errorf("turn %d: Decide = %s\nwant %s\n(go test ./fullauto -run TestScenarios -update rewrites it)", i+1, gotJSON, wantJSON)
		}
	}
}
