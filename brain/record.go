package brain

import (
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
	Action    protocol.AlignmentAction   `json:"action"`
	Task      Task                       `json:"task"`
	Decisions []protocol.ProjectDecision `json:"decisions"`
	Answers   []Answer                   `json:"answers,omitempty"`
}

// JudgeRecorded is Judge, and the record of what it judged from.
func JudgeRecorded(a protocol.AlignmentAction, task Task, decisions []protocol.ProjectDecision, ask func(prompt string) (string, error)) (protocol.AlignmentVerdict, Record) {
	rec := Record{Action: a, Task: task, Decisions: Active(decisions)}
	if rec.Decisions == nil {
		rec.Decisions = []protocol.ProjectDecision{}
	}
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
