package session

import (
	"context"
	"encoding/json"

	"github.com/apserver/apserver/protocol"
)

// The hooks in this file are where full auto plugs into the agent loop
// (fullauto*.go, goal.go). They run on the thread goroutine unless noted.

// autoAnswer is consulted before a server request goes to the client. When
// it returns ok, raw is taken as the client's answer and the client never
// sees the request.
func (t *thread) autoAnswer(tr *turn, req serverRequest) (raw json.RawMessage, ok bool) {
	return t.autoAnswerRun(tr, req)
}

// requestWait runs when request id has gone to the client; it returns how
// the request's wait context is derived from the turn's (full auto adds a
// timeout there).
func (t *thread) requestWait(tr *turn, req serverRequest, id int64) func(context.Context) (context.Context, context.CancelFunc) {
	return t.requestWaitRun(tr, req, id)
}

// turnEnded runs right after turn/completed has been sent for tr.
func (t *thread) turnEnded(tr *turn, status string, te *protocol.TurnError) {
	t.auto.forwarded = ""
	t.auto.modelAsked = nil
	t.runTurnEnded(tr, status, te)
}
