package brain

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apserver/apserver/protocol"
)

// ReceiptKind is the kind of the receipt that keeps a verdict with its
// inputs, beside full auto's decision and approval receipts (apserver
// replay re-judges it).
const ReceiptKind = "alignment"

// Answer is one reply of the validator model as Judge got it: its text,
// or the error of the request.
type Answer struct {
	Text string `json:"text,omitempty"`
	Err  string `json:"err,omitempty"`
}

// Record is what a verdict was judged from: the action, the task, the
// active decisions, and the validator's answers in the order they came
// (none when the rules settled it). ReplayVerdict gives the same verdict
// from it.
type Record struct {
	Action protocol.AlignmentAction `json:"action"`
	Task   Task                     `json:"task"`
	// Decisions are the active decisions; a stored record may leave them
	// out when an earlier record of its thread holds the same ones
	// (DecisionSets), named by DecisionsHash.
	Decisions     []protocol.ProjectDecision `json:"decisions,omitempty"`
	DecisionsHash string                     `json:"decisionsHash"`
	Answers       []Answer                   `json:"answers,omitempty"`
}

// HashDecisions names a set of decisions: the same decisions, in the same
// order and with the same fields, have the same hash.
func HashDecisions(ds []protocol.ProjectDecision) string {
	b, _ := json.Marshal(ds)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// DecisionSets are the decisions a thread's records hold, by hash: a
// record may leave out a set another record of its thread holds (records
// judged at once may be stored in either order, so a set is looked up
// among all of them, not only the earlier ones).
type DecisionSets map[string][]protocol.ProjectDecision

// Add makes a record's decisions known, if it holds them and they match
// their hash.
func (k DecisionSets) Add(r Record) {
	if r.Decisions != nil && HashDecisions(r.Decisions) == r.DecisionsHash {
		k[r.DecisionsHash] = r.Decisions
	}
}

// Resolve completes a record: one that holds its decisions must match
// their hash; one that leaves them out takes the known set it names; an
// unknown set is an error.
func (k DecisionSets) Resolve(r *Record) error {
	if r.Decisions != nil {
		if h := HashDecisions(r.Decisions); h != r.DecisionsHash {
			return fmt.Errorf("the record's decisions hash to %s, not %s", h, r.DecisionsHash)
		}
		return nil
	}
	ds, ok := k[r.DecisionsHash]
	if !ok && r.DecisionsHash == HashDecisions([]protocol.ProjectDecision{}) {
		ds, ok = []protocol.ProjectDecision{}, true // none: nothing to leave out
	}
	if !ok {
		return fmt.Errorf("the decisions %s are in no record of the thread", r.DecisionsHash)
	}
	r.Decisions = ds
	return nil
}

// JudgeRecorded is Judge, and the record of what it judged from.
func JudgeRecorded(a protocol.AlignmentAction, task Task, decisions []protocol.ProjectDecision, ask func(prompt string) (string, error)) (protocol.AlignmentVerdict, Record) {
	rec := Record{Action: a, Task: task, Decisions: Active(decisions)}
	if rec.Decisions == nil {
		rec.Decisions = []protocol.ProjectDecision{}
	}
	rec.DecisionsHash = HashDecisions(rec.Decisions)
	var recorded func(string) (string, error)
	if ask != nil {
		recorded = func(prompt string) (string, error) {
			text, err := ask(prompt)
			ans := Answer{Text: text}
			if err != nil {
				ans = Answer{Err: err.Error()}
			}
			rec.Answers = append(rec.Answers, ans)
			return text, err
		}
	}
	return Judge(a, task, rec.Decisions, recorded), rec
}

// errNoAnswer is a replay's validator asked once more than it was then.
var errNoAnswer = errors.New("no recorded answer")

// ReplayVerdict judges a record again: today's rules over its action,
// task and decisions, the validator's recorded answers given back in
// order (today's code asking it more often than then gets an error, and
// so differs). The same code gives the same verdict.
func ReplayVerdict(r Record) protocol.AlignmentVerdict {
	i := 0
	ask := func(string) (string, error) {
		if i >= len(r.Answers) {
			return "", fmt.Errorf("the validator asked %d times, answered %d: %w", i+1, len(r.Answers), errNoAnswer)
		}
		a := r.Answers[i]
		i++
		if a.Err != "" {
			return "", errors.New(a.Err)
		}
		return a.Text, nil
	}
	return Judge(r.Action, r.Task, r.Decisions, ask)
}
