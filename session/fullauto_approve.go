package session

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/apserver/apserver/autodrive"
	"github.com/apserver/apserver/brain"
	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/protocol"
)

// Approvals under full auto: the ladder (the rules, the decision model,
// the editor) is autodrive's (autodrive.Drive.AutoAnswer, AnswerLater,
// RequestWait, Settle); these are its entry points from the agent loop.

// approvalRequest is req as the rules read it.
func approvalRequest(req serverRequest) controller.ApprovalRequest {
	return req.Approval()
}

// autoAnswer is consulted before a server request goes to the client
// (rung 1). When it returns ok, raw is taken as the client's answer and
// the client never sees the request.
func (t *thread) autoAnswer(tr *turn, req serverRequest) (raw json.RawMessage, ok bool) {
	return t.autod().AutoAnswer(tr.id, req)
}

// answerLater is rung 2 of the ladder: the decision model may answer a
// request the rules passed on. It reports whether it took the request;
// onAnswer is then called later on the thread goroutine.
func (t *thread) answerLater(tr *turn, req serverRequest, onAnswer func(reqID int64, raw json.RawMessage, err error)) bool {
	return t.autod().AnswerLater(tr.ctx, tr.id, req, func() bool { return t.turn == tr }, func(raw json.RawMessage) {
		if len(t.status.ActiveFlags) > 0 {
			t.setStatus(protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{}})
		}
		onAnswer(-1, raw, nil)
	}, func() { t.sendRequest(tr, req, onAnswer) })
}

// requestWait is rung 3: the request went to the client as id. It returns
// how the request's wait context is derived from the turn's.
func (t *thread) requestWait(tr *turn, req serverRequest, id int64) func(context.Context) (context.Context, context.CancelFunc) {
	ar := req
	return t.autod().RequestWait(tr.id, ar, ar.Reason(brain.AlignmentReason), id)
}

// settleRequest runs on the request's wait goroutine once the wait is
// over (autodrive.Drive.Settle).
func (t *thread) settleRequest(ctx, wctx context.Context, tr *turn, req serverRequest, id int64, raw json.RawMessage, err error) (json.RawMessage, error) {
	return t.auto.d.Settle(ctx, wctx, tr.id, req.Kind, id, raw, err)
}

// attnKey names one attention item (autodrive.AttnKey).
type attnKey struct {
	thread string
	kind   protocol.AttentionKind
	req    int64
}

func (k attnKey) auto() autodrive.AttnKey {
	return autodrive.AttnKey{Thread: k.thread, Kind: k.kind, Req: k.req}
}

// attention is the Manager's attention summary (autodrive.Attention),
// sent to the Manager's client; made on first use.
type attention struct {
	m *Manager

	once sync.Once
	a    *autodrive.Attention
}

func (a *attention) summary() *autodrive.Attention {
	a.once.Do(func() { a.a = autodrive.NewAttention(a.m.notify) })
	return a.a
}

func (a *attention) set(k attnKey, it protocol.AttentionItem) { a.summary().Set(k.auto(), it) }
func (a *attention) clear(k attnKey)                          { a.summary().Clear(k.auto()) }
func (a *attention) snapshot() protocol.AttentionNotification { return a.summary().Snapshot() }
