package session

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apserver/apserver/model"
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

// runPlanCall handles update_plan: the plan becomes the turn's plan, sent
// as turn/plan/updated, and is recorded as a plan item (a markdown
// checklist) so that thread/read shows how it evolved.
func (t *thread) runPlanCall(tr *turn, call model.ToolCall) {
	var a planArgs
	if err := json.Unmarshal([]byte(call.Arguments), &a); err != nil {
		t.toolError(tr, call, "update_plan: invalid arguments: "+err.Error())
		return
	}
	steps := make([]protocol.TurnPlanStep, 0, len(a.Plan))
	inProgress := 0
	for i, s := range a.Plan {
		st := s.Status
		switch st {
		case "in_progress", "inProgress", "in-progress":
			st = "inProgress"
			inProgress++
		case "pending", "completed":
		default:
			t.toolError(tr, call, fmt.Sprintf("update_plan: plan[%d].status %q is not one of pending, in_progress, completed", i, s.Status))
			return
		}
		if strings.TrimSpace(s.Step) == "" {
			t.toolError(tr, call, fmt.Sprintf("update_plan: plan[%d].step is empty", i))
			return
		}
		steps = append(steps, protocol.TurnPlanStep{Step: s.Step, Status: st})
	}
	if inProgress > 1 {
		t.toolError(tr, call, "update_plan: at most one step may be in_progress")
		return
	}
	tr.plan = steps
	n := protocol.TurnPlanUpdatedNotification{ThreadID: t.id, TurnID: tr.id, Plan: steps}
	if a.Explanation != "" {
		n.Explanation = ptr(a.Explanation)
	}
	t.notify(protocol.NotifyTurnPlanUpdated, n)
	item := protocol.PlanItem{ID: t.uniqueItemID(call.CallID), Text: planMarkdown(a.Explanation, steps)}
	t.notifyItemStarted(tr, item)
	if err := t.commitItem(tr, item, callHistory(call, "Plan updated")); err != nil {
		t.failTurn(tr, err)
		return
	}
	t.runNextCall(tr)
}

func planMarkdown(explanation string, steps []protocol.TurnPlanStep) string {
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

// runQuestionCall handles request_user_input: item/tool/requestUserInput
// goes to the client (no item, as in Codex), the turn waits, and the
// answer JSON goes back to the model as the tool's output.
func (t *thread) runQuestionCall(tr *turn, call model.ToolCall) {
	var a questionArgs
	if err := json.Unmarshal([]byte(call.Arguments), &a); err != nil {
		t.toolError(tr, call, "request_user_input: invalid arguments: "+err.Error())
		return
	}
	if len(a.Questions) == 0 {
		t.toolError(tr, call, "request_user_input: questions must not be empty")
		return
	}
	params := protocol.ToolRequestUserInputParams{ThreadID: t.id, TurnID: tr.id, ItemID: t.uniqueItemID(call.CallID), IsBlocking: true}
	for i, q := range a.Questions {
		if q.ID == "" {
			q.ID = fmt.Sprintf("q%d", i+1)
		}
		uq := protocol.UserInputQuestion{ID: q.ID, Header: q.Header, Question: q.Question, IsOther: true, Options: []protocol.UserInputOption{}}
		for _, o := range q.Options {
			uq.Options = append(uq.Options, protocol.UserInputOption{Label: o.Label, Description: o.Description})
		}
		params.Questions = append(params.Questions, uq)
	}
	req := serverRequest{Method: protocol.RequestUserInput, Params: params, Kind: "question"}
	answer := func(id int64, raw json.RawMessage, err error) {
		t.resolved(id)
		out := string(raw)
		if err != nil {
			out = "request_user_input: the user did not answer: " + err.Error()
		}
		t.history = append(t.history, callHistory(call, out)...)
		t.runNextCall(tr)
	}
	if raw, ok := t.autoAnswer(tr, req); ok {
		answer(-1, raw, nil)
		return
	}
	t.setStatus(protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{protocol.FlagWaitingOnUserInput}})
	t.sendRequest(tr, req, answer)
}
