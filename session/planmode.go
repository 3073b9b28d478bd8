package session

import (
	"github.com/apserver/apserver/agenttools"
	"github.com/apserver/apserver/instructions"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
)

// Plan mode (Codex's collaboration mode "plan", Shift+Tab in its TUI): the
// model explores and plans but changes nothing. A plan-mode turn is
// read-only: the file tools are not offered (nor run if called anyway),
// apply_patch through a command is not applied, and commands run only in
// the read-only sandbox (no escalation; where the kernel cannot enforce it,
// only commands the rules allow run). The model is told it is planning and
// ends with its plan in a <proposed_plan> block, which becomes a "plan"
// item when the turn completes. Review turns (review.go) are read-only the
// same way.

// readOnlyTools are the tools a read-only turn does not offer.
var readOnlyTools = []string{toolApplyPatch, "edit_file", "write_file"}

// readOnlyTurn reports whether the active turn may not change anything.
func (t *thread) readOnlyTurn() bool { return t.turn != nil && t.turn.readOnly }

// disabledTools are the tools off for the active turn: the thread's
// (configtools.go) and, in a read-only turn, the file-changing ones.
func (t *thread) disabledTools() string {
	off := t.settings.DisabledTools
	if !t.readOnlyTurn() {
		return off
	}
	for _, n := range readOnlyTools {
		if !agenttools.Off(off, n) {
			if off != "" {
				off += ","
			}
			off += n
		}
	}
	return off
}

// applyMode records turn/start's collaborationMode on the thread (it
// sticks, like the turn's other settings) and makes the turn a plan-mode
// turn when the thread is in plan mode.
func (t *thread) applyMode(tr *turn, cm *protocol.CollaborationMode) {
	if cm != nil && cm.Mode != t.settings.Mode && !(cm.Mode == protocol.ModeDefault && t.settings.Mode == "") {
		t.settings.Mode = cm.Mode
		if cm.Mode == protocol.ModeDefault {
			t.settings.Mode = ""
		}
		if err := t.saveMeta(); err != nil {
			t.m.log.Warn("saving the collaboration mode", "thread", t.id, "err", err)
		}
	}
	if t.settings.Mode != protocol.ModePlan {
		return
	}
	tr.readOnly = true
	tr.prompt += instructions.Plan
	if cm != nil && cm.Settings.DeveloperInstructions != nil && *cm.Settings.DeveloperInstructions != "" {
		tr.prompt += "\n\n" + *cm.Settings.DeveloperInstructions
	}
}

// finishModeTurn runs as a completed turn ends: a plan-mode turn's
// <proposed_plan> becomes a plan item; a review turn gets its
// exitedReviewMode item (review.go). It reports false when it failed the
// turn instead.
func (t *thread) finishModeTurn(tr *turn) bool {
	switch {
	case tr.review != "":
		return t.exitReview(tr)
	case tr.readOnly && tr.lastAgent != nil:
		plan, ok := instructions.ProposedPlan(tr.lastAgent.Text)
		if !ok {
			return true
		}
		item := protocol.PlanItem{ID: t.uniqueItemID(""), Text: plan}
		t.notify(protocol.NotifyItemStarted, protocol.ItemStartedNotification{Item: item, ThreadID: t.id, TurnID: tr.id, StartedAtMs: t.m.clock.Now().UnixMilli()})
		if err := t.commitItem(tr, item, []model.Entry(nil)); err != nil {
			t.failTurn(tr, err)
			return false
		}
	}
	return true
}
