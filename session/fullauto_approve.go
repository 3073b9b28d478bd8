package session

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/apserver/apserver/autodrive"
	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// Approvals under full auto. The ladder for a request the agent needs:
//
//  1. the rules (controller.Approve under the drive's strategy) accept or
//     decline it, or pass it on (autoAnswer, fullauto RequestAsked);
//  2. when the config has a decision model and the strategy is not "ask",
//     the model answers it if it is confident enough (answerLater,
//     ModelMayAnswer, ModelAnsweredRequest);
//  3. the editor: the drive waits (state "waiting", an attention item); a
//     request no human answers within the drive's timeout is declined, and
//     the decision after the turn pauses or stops the drive
//     (requestWait, settleRequest; RequestForwarded, RequestSettled).
//
// The machine decides and stores the receipts; this file does the I/O.

// autoRequest is req as package autodrive reads it.
func autoRequest(req serverRequest) autodrive.Request { return autodrive.Request(req) }

// approvalRequest is req as the rules read it.
func approvalRequest(req serverRequest) controller.ApprovalRequest {
	return autoRequest(req).Approval()
}

// errRequestTimeout is the cause of a request wait that timed out.
var errRequestTimeout = errors.New("no answer within the approval timeout")

// autoAnswer is consulted before a server request goes to the client
// (rung 1). When it returns ok, raw is taken as the client's answer and
// the client never sees the request.
func (t *thread) autoAnswer(tr *turn, req serverRequest) (raw json.RawMessage, ok bool) {
	if req.Alignment != nil { // the project brain stopped it: a human's call
		return nil, false
	}
	var v fullauto.Verdict
	t.drive(fullauto.RequestAsked{TurnID: tr.id, Key: autoRequest(req).Key(), Request: autoRequest(req).Approval()}, func(effs []fullauto.Effect) {
		v, _ = answer[fullauto.Verdict](effs)
	})
	switch v.Outcome {
	case controller.OutcomeAccept:
		return autodrive.DecisionJSON(protocol.DecisionAccept), true
	case controller.OutcomeDecline:
		return autodrive.DecisionJSON(protocol.DecisionDecline), true
	}
	return nil, false
}

// answerLater is rung 2 of the ladder: the decision model answers a
// request the rules passed on, if it is confident enough; otherwise the
// request goes to the editor after all. It reports whether it took the
// request; onAnswer is then called later on the thread goroutine.
func (t *thread) answerLater(tr *turn, req serverRequest, onAnswer func(reqID int64, raw json.RawMessage, err error)) bool {
	if req.Alignment != nil || t.m.decisionModel() == nil {
		return false
	}
	var ask fullauto.AskAboutRequest
	var ok bool
	t.drive(fullauto.RequestPassedOn{Key: autoRequest(req).Key(), Request: autoRequest(req).Approval()}, func(effs []fullauto.Effect) {
		ask, ok = answer[fullauto.AskAboutRequest](effs)
	})
	objective, in := ask.Objective, ask.Input
	dm := t.m.decisionModel()
	if !ok || dm == nil || req.Alignment != nil {
		return false
	}
	ctx := tr.ctx
	go func() {
		ans, err := dm.Answer(ctx, objective, autoRequest(req))
		t.postEvent(ctx, func() {
			if t.turn != tr {
				return
			}
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			var v fullauto.Verdict
			t.drive(fullauto.ModelAnsweredRequest{TurnID: tr.id, Input: in, Answer: fullauto.RequestAnswer{
				Outcome: ans.Outcome, Reason: ans.Reason, Confidence: ans.Confidence, Raw: autodrive.RawJSON(ans.Raw),
			}, Err: msg}, func(effs []fullauto.Effect) { v, _ = answer[fullauto.Verdict](effs) })
			if v.Outcome != controller.OutcomeForward {
				if len(t.status.ActiveFlags) > 0 {
					t.setStatus(protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{}})
				}
				onAnswer(-1, ans.Answer, nil)
				return
			}
			t.sendRequest(tr, req, onAnswer)
		})
	}()
	return true
}

