package brain

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/apserver/apserver/protocol"
)

// TestReplayVerdict: a verdict judged with its record — by the rules, by
// the validator (an invalid answer, then a valid one), or after the
// validator failed — is judged the same from the stored record (through
// JSON); a record whose answers were lost is not.
func TestReplayVerdict(t *testing.T) {
	ds := projectDecisions()
	task := Task{ID: "t-1", Title: "Keep orders", Text: "Persist orders.", Files: []string{"app/**"}}
	write := protocol.AlignmentAction{Kind: protocol.ActionWrite, Path: "app/db/file_store.py", After: "import json\n\ndef save(order, f):\n    json.dump(order, f)\n"}
	for _, tc := range []struct {
		name    string
		a       protocol.AlignmentAction
		answers []Answer
		pass    string
	}{
		{"rules", protocol.AlignmentAction{Kind: protocol.ActionCommand, Command: "pip install PyMySQL"}, nil, "rules"},
		{"validator", write, []Answer{{Text: "not json"}, {Text: `{"status":"conflicting","score":0.8,"reasons":["orders in a JSON file"],"decisions":["d-1"]}`}}, "validator"},
		{"validator failed", write, []Answer{{Err: "model down"}}, "validator"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := 0
			v, rec := JudgeRecorded(tc.a, task, ds, func(string) (string, error) {
				a := tc.answers[i]
				i++
				if a.Err != "" {
					return "", errors.New(a.Err)
				}
				return a.Text, nil
			})
			if v.Pass != tc.pass || i != len(tc.answers) || !reflect.DeepEqual(rec.Answers, tc.answers) {
				t.Fatalf("JudgeRecorded = %+v (asked %d times), record answers %+v", v, i, rec.Answers)
			}
			if len(rec.Decisions) != len(Active(ds)) {
				t.Errorf("the record keeps %d decisions, want the %d active", len(rec.Decisions), len(Active(ds)))
			}
			raw, _ := json.Marshal(rec)
			var back Record
			if err := json.Unmarshal(raw, &back); err != nil {
				t.Fatal(err)
			}
			if got := ReplayVerdict(back); !reflect.DeepEqual(got, v) {
				t.Errorf("ReplayVerdict = %+v, want %+v", got, v)
			}
			if len(back.Answers) > 0 {
				back.Answers = nil
				if got := ReplayVerdict(back); reflect.DeepEqual(got, v) {
					t.Errorf("without its answers the replay still gives %+v", got)
				}
			}
		})
	}
}

// TestDecisionSets: a thread's records hold a set of decisions once; a
// record naming it by hash gets it back from the one that holds it; an
// unknown set, or decisions that do not match their hash, are errors.
func TestDecisionSets(t *testing.T) {
	ds := projectDecisions()
	a := protocol.AlignmentAction{Kind: protocol.ActionCommand, Command: "pip install PyMySQL"}
	v, first := JudgeRecorded(a, Task{}, ds, nil)
	_, second := JudgeRecorded(a, Task{}, ds, nil)
	if first.DecisionsHash == "" || first.DecisionsHash != second.DecisionsHash {
		t.Fatalf("hashes %q, %q", first.DecisionsHash, second.DecisionsHash)
	}
	second.Decisions = nil
	sets := DecisionSets{}
	if err := sets.Resolve(&second); err == nil {
		t.Fatal("a record naming a set no record holds resolved")
	}
	tampered := first
	tampered.Decisions = tampered.Decisions[1:]
	sets.Add(tampered)
	if err := sets.Resolve(&second); err == nil {
		t.Fatal("a set whose decisions do not match its hash was taken")
	}
	if err := sets.Resolve(&tampered); err == nil {
		t.Error("decisions that do not match their hash resolved")
	}
	sets.Add(first)
	if err := sets.Resolve(&second); err != nil || !reflect.DeepEqual(ReplayVerdict(second), v) {
		t.Fatalf("Resolve = %v; replayed %+v, want %+v", err, ReplayVerdict(second), v)
	}
}
