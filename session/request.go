package session

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/apserver/apserver/autodrive"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
)

// serverRequest is a request the thread is about to send to the client: an
// approval (command or file change) or a question for the user (its fields:
// autodrive.Request, which full auto reads).
type serverRequest = autodrive.Request

// sendRequest asks the client and calls onAnswer on the thread goroutine
// with the raw result (or the error) once it arrives. reqID is -1 when the
// request was answered without the client (full auto's decision model); in
// that case the client never saw it and no serverRequest/resolved is due.
// Callers consult autoAnswer first: a request it answers is never sent.
//
// The request is tracked on the turn so that ending the turn resolves it
// (protocol/codex/CORE.md §8: serverRequest/resolved after turn/completed).
func (t *thread) sendRequest(tr *turn, req serverRequest, onAnswer func(reqID int64, raw json.RawMessage, err error)) {
	if t.answerLater(tr, req, onAnswer) { // full auto: the decision model may answer (fullauto_approve.go)
		return
	}
	call := t.m.client.Call(req.Method, req.Params)
	id := call.ID()
	tr.requests = append(tr.requests, id)
	ctx := tr.ctx
	wait := t.requestWait(tr, req, id)
	// The thread port may answer instead of the client (threads.go): its
	// answer ends the wait for the client's.
	pctx, pcancel := context.WithCancel(ctx)
	pa := portAnswer{answer: make(chan json.RawMessage, 1), cancel: pcancel, done: pctx.Done()}
	t.portAnswers[id] = pa
	t.m.watchers.publish(port.RequestAsked{ThreadID: t.id, TurnID: tr.id, RequestID: id, Method: req.Method, Params: req.Params})
	go func() {
		wctx, cancel := wait(pctx)
		raw, err := call.Wait(wctx)
		select {
		case a := <-pa.answer:
			raw, err = a, nil
		default:
		}
		raw, err = t.settleRequest(ctx, wctx, tr, req, id, raw, err) // full auto: timeouts (fullauto_approve.go)
		cancel()
		pcancel()
		t.postEvent(ctx, func() {
			delete(t.portAnswers, id)
			if t.turn != tr {
				return
			}
			tr.dropRequest(id)
			if errors.Is(err, ErrNoClient) { // the input ended (drain.go)
				t.noClient(tr, req, id, onAnswer)
				return
			}
			onAnswer(id, raw, err)
		})
	}()
}

// resolved tells the client a request it saw is settled, and clears the
// waiting flag.
func (t *thread) resolved(reqID int64) {
	if reqID < 0 {
		return
	}
	t.notify(protocol.NotifyServerRequestResolved, protocol.ServerRequestResolvedNotification{ThreadID: t.id, RequestID: reqID})
	t.setStatus(protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{}})
}

// approvalAnswer reads the client's answer to an approval request; an
// error reply or an answer that is not a known decision is an error.
func approvalAnswer(raw json.RawMessage, callErr error) (protocol.ApprovalDecision, error) {
	if callErr != nil {
		return protocol.ApprovalDecision{}, callErr
	}
	return protocol.ParseApprovalResponse(raw)
}
