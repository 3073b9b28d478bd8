package session

import (
	"context"

	"github.com/apserver/apserver/instructions"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
)

// review/start runs a code review as a turn of the thread (inline
// delivery, the only one in Codex 0.169), with the thread's model and our
// own review instructions. The turn is read-only like a plan-mode turn
// (planmode.go). In order: turn/started, enteredReviewMode (what is
// reviewed), the userMessage with the review request, the model's work,
// its agentMessage (the review), exitedReviewMode with the same text,
// turn/completed.

// StartReview implements review/start.
func (m *Manager) StartReview(ctx context.Context, p protocol.ReviewStartParams, reply Reply) {
	m.onThread(p.ThreadID, reply, func(t *thread) { t.startReview(p, reply) })
}

func (t *thread) startReview(p protocol.ReviewStartParams, reply Reply) {
	switch {
	case t.turn != nil:
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "a turn is in progress on thread %s; start the review when it ends", t.id))
		return
	case t.autoDrive().Active():
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "a full-auto run is active on thread %s; pause it first", t.id))
		return
	}
	prompt, hint := instructions.ReviewRequest(*p.Target)
	input := []protocol.UserInput{protocol.TextInput(prompt)}
	tr, err := t.beginTurn(protocol.TurnStartParams{ThreadID: t.id, Input: input})
	if err != nil {
		reply(nil, err)
		return
	}
	tr.readOnly, tr.review = true, hint
	tr.prompt += instructions.Review
	reply(protocol.ReviewStartResult{Turn: tr.wire(protocol.ItemsNotLoaded), ReviewThreadID: t.id}, nil)

	// As runTurn, with enteredReviewMode first. (Codex sends it before
	// turn/started; apserver keeps every item inside its turn.)
	t.setStatus(protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{}})
	started := tr.wire(protocol.ItemsNotLoaded)
	started.StartedAt = ptr(tr.started.Unix())
	t.notify(protocol.NotifyTurnStarted, protocol.TurnNotification{ThreadID: t.id, Turn: started})
	tr.histStart = len(t.history)
	entered := protocol.ReviewModeItem{ID: t.uniqueItemID(""), Review: hint}
	t.notify(protocol.NotifyItemStarted, protocol.ItemStartedNotification{Item: entered, ThreadID: t.id, TurnID: tr.id, StartedAtMs: t.m.clock.Now().UnixMilli()})
	if err := t.commitItem(tr, entered, nil); err != nil {
		t.failTurn(tr, err)
		return
	}
	if err := t.userMessage(tr, userInput{content: input}); err != nil {
		t.failTurn(tr, err)
		return
	}
	t.sample(tr)
}

// exitReview ends a review turn with exitedReviewMode carrying the review
// (the last agent message); it reports false when it failed the turn.
func (t *thread) exitReview(tr *turn) bool {
	text := ""
	if tr.lastAgent != nil {
		text = tr.lastAgent.Text
	}
	item := protocol.ReviewModeItem{ID: t.uniqueItemID(""), Review: text, Exited: true}
	t.notify(protocol.NotifyItemStarted, protocol.ItemStartedNotification{Item: item, ThreadID: t.id, TurnID: tr.id, StartedAtMs: t.m.clock.Now().UnixMilli()})
	if err := t.commitItem(tr, item, []model.Entry(nil)); err != nil {
		t.failTurn(tr, err)
		return false
	}
	return true
}