// requestWait is rung 3: the request went to the client as id. It shows in
// attention; under a drive it is tracked (and stored, for a restart), the
// drive waits, and the wait times out after the drive's approval timeout. It
// returns how the request's wait context is derived from the turn's.
func (t *thread) requestWait(tr *turn, req serverRequest, id int64) func(context.Context) (context.Context, context.CancelFunc) {
	key := attnKey{t.id, autodrive.AttentionKind(req.Kind), id}
	t.m.fa.attn.set(key, protocol.AttentionItem{ThreadID: t.id, Kind: key.kind, Reason: autoRequest(req).Reason(alignmentReason), SinceMs: t.nowMs()})
	var timeoutMs int64
	t.drive(fullauto.RequestForwarded{TurnID: tr.id, ID: id, Kind: req.Kind, Command: req.Command, Reason: autoRequest(req).Reason(alignmentReason)}, func(effs []fullauto.Effect) {
		if tk, tracked := answer[fullauto.Tracked](effs); tracked {
			timeoutMs = tk.TimeoutMs
			t.storePending(tr, req, id) // before the run's effects
		}
	})
	timeout := time.Duration(timeoutMs) * time.Millisecond
	return func(ctx context.Context) (context.Context, context.CancelFunc) {
		wctx, cancel := context.WithCancelCause(ctx)
		var timer Timer
		if timeout > 0 {
			timer = t.m.clock.AfterFunc(timeout, func() { cancel(errRequestTimeout) })
		}
		return wctx, func() {
			if timer != nil {
				timer.Stop()
			}
			cancel(context.Canceled)
			t.m.fa.attn.clear(key)
		}
	}
}

// storePending stores a request a drive waits on, for a restart.
func (t *thread) storePending(tr *turn, req serverRequest, id int64) {
	if !t.persistent() {
		return
	}
	params, err := json.Marshal(req.Params)
	resume, _ := json.Marshal(autodrive.ResumeData{TurnID: tr.id, Kind: req.Kind, Command: req.Command})
	if err == nil {
		var db *store.Store
		db, err = t.m.store()
		if err == nil {
			err = db.PutPendingRequest(context.WithoutCancel(t.ctx), store.PendingRequest{ThreadID: t.id, RequestID: id,
				Method: req.Method, Params: params, Resume: resume})
		}
	}
	if err != nil {
		t.m.log.Error("storing a pending request", "thread", t.id, "request", id, "err", err)
	}
}

// dropPending forgets a stored pending request.
func (t *thread) dropPending(id int64) {
	if !t.persistent() {
		return
	}
	if db, err := t.m.store(); err == nil {
		if err := db.DeletePendingRequest(context.WithoutCancel(t.ctx), t.id, id); err != nil {
			t.m.log.Error("deleting a pending request", "thread", t.id, "request", id, "err", err)
		}
	}
}

// settleRequest runs on the request's wait goroutine once the wait is
// over: a wait that timed out is answered here (an approval declined, a
// question unanswered), and the thread learns how the request ended.
func (t *thread) settleRequest(ctx, wctx context.Context, tr *turn, req serverRequest, id int64, raw json.RawMessage, err error) (json.RawMessage, error) {
	timedOut := err != nil && ctx.Err() == nil && errors.Is(context.Cause(wctx), errRequestTimeout)
	if timedOut {
		if req.Kind == "question" {
			raw, err = nil, errRequestTimeout
		} else {
			raw, err = autodrive.DecisionJSON(protocol.DecisionDecline), nil
		}
	}
	if ctx.Err() != nil {
		// The turn ended (its end dropped the request) or the thread is
		// shutting down (the request stays stored for the next start).
		return raw, err
	}
	s := fullauto.Settled{TimedOut: timedOut, Declined: !timedOut && autodrive.Declined(raw, err)}
	t.postEvent(ctx, func() { t.drive(fullauto.RequestSettled{TurnID: tr.id, ID: id, Settled: s}, nil) })
	return raw, err
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
