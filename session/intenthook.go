package session

import (
	"context"
	"encoding/json"

	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/manager"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
)

// The router, its request and answer are the port's (projects answers
// them without importing session).
type (
	IntentRouter  = port.IntentRouter
	IntentRequest = port.IntentRequest
	IntentOutcome = port.IntentOutcome
	IntentConfirm = port.IntentConfirm
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
		Questions: manager.ConfirmQuestions(c.Question)}
	req := serverRequest{Method: protocol.RequestUserInput, Params: params, Kind: "question"}
	t.setStatus(protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{protocol.FlagWaitingOnUserInput}})
	t.sendRequest(tr, req, func(id int64, raw json.RawMessage, err error) {
		t.resolved(id)
		confirmed := err == nil && manager.Confirmed(raw)
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
