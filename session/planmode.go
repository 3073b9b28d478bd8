package session

import (
	"strings"

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

// planInstructions are added to the system prompt of a plan-mode turn.
const planInstructions = `

# Plan mode

You are in plan mode: plan the work, do not do it. You cannot change files
in this turn: the file-editing tools are off and commands run in a read-only
sandbox. Read the code and run read-only commands to understand the task,
and ask the user (request_user_input) when a decision is theirs. When you
know enough, answer with the plan: concrete steps, the files each one
touches, and how the result will be checked. Put the final plan in one
block:

<proposed_plan>
1. …
</proposed_plan>

The user will switch to the default mode to have it carried out.`

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
		if !toolOff(off, n) {
			if off != "" {
				off += ","
			}
			off += n
		}
	}
	return off
}

// readOnlyRefusal is what the model is told when a read-only turn refuses
// a command.
func readOnlyRefusal(escalated bool) string {
	if escalated {
		return "This turn is read-only (plan mode or a review): nothing runs outside the read-only sandbox. Run it without require_escalated, or leave the change for the plan."
	}
	return "This turn is read-only (plan mode or a review) and the sandbox cannot be enforced here, so only commands the rules allow run."
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
	tr.prompt += planInstructions
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
		plan, ok := proposedPlan(tr.lastAgent.Text)
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

// proposedPlan returns the text of the last <proposed_plan> block.
func proposedPlan(text string) (string, bool) {
	i := strings.LastIndex(text, "<proposed_plan>")
	if i < 0 {
		return "", false
	}
	rest := text[i+len("<proposed_plan>"):]
	if j := strings.Index(rest, "</proposed_plan>"); j >= 0 {
		rest = rest[:j]
	}
	plan := strings.TrimSpace(rest)
	return plan, plan != ""
}
