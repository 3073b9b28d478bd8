package session

import (
	"context"

	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
)

// IntentRouter is the manager's intent from chat as the session sees it
// (docs/manager.md#intent-from-chat; projects.Service implements it, cmd
// wires it into Options.Intents).
type IntentRouter interface {
	// RouteIntent classifies a user message of a thread whose workspace is
	// cwd and acts on it (starts building a phase, pauses the autopilot…).
	// message, when not empty, is the manager's word to the thread (what
	// it did, or why it did nothing); answer reports whether the turn goes
	// on and the model answers the message (a question, anything the
	// manager does not act on, a workspace that is not a project). It may
	// ask a model: it is never called on a thread goroutine.
	RouteIntent(ctx context.Context, r IntentRequest) (message string, answer bool)
}

// IntentRequest is a user message to route: its thread, workspace, the
// thread's model (the classifier's unless [roles.intent] names one) and
// text.
type IntentRequest struct {
	ThreadID, Cwd, Model, Provider, Text string
}

// routeIntent runs before a turn's first model request (runTurn): a user
// message of a plain turn goes to the manager's router on a child
// goroutine; its message, if any, becomes an agent message of the turn,
// then the turn samples (answer) or completes. It reports whether it took
// the turn over.
func (t *thread) routeIntent(tr *turn, user userInput, auto *fullauto.TurnInput) bool {
	r := t.m.opts.Intents
	text := protocol.InputText(user.content)
	if r == nil || auto != nil || text == "" || tr.schema != nil || tr.readOnly || tr.kind != "" || t.autoRun().Active() {
		return false
	}
	req := IntentRequest{ThreadID: t.id, Cwd: t.settings.Cwd, Model: tr.modelName, Provider: t.settings.Provider, Text: text}
	ctx := tr.ctx
	go func() {
		msg, answer := r.RouteIntent(ctx, req)
		t.postEvent(ctx, func() {
			if t.turn != tr {
				return
			}
			if msg != "" {
				item := protocol.AgentMessageItem{ID: t.uniqueItemID(""), Text: msg}
				t.notify(protocol.NotifyItemStarted, protocol.ItemStartedNotification{Item: item, ThreadID: t.id, TurnID: tr.id, StartedAtMs: t.nowMs()})
				if err := t.commitItem(tr, item, []model.Entry{{Kind: model.EntryAssistant, Text: msg}}); err != nil {
					t.failTurn(tr, err)
					return
				}
			}
			if answer {
				t.sampleNext(tr)
				return
			}
			t.completeTurn(tr, protocol.TurnCompleted, nil)
		})
	}()
	return true
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
