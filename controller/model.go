package controller

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// ModelInstructions is the system prompt of the decision model, which the
// session asks (with ModelSchema as structured output) after a turn the
// hard rules let through.
func ModelInstructions() string {
	return `You supervise an autonomous coding agent working toward an objective without a human watching.
After each of its turns you decide what happens next:
- "continue": the agent should keep working; put in nextInput what it should do next (empty: the policy's proposal).
- "review": the work looks finished; a separate review turn should check it; nextInput may hold review instructions (empty: the default ones).
- "stop": the objective is achieved and verified by evidence (plan completed, tests passing).
- "pause": a human must decide (an ambiguous requirement, a risky or irreversible step, a blocker the agent cannot remove).
Judge by evidence (plan, step results, checks), not by the agent's claims. Budgets, failures, loops and approvals are enforced outside you; do not mention them unless they matter to your choice.
reason: one sentence. confidence: 0 to 1, how sure you are; below 0.6 the run pauses for a human.
Answer only with the JSON object the schema describes.`
}

// ModelSchema is the strict JSON schema of ModelAnswer, for structured
// output ("strict": true: every property required, no others allowed).
func ModelSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{` +
		`"action":{"type":"string","enum":["continue","pause","stop","review"],"description":"what happens next"},` +
		`"nextInput":{"type":"string","description":"input of the next turn for continue or review; empty for the default"},` +
		`"reason":{"type":"string","description":"one sentence"},` +
		`"confidence":{"type":"number","description":"0 to 1"}},` +
		`"required":["action","nextInput","reason","confidence"],"additionalProperties":false}`)
}

// ParseModelAnswer decodes and validates a decision model answer: one JSON
// object with exactly the fields of ModelSchema, a known action and a
// confidence between 0 and 1.
func ParseModelAnswer(raw []byte) (ModelAnswer, error) {
	var a struct {
		Action     *Action  `json:"action"`
		NextInput  *string  `json:"nextInput"`
		Reason     *string  `json:"reason"`
		Confidence *float64 `json:"confidence"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return ModelAnswer{}, fmt.Errorf("decoding decision model answer: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return ModelAnswer{}, errors.New("decoding decision model answer: trailing data after the object")
	}
	if a.Action == nil || a.NextInput == nil || a.Reason == nil || a.Confidence == nil {
		return ModelAnswer{}, errors.New("decision model answer: action, nextInput, reason and confidence are required")
	}
	if !validAction(*a.Action) {
		return ModelAnswer{}, fmt.Errorf("decision model answer: unknown action %q", *a.Action)
	}
	if c := *a.Confidence; math.IsNaN(c) || c < 0 || c > 1 {
		return ModelAnswer{}, fmt.Errorf("decision model answer: confidence %v outside [0, 1]", c)
	}
	return ModelAnswer{Action: *a.Action, NextInput: *a.NextInput, Reason: *a.Reason, Confidence: *a.Confidence}, nil
}

// Prompt limits: the model sees the recent past, clipped.
const (
	promptSteps        = 12
	promptMessageRunes = 2000
	promptResultRunes  = 200
	promptEarlierRunes = 160
	promptDecisions    = 5
)

// ModelPrompt renders in for the decision model: compact, and the same
// text for the same input. It ends with the policy's own proposal (Decide
// without a model answer), which the model may accept or replace.
func ModelPrompt(in Input) string {
	r := newRun(in)
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }

	line("objective: %s", in.Objective)
	line("spent: %s; run elapsed %s", r.spentLine(), formatMs(float64(in.RunElapsedMs)))

	t := in.Turn
	kind := t.Kind
	if kind == "" {
		kind = KindNormal
	}
	line("\nthis turn (%s, %s): %s", kind, t.Status, turnFacts(t))
	if t.Error != nil {
		line("error: %s (recoverable %t)", describeError(t.Error), t.Error.Recoverable)
	}
	if len(t.Plan) > 0 {
		line("plan:")
		for _, p := range t.Plan {
			line("  [%s] %s", planMark(p.Status), p.Step)
		}
	}
	if n := len(t.Steps); n > 0 {
		shown := t.Steps[max(0, n-promptSteps):]
		line("steps (last %d of %d; ! = error):", len(shown), n)
		for _, s := range shown {
			mark := " "
			if s.Error {
				mark = "!"
			}
			line("  %s %s => %s", mark, s.Action, clip(oneLine(s.Result), promptResultRunes))
		}
	}
	switch {
	case t.EmptyReply:
		line("agent message: (empty reply)")
	case t.AgentMessage != "":
		line("agent message:\n%s", clip(t.AgentMessage, promptMessageRunes))
	}

	if len(in.History) > 0 {
		line("\nearlier turns (oldest first):")
		for _, h := range in.History {
			line("  %s (%s): %s; agent: %q", h.TurnID, h.Status, turnFacts(h), clip(oneLine(h.AgentMessage), promptEarlierRunes))
		}
	}
	if n := len(in.Recent); n > 0 {
		var ds []string
		for _, d := range in.Recent[max(0, n-promptDecisions):] {
			ds = append(ds, string(d.Action)+" ("+d.Rule+")")
		}
		line("recent decisions (oldest first): %s", strings.Join(ds, ", "))
	}

	in.Model = nil
	p := Decide(in)
	line("\npolicy proposal: %s (rule %s, confidence %.2f): %s", p.Action, p.Rule, p.Confidence, p.Reason)
	if p.NextInput != "" {
		line("proposed next input:\n%s", p.NextInput)
	}
	return b.String()
}

func (r *run) spentLine() string {
	limits := map[string]budget{}
	for _, bu := range r.budgets() {
		limits[bu.rule] = bu
	}
	sp := r.in.Spent
	parts := []string{}
	for _, x := range []struct {
		name, rule string
		spent      float64
		fmt        func(float64) string
	}{
		{"tokens", ruleBudgetTokens, float64(sp.Tokens), formatCount},
		{"turns", ruleBudgetTurns, float64(sp.Turns), formatCount},
		{"time", ruleBudgetTime, float64(sp.TimeMs), formatMs},
		{"cost", ruleBudgetCost, sp.CostUSD, formatUSD},
	} {
		if bu, ok := limits[x.rule]; ok {
			parts = append(parts, x.name+" "+bu.used())
		} else {
			parts = append(parts, x.name+" "+x.fmt(x.spent)+" (no budget)")
		}
	}
	return strings.Join(parts, ", ")
}

func turnFacts(t TurnSummary) string {
	facts := []string{fmt.Sprintf("%d steps", len(t.Steps)), "checks " + checksWord(t.ChecksPassed)}
	if t.Kind == KindReview {
		facts = append(facts, "review "+verdictWord(t.ReviewApproved))
	}
	for _, f := range []struct {
		n    int
		name string
	}{
		{t.Compactions, "compactions"},
		{t.PendingApprovals, "pending approvals"},
		{t.PendingQuestions, "pending questions"},
	} {
		if f.n > 0 {
			facts = append(facts, fmt.Sprintf("%d %s", f.n, f.name))
		}
	}
	if t.WaitingOnProcess {
		facts = append(facts, "waiting on a running process")
	}
	return strings.Join(facts, ", ")
}

func checksWord(c *bool) string {
	switch {
	case c == nil:
		return "not run"
	case *c:
		return "passed"
	}
	return "failed"
}

func verdictWord(v *bool) string {
	switch {
	case v == nil:
		return "no verdict"
	case *v:
		return "approved"
	}
	return "changes requested"
}

func planMark(status string) string {
	switch status {
	case PlanCompleted:
		return "x"
	case PlanInProgress:
		return ">"
	}
	return " "
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
