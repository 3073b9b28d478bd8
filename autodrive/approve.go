package autodrive

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/internal/clock"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// Approvals under full auto. The ladder for a request the agent needs:
//
//  1. the rules (controller.Approve under the drive's strategy) accept or
//     decline it, or pass it on (AutoAnswer, fullauto RequestAsked);
//  2. when the config has a decision model and the strategy is not "ask",
//     the model answers it if it is confident enough (AnswerLater,
//     ModelMayAnswer, ModelAnsweredRequest);
//  3. the editor: the drive waits (state "waiting", an attention item); a
//     request no human answers within the drive's timeout is declined, and
//     the decision after the turn pauses or stops the drive
//     (RequestWait, Settle; RequestForwarded, RequestSettled).
//
// The machine decides and stores the receipts; this file does the I/O.

// ErrRequestTimeout is the cause of a request wait that timed out.
var ErrRequestTimeout = errors.New("no answer within the approval timeout")

// AutoAnswer is consulted before a server request of turn turnID goes to
// the client (rung 1). When it returns ok, raw is taken as the client's
// answer and the client never sees the request.
func (d *Drive) AutoAnswer(turnID string, req Request) (raw json.RawMessage, ok bool) {
	if req.Alignment != nil { // the project brain stopped it: a human's call
		return nil, false
	}
	var v fullauto.Verdict
	d.Do(fullauto.RequestAsked{TurnID: turnID, Key: req.Key(), Request: req.Approval()}, func(effs []fullauto.Effect) {
		v, _ = Answer[fullauto.Verdict](effs)
	})
	switch v.Outcome {
	case controller.OutcomeAccept:
		return DecisionJSON(protocol.DecisionAccept), true
	case controller.OutcomeDecline:
		return DecisionJSON(protocol.DecisionDecline), true
	}
	return nil, false
}

// AnswerLater is rung 2 of the ladder: the decision model answers a
// request the rules passed on, if it is confident enough; otherwise the
// request goes to the editor after all. It reports whether it took the
// request; later, on the thread goroutine and while current says the turn
// (whose context is ctx) still runs, answered gets the model's answer, or
// forward sends the request to the editor.
func (d *Drive) AnswerLater(ctx context.Context, turnID string, req Request, current func() bool, answered func(raw json.RawMessage), forward func()) bool {
	if req.Alignment != nil || d.env.DecisionModel() == nil {
		return false
	}
	var ask fullauto.AskAboutRequest
	var ok bool
	d.Do(fullauto.RequestPassedOn{Key: req.Key(), Request: req.Approval()}, func(effs []fullauto.Effect) {
		ask, ok = Answer[fullauto.AskAboutRequest](effs)
	})
	objective, in := ask.Objective, ask.Input
	dm := d.env.DecisionModel()
	if !ok || dm == nil || req.Alignment != nil {
		return false
	}
	go func() {
		ans, err := dm.Answer(ctx, objective, req)
		d.th.Post(ctx, func() {
			if !current() {
				return
			}
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			var v fullauto.Verdict
			d.Do(fullauto.ModelAnsweredRequest{TurnID: turnID, Input: in, Answer: fullauto.RequestAnswer{
				Outcome: ans.Outcome, Reason: ans.Reason, Confidence: ans.Confidence, Raw: RawJSON(ans.Raw),
			}, Err: msg}, func(effs []fullauto.Effect) { v, _ = Answer[fullauto.Verdict](effs) })
			if v.Outcome != controller.OutcomeForward {
				answered(ans.Answer)
				return
			}
			forward()
		})
	}()
	return true
}

// RequestWait is rung 3: the request of turn turnID went to the client as
// id; reason says what it waits for. It shows in attention; under a drive
// it is tracked (and stored, for a restart), the drive waits, and the wait
// times out after the drive's approval timeout. It returns how the
// request's wait context is derived from the turn's.
func (d *Drive) RequestWait(turnID string, req Request, reason string, id int64) func(context.Context) (context.Context, context.CancelFunc) {
	key := AttnKey{d.th.ID(), AttentionKind(req.Kind), id}
	d.env.Attention.Set(key, protocol.AttentionItem{ThreadID: d.th.ID(), Kind: key.Kind, Reason: reason, SinceMs: d.Now()})
	var timeoutMs int64
	d.Do(fullauto.RequestForwarded{TurnID: turnID, ID: id, Kind: req.Kind, Command: req.Command, Reason: reason}, func(effs []fullauto.Effect) {
		if tk, tracked := Answer[fullauto.Tracked](effs); tracked {
			timeoutMs = tk.TimeoutMs
			d.storePending(turnID, req, id) // before the run's effects
		}
	})
	timeout := time.Duration(timeoutMs) * time.Millisecond
	return func(ctx context.Context) (context.Context, context.CancelFunc) {
		wctx, cancel := context.WithCancelCause(ctx)
		var timer clock.Timer
		if timeout > 0 {
			timer = d.env.Clock.AfterFunc(timeout, func() { cancel(ErrRequestTimeout) })
		}
		return wctx, func() {
			if timer != nil {
				timer.Stop()
			}
			cancel(context.Canceled)
			d.env.Attention.Clear(key)
		}
	}
}

// Settle runs on the request's wait goroutine once the wait is over: a
// wait that timed out is answered here (an approval declined, a question
// unanswered), and the thread learns how the request ended. ctx is the
// turn's, wctx the wait's.
func (d *Drive) Settle(ctx, wctx context.Context, turnID, kind string, id int64, raw json.RawMessage, err error) (json.RawMessage, error) {
	timedOut := err != nil && ctx.Err() == nil && errors.Is(context.Cause(wctx), ErrRequestTimeout)
	if timedOut {
		if kind == "question" {
			raw, err = nil, ErrRequestTimeout
		} else {
			raw, err = DecisionJSON(protocol.DecisionDecline), nil
		}
	}
	if ctx.Err() != nil {
		// The turn ended (its end dropped the request) or the thread is
		// shutting down (the request stays stored for the next start).
		return raw, err
	}
	s := fullauto.Settled{TimedOut: timedOut, Declined: !timedOut && Declined(raw, err)}
	d.th.Post(ctx, func() { d.Do(fullauto.RequestSettled{TurnID: turnID, ID: id, Settled: s}, nil) })
	return raw, err
}

// storePending stores a request a drive waits on, for a restart.
func (d *Drive) storePending(turnID string, req Request, id int64) {
	if !d.th.Persistent() {
		return
	}
	params, err := json.Marshal(req.Params)
	resume, _ := json.Marshal(ResumeData{TurnID: turnID, Kind: req.Kind, Command: req.Command})
	if err == nil {
		var db *store.Store
		db, err = d.env.Store()
		if err == nil {
			err = db.PutPendingRequest(context.WithoutCancel(d.th.Context()), store.PendingRequest{ThreadID: d.th.ID(), RequestID: id,
				Method: req.Method, Params: params, Resume: resume})
		}
	}
	if err != nil {
		d.env.Log.Error("storing a pending request", "thread", d.th.ID(), "request", id, "err", err)
	}
}

// DropPending forgets a stored pending request.
func (d *Drive) DropPending(id int64) {
	if !d.th.Persistent() {
		return
	}
	if db, err := d.env.Store(); err == nil {
		if err := db.DeletePendingRequest(context.WithoutCancel(d.th.Context()), d.th.ID(), id); err != nil {
			d.env.Log.Error("deleting a pending request", "thread", d.th.ID(), "request", id, "err", err)
		}
	}
}
