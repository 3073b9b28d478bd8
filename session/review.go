package session

import (
	"context"
	"fmt"

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

// reviewInstructions are added to the system prompt of a review turn.
const reviewInstructions = `

# Code review

You are reviewing changes, not making them: this turn is read-only (no
file tools; commands run in a read-only sandbox). Look at the changes with
read-only commands (git status, git diff, git show, git log, reading the
files around them) and judge them as a careful senior reviewer would.

Report only problems the changes introduce, most serious first, each as:

- [P0..P3] path:line: what is wrong, why it matters (the input or state
  that breaks it), and the fix.

P0 breaks the build, loses data or opens a hole; P1 is a bug users will
hit; P2 a bug in a corner or a missing test for changed behaviour; P3 a
clarity or maintenance issue worth the author's time. No praise, no
restating the diff, no style nits a formatter would settle. If there is
nothing worth reporting, say so. End with one line: "Verdict: the changes
are correct" or "Verdict: the changes are incorrect", and why in one
sentence.`

// reviewRequest is the user message of a review turn and the short
// description that enteredReviewMode carries.
func reviewRequest(t protocol.ReviewTarget) (prompt, hint string) {
	switch t.Type {
	case "uncommittedChanges":
		return "Review the uncommitted changes in this repository: staged, unstaged and untracked files (git status, git diff HEAD, and read the untracked files).",
			"current changes"
	case "baseBranch":
		return fmt.Sprintf("Review the changes of the current branch against the base branch %q: find the merge base (git merge-base HEAD %q) and review git diff from it to the working tree.", t.Branch, t.Branch),
			fmt.Sprintf("changes against '%s'", t.Branch)
	case "commit":
		hint := "commit " + shortSHA(t.SHA)
		title := ""
		if t.Title != nil && *t.Title != "" {
			hint += ": " + *t.Title
			title = fmt.Sprintf(" (%q)", *t.Title)
		}
		return fmt.Sprintf("Review the changes introduced by commit %s%s: git show %s.", t.SHA, title, t.SHA), hint
	default: // custom
		return t.Instructions, t.Instructions
	}
}

func shortSHA(s string) string {
	if len(s) > 7 {
		return s[:7]
	}
	return s
}

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
	prompt, hint := reviewRequest(*p.Target)
	input := []protocol.UserInput{protocol.TextInput(prompt)}
	tr, err := t.beginTurn(protocol.TurnStartParams{ThreadID: t.id, Input: input})
	if err != nil {
		reply(nil, err)
		return
	}
	tr.readOnly, tr.review = true, hint
	tr.prompt += reviewInstructions
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
