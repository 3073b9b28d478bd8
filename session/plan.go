package session

import (
	"encoding/json"

	"github.com/apserver/apserver/agenttools"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
)

// runPlanCall handles update_plan: the plan becomes the turn's plan, sent
// as turn/plan/updated, and is recorded as a plan item (a markdown
// checklist) so that thread/read shows how it evolved.
func (t *thread) runPlanCall(tr *turn, call model.ToolCall) {
	explanation, steps, err := agenttools.ParsePlan(call.Arguments)
	if err != nil {
		t.toolError(tr, call, err.Error())
		return
	}
	tr.plan = steps
	n := protocol.TurnPlanUpdatedNotification{ThreadID: t.id, TurnID: tr.id, Plan: steps}
	if explanation != "" {
		n.Explanation = ptr(explanation)
	}
	t.notify(protocol.NotifyTurnPlanUpdated, n)
	item := protocol.PlanItem{ID: t.uniqueItemID(call.CallID), Text: agenttools.PlanMarkdown(explanation, steps)}
	t.notifyItemStarted(tr, item)
	if err := t.commitItem(tr, item, agenttools.CallHistory(call, "Plan updated")); err != nil {
		t.failTurn(tr, err)
		return
	}
	t.runNextCall(tr)
}

// runQuestionCall handles request_user_input: item/tool/requestUserInput
// goes to the client (no item, as in Codex), the turn waits, and the
// answer JSON goes back to the model as the tool's output.
func (t *thread) runQuestionCall(tr *turn, call model.ToolCall) {
	questions, err := agenttools.ParseQuestions(call.Arguments)
	if err != nil {
		t.toolError(tr, call, err.Error())
		return
	}
	params := protocol.ToolRequestUserInputParams{ThreadID: t.id, TurnID: tr.id, ItemID: t.uniqueItemID(call.CallID), IsBlocking: true, Questions: questions}
	req := serverRequest{Method: protocol.RequestUserInput, Params: params, Kind: "question"}
	answer := func(id int64, raw json.RawMessage, err error) {
		t.resolved(id)
		out := string(raw)
		if err != nil {
			out = "request_user_input: the user did not answer: " + err.Error()
		}
		t.history = append(t.history, agenttools.CallHistory(call, out)...)
		t.runNextCall(tr)
	}
	if raw, ok := t.autoAnswer(tr, req); ok {
		answer(-1, raw, nil)
		return
	}
	t.setStatus(protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{protocol.FlagWaitingOnUserInput}})
	t.sendRequest(tr, req, answer)
}
