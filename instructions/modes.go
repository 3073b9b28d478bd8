package instructions

import (
	"fmt"
	"strings"

	"github.com/apserver/apserver/protocol"
)

// The instructions of the read-only turns: a code review (review/start,
// session/review.go) and plan mode (Codex's collaboration mode "plan",
// session/planmode.go), and what is read back of a plan-mode answer.

// Review is added to the system prompt of a review turn.
const Review = `

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

// ReviewRequest is the user message of a review turn and the short
// description that enteredReviewMode carries.
func ReviewRequest(t protocol.ReviewTarget) (prompt, hint string) {
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

// Plan is added to the system prompt of a plan-mode turn.
const Plan = `

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

// ReadOnlyRefusal is what the model is told when a read-only turn refuses
// a command.
func ReadOnlyRefusal(escalated bool) string {
	if escalated {
		return "This turn is read-only (plan mode or a review): nothing runs outside the read-only sandbox. Run it without require_escalated, or leave the change for the plan."
	}
	return "This turn is read-only (plan mode or a review) and the sandbox cannot be enforced here, so only commands the rules allow run."
}

// ProposedPlan returns the text of the last <proposed_plan> block.
func ProposedPlan(text string) (string, bool) {
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
