package session

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
)

// IntentRouter is the manager's intent from chat as the session sees it
// (docs/manager.md#intent-from-chat; projects.Service implements it, cmd
// wires it into Options.Intents).
type IntentRouter interface {
	// RouteIntent classifies a user message of a thread whose workspace is
	// cwd and acts on it (starts building a phase, pauses the autopilot…).
	// It may ask a model: it is never called on a thread goroutine.
	RouteIntent(ctx context.Context, r IntentRequest) IntentOutcome
}

// The router's request and answer are the port's (projects answers them
// without importing session).
type (
	IntentRequest = port.IntentRequest
	IntentOutcome = port.IntentOutcome
	IntentConfirm = port.IntentConfirm
)

// Confirmation answers: the option labels of the question.
const (
	IntentApply  = "Apply"
	IntentCancel = "Cancel"
)

// routeIntent runs before a turn's first model request (runTurn): a user
// message of a plain turn goes to the manager's router on a child
// goroutine; its message, if any, becomes an agent message of the turn,
// then the turn asks for a confirmation, samples (answer, or input
// steered meanwhile) or completes.
// It reports whether it took the turn over.
func (t *thread) routeIntent(tr *turn, user userInput, auto *fullauto.TurnInput) bool {
	r := t.m.opts.Intents
	text := protocol.InputText(user.content)
	if r == nil || auto != nil || text == "" || tr.schema != nil || tr.readOnly || tr.kind != "" || t.autoDrive().Active() {
		return false
	}
	req := IntentRequest{ThreadID: t.id, Cwd: t.settings.Cwd, Model: tr.modelName, Provider: t.settings.Provider, Text: text}
	ctx := tr.ctx
	go func() {
		out := r.RouteIntent(ctx, req)
		t.postEvent(ctx, func() {
			if t.turn != tr || !t.managerMessage(tr, out.Message) {
				return
			}
			switch {
			case out.Confirm != nil:
				t.confirmIntent(tr, *out.Confirm)
			case out.Answer || len(tr.pendingInput) > 0:
				t.afterCalls(tr) // the model answers (with input steered meanwhile)
			default:
				t.completeTurn(tr, protocol.TurnCompleted, nil)
			}
		})
	}()
	return true
}

// managerMessage adds the manager's message (if any) to the turn as an
// agent message; false when the turn failed.
func (t *thread) managerMessage(tr *turn, msg string) bool {
	if msg == "" {
		return true
	}
	item := protocol.AgentMessageItem{ID: t.uniqueItemID(""), Text: msg}
	t.notify(protocol.NotifyItemStarted, protocol.ItemStartedNotification{Item: item, ThreadID: t.id, TurnID: tr.id, StartedAtMs: t.nowMs()})
	if err := t.commitItem(tr, item, []model.Entry{{Kind: model.EntryAssistant, Text: msg}}); err != nil {
		t.failTurn(tr, err)
		return false
	}
	return true
}

// confirmIntent asks the user to confirm a change, applies the answer (on
// a child goroutine) and completes the turn with the manager's message.
func (t *thread) confirmIntent(tr *turn, c IntentConfirm) {
	params := protocol.ToolRequestUserInputParams{ThreadID: t.id, TurnID: tr.id, ItemID: t.uniqueItemID(""), IsBlocking: true,
		Questions: []protocol.UserInputQuestion{{ID: "confirm", Header: "Manager", Question: c.Question, Options: []protocol.UserInputOption{
			{Label: IntentApply, Description: "Make the change"}, {Label: IntentCancel, Description: "Leave the plan as it is"}}}}}
	req := serverRequest{Method: protocol.RequestUserInput, Params: params, Kind: "question"}
	t.setStatus(protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{protocol.FlagWaitingOnUserInput}})
	t.sendRequest(tr, req, func(id int64, raw json.RawMessage, err error) {
		t.resolved(id)
		confirmed := err == nil && confirmedIn(raw)
		ctx := tr.ctx
		go func() {
			msg := c.Apply(context.WithoutCancel(ctx), confirmed)
			t.postEvent(ctx, func() {
				switch {
				case t.turn != tr || !t.managerMessage(tr, msg):
				case len(tr.pendingInput) > 0:
					t.afterCalls(tr) // input steered meanwhile: the model answers it
				default:
					t.completeTurn(tr, protocol.TurnCompleted, nil)
				}
			})
		}()
	})
}

// confirmedIn reports whether a requestUserInput answer chose Apply.
func confirmedIn(raw json.RawMessage) bool {
	var a struct {
		Answers map[string]struct {
			Answers []string `json:"answers"`
		} `json:"answers"`
	}
	if json.Unmarshal(raw, &a) != nil {
		return false
	}
	return slices.Contains(a.Answers["confirm"].Answers, IntentApply)
}

// SetIntentRouter sets Options.Intents, for a Manager made before the
// manager's driver. Call it before serving.
func (m *Manager) SetIntentRouter(r IntentRouter) { m.opts.Intents = r }

// SetProjectAttention puts a project's manager wait (it) in the attention
// summary, or takes it out (nil): a suggestion to approve, a budget spent,
// a paused autopilot. Any goroutine may call it.
func (m *Manager) SetProjectAttention(cwd string, it *protocol.AttentionItem) {
	k := attnKey{thread: "project:" + cwd}
	if it == nil {
		m.fa.attn.clear(k)
		return
	}
	m.fa.attn.set(k, *it)
}
