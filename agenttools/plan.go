package agenttools

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/apserver/apserver/protocol"
)

// planArgs are update_plan's arguments.
type planArgs struct {
	Explanation string `json:"explanation"`
	Plan        []struct {
		Step   string `json:"step"`
		Status string `json:"status"`
	} `json:"plan"`
}

// ParsePlan reads update_plan's arguments: the explanation and the steps,
// each status pending, in_progress (or inProgress, in-progress) or
// completed, at most one in progress, no step empty. The error is what
// the model is told.
func ParsePlan(args string) (explanation string, steps []protocol.TurnPlanStep, err error) {
	var a planArgs
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		return "", nil, errors.New("update_plan: invalid arguments: " + err.Error())
	}
	steps = make([]protocol.TurnPlanStep, 0, len(a.Plan))
	inProgress := 0
	for i, s := range a.Plan {
		st := s.Status
		switch st {
		case "in_progress", "inProgress", "in-progress":
			st = "inProgress"
			inProgress++
		case "pending", "completed":
		default:
			return "", nil, fmt.Errorf("update_plan: plan[%d].status %q is not one of pending, in_progress, completed", i, s.Status)
		}
		if strings.TrimSpace(s.Step) == "" {
			return "", nil, fmt.Errorf("update_plan: plan[%d].step is empty", i)
		}
		steps = append(steps, protocol.TurnPlanStep{Step: s.Step, Status: st})
	}
	if inProgress > 1 {
		return "", nil, errors.New("update_plan: at most one step may be in_progress")
	}
	return a.Explanation, steps, nil
}

// PlanMarkdown is a plan as the plan item shows it: the explanation, then
// a checklist ([x] completed, [~] in progress).
func PlanMarkdown(explanation string, steps []protocol.TurnPlanStep) string {
	var b strings.Builder
	if explanation != "" {
		b.WriteString(explanation)
		b.WriteString("\n\n")
	}
	for _, s := range steps {
		mark := " "
		switch s.Status {
		case "completed":
			mark = "x"
		case "inProgress":
			mark = "~"
		}
		fmt.Fprintf(&b, "- [%s] %s\n", mark, s.Step)
	}
	return b.String()
}

// questionArgs are request_user_input's arguments.
type questionArgs struct {
	Questions []struct {
		ID       string `json:"id"`
		Header   string `json:"header"`
		Question string `json:"question"`
		Options  []struct {
			Label       string `json:"label"`
			Description string `json:"description"`
		} `json:"options"`
	} `json:"questions"`
}

// ParseQuestions reads request_user_input's arguments as the questions
// the client is asked (an id q1, q2, ... where the model gave none; an
// "other" answer always allowed). The error is what the model is told.
func ParseQuestions(args string) ([]protocol.UserInputQuestion, error) {
	var a questionArgs
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		return nil, errors.New("request_user_input: invalid arguments: " + err.Error())
	}
	if len(a.Questions) == 0 {
		return nil, errors.New("request_user_input: questions must not be empty")
	}
	var out []protocol.UserInputQuestion
	for i, q := range a.Questions {
		if q.ID == "" {
			q.ID = fmt.Sprintf("q%d", i+1)
		}
		uq := protocol.UserInputQuestion{ID: q.ID, Header: q.Header, Question: q.Question, IsOther: true, Options: []protocol.UserInputOption{}}
		for _, o := range q.Options {
			uq.Options = append(uq.Options, protocol.UserInputOption{Label: o.Label, Description: o.Description})
		}
		out = append(out, uq)
	}
	return out, nil
}
