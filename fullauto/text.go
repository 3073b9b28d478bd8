package fullauto

import (
	"fmt"
	"strconv"
	"strings"
)

// ContinueText is the hidden input of a turn that (re)starts a drive on an
// idle thread without a new user message.
func ContinueText(objective string) string {
	return "Continue working toward the objective:\n" + objective + "\n\n" +
		"When the objective is fully achieved and verified (tests pass), say \"The task is complete.\" " +
		"If you are blocked, say exactly what blocks you."
}

// RestartText is the hidden input of the turn a restarted drive goes on with.
func RestartText(objective string) string {
	return "apserver restarted while this run was in progress; the last turn was interrupted. " +
		"Check the state of the workspace, then continue working toward the objective:\n" + objective + "\n\n" +
		"When the objective is fully achieved and verified (tests pass), say \"The task is complete.\""
}

// FileChangeRestartText is the hidden input of the turn that follows the
// answer to a file-change approval sent before a restart.
func FileChangeRestartText(answer, objective string) string {
	return "apserver restarted while your file change waited for approval, so it was not applied. " +
		"The user's answer to it: " + answer + ". If it was accepted and is still needed, make the change again; otherwise go on without it.\n\n" +
		"Objective:\n" + objective
}

// GoalText is the hidden input of a goal's continuation turn, after Codex's.
func GoalText(r *Drive) string {
	var b strings.Builder
	b.WriteString("Continue working toward the active thread goal.\n\nObjective:\n")
	b.WriteString(r.Objective)
	if tb := r.Config.Budgets.Tokens; tb > 0 {
		b.WriteString("\n\nToken budget: ")
		b.WriteString(strconv.FormatInt(tb, 10))
		b.WriteString(", used: ")
		b.WriteString(strconv.FormatInt(r.Spent.Tokens, 10))
		b.WriteString(", remaining: ")
		b.WriteString(strconv.FormatInt(max(0, tb-r.Spent.Tokens), 10))
	}
	b.WriteString("\n\nBefore you say the objective is achieved, audit it against real evidence (tests, builds, the files themselves). " +
		"When it is fully achieved and verified, say \"The task is complete.\"")
	return b.String()
}

// WrapHidden marks hidden input as the drive's, not the user's, and numbers
// the drive's turns (the model can tell an automated continuation from a
// human; a scripted test model can match on the turn).
func WrapHidden(r *Drive, text string) string {
	n := 1
	if r != nil {
		n = r.Spent.Turns + 1
	}
	return fmt.Sprintf("<apserver_full_auto turn=\"%d\">\n%s\n</apserver_full_auto>", n, text)
}

// MaxBackoffMs caps the cooldown before a retry.
const MaxBackoffMs = 60_000

// Backoff is the cooldown in ms before the turn after the n-th failure in
// a row: baseMs, doubling per failure, up to MaxBackoffMs.
func Backoff(baseMs int64, n int) int64 {
	if baseMs <= 0 || n <= 0 {
		return 0
	}
	d := baseMs
	for i := 1; i < n && d < MaxBackoffMs; i++ {
		d *= 2
	}
	return min(d, MaxBackoffMs)
}
