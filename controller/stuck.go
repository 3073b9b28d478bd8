package controller

import (
	"fmt"
	"strings"
)

// Thresholds of the OpenHands stuck detector, which the step and message
// patterns follow.
const (
	sameActionResultTimes = 4  // same action and result
	sameActionErrorTimes  = 3  // same action, each time an error
	alternationSteps      = 6  // A-B-A-B-A-B
	sameMessageTimes      = 3  // same agent message, turns in a row
	emptyReplyTimes       = 3  // empty replies, turns in a row
	compactionStreak      = 10 // compactions with no step in between
)

// stuck is step 6. Step patterns only fire when the current turn took part
// in them (it ran at least one step), so an old loop cannot stop a run
// that a human resumed. A turn that ends waiting on a running process is
// polling it, which legitimately repeats the same call and result: the
// same-result and alternation patterns skip it (budgets still bound it).
func (r *run) stuck() (Decision, bool) {
	stop := func(cond StopCondition, rule string, conf float64, format string, args ...any) (Decision, bool) {
		return decision(ActStop, cond, rule, conf, fmt.Sprintf(format, args...)), true
	}
	t := r.in.Turn
	if len(t.Steps) > 0 {
		steps := r.steps()
		if s, ok := sameActionError(steps); ok {
			return stop(StopStuckLoop, ruleSameActionError, confStuck,
				"the same action failed %d times in a row: %s", sameActionErrorTimes, s.Action)
		}
		if !t.WaitingOnProcess {
			if s, ok := sameActionResult(steps); ok {
				return stop(StopStuckLoop, ruleSameActionResult, confStuck,
					"the same action gave the same result %d times in a row: %s", sameActionResultTimes, s.Action)
			}
			if a, b, ok := alternation(steps); ok {
				return stop(StopStuckLoop, ruleAlternation, confStuck,
					"the agent alternates between two actions: %s / %s", a.Action, b.Action)
			}
		}
	}
	if msg, ok := r.sameMessage(); ok {
		return stop(StopStuckLoop, ruleSameMessage, confStuck,
			"the agent said the same thing %d turns in a row: “%s”", sameMessageTimes, clip(oneLine(msg), 80))
	}
	if r.emptyReplies() {
		return stop(StopEmptyReplies, ruleEmptyReplies, confStuck,
			"%d empty replies in a row", emptyReplyTimes)
	}
	if n := r.compactionStreak(); n >= compactionStreak {
		return stop(StopCompactionThrash, ruleCompactionStreak, confThrash,
			"%d context compactions in a row without a single step", n)
	}
	if n := r.compactionsWithoutProgress(); n >= r.cfg.CompactionTimes {
		return stop(StopCompactionThrash, ruleCompactionNoProgress, confThrash,
			"%d context compactions without progress", n)
	}
	if sig, ok := r.repeatedError(); ok {
		return stop(StopRepeatedError, ruleRepeatedError, confStuck,
			"the same error ended %d turns in a row: %s", r.cfg.SameErrorTimes, clip(sig, 120))
	}
	return Decision{}, false
}

// steps flattens the steps of the run's turns, oldest first.
func (r *run) steps() []Step {
	var all []Step
	for _, t := range r.turns {
		all = append(all, t.Steps...)
	}
	return all
}

func sameActionError(steps []Step) (Step, bool) {
	tail, ok := lastN(steps, sameActionErrorTimes)
	if !ok {
		return Step{}, false
	}
	for _, s := range tail {
		if !s.Error || s.Tool != tail[0].Tool || s.Action != tail[0].Action {
			return Step{}, false
		}
	}
	return tail[0], true
}

func sameActionResult(steps []Step) (Step, bool) {
	tail, ok := lastN(steps, sameActionResultTimes)
	if !ok {
		return Step{}, false
	}
	for _, s := range tail[1:] {
		if s != tail[0] {
			return Step{}, false
		}
	}
	return tail[0], true
}

// alternation: the last six steps are A B A B A B with A != B, comparing
// action and result.
func alternation(steps []Step) (a, b Step, ok bool) {
	tail, ok := lastN(steps, alternationSteps)
	if !ok || tail[0] == tail[1] {
		return Step{}, Step{}, false
	}
	for i := 2; i < len(tail); i++ {
		if tail[i] != tail[i-2] {
			return Step{}, Step{}, false
		}
	}
	return tail[0], tail[1], true
}

func lastN[T any](s []T, n int) ([]T, bool) {
	if len(s) < n {
		return nil, false
	}
	return s[len(s)-n:], true
}

// sameMessage: the last turns' agent messages are equal, ignoring case and
// spacing. Empty replies and empty messages never match.
func (r *run) sameMessage() (string, bool) {
	tail, ok := lastN(r.turns, sameMessageTimes)
	if !ok {
		return "", false
	}
	first := normalizeText(tail[0].AgentMessage)
	if first == "" {
		return "", false
	}
	for _, t := range tail {
		if t.EmptyReply || normalizeText(t.AgentMessage) != first {
			return "", false
		}
	}
	return tail[len(tail)-1].AgentMessage, true
}

func (r *run) emptyReplies() bool {
	tail, ok := lastN(r.turns, emptyReplyTimes)
	if !ok {
		return false
	}
	for _, t := range tail {
		if !t.EmptyReply {
			return false
		}
	}
	return true
}

// compactionStreak sums the compactions of the trailing turns that ran no
// step at all: compactions back to back, nothing done in between.
func (r *run) compactionStreak() int {
	n := 0
	for i := len(r.turns) - 1; i >= 0 && len(r.turns[i].Steps) == 0; i-- {
		n += r.turns[i].Compactions
	}
	return n
}

// compactionsWithoutProgress sums the compactions of the trailing turns
// that made no progress.
func (r *run) compactionsWithoutProgress() int {
	n := 0
	for _, t := range r.noProgressRun() {
		n += t.Compactions
	}
	return n
}

// progressKey fingerprints what a turn achieved: the workspace, the plan
// and the normalized results of its steps. Equal keys on consecutive turns
// mean the later turn made no progress.
func progressKey(t TurnSummary) string {
	var b strings.Builder
	b.WriteString(stateKey(t))
	for _, p := range t.Plan {
		fmt.Fprintf(&b, "\x00plan\x1f%s\x1f%s", p.Step, p.Status)
	}
	for _, s := range t.Steps {
		fmt.Fprintf(&b, "\x00step\x1f%s\x1f%s\x1f%s\x1f%t", s.Tool, s.Action, s.Result, s.Error)
	}
	return b.String()
}

// countsForProgress: turns that wait on a running process and review turns
// (which must not change anything) neither show nor break a lack of
// progress.
func countsForProgress(t TurnSummary) bool { return !t.WaitingOnProcess && t.Kind != KindReview }

// noProgressRun returns the trailing turns, newest first, that each left
// the progress key of the counted turn before them unchanged. It is empty
// when the current turn does not count.
func (r *run) noProgressRun() []TurnSummary {
	var counted []TurnSummary
	for _, t := range r.turns {
		if countsForProgress(t) {
			counted = append(counted, t)
		}
	}
	if len(counted) == 0 || !countsForProgress(r.in.Turn) {
		return nil
	}
	var run []TurnSummary
	for i := len(counted) - 1; i > 0 && progressKey(counted[i]) == progressKey(counted[i-1]); i-- {
		run = append(run, counted[i])
	}
	return run
}

// errorSignature is the error a turn ended on: its own failure, or the last
// failed step whose action did not succeed later in the turn. "" when the
// turn ended clean.
func errorSignature(t TurnSummary) string {
	if t.Error != nil {
		return "turn: " + describeError(t.Error)
	}
	var sig, action string
	for _, s := range t.Steps {
		switch {
		case s.Error:
			sig, action = s.Action+" => "+s.Result, s.Action
		case s.Action == action:
			sig, action = "", ""
		}
	}
	return sig
}

// repeatedError: the same error ended the last SameErrorTimes turns.
func (r *run) repeatedError() (string, bool) {
	tail, ok := lastN(r.turns, r.cfg.SameErrorTimes)
	if !ok {
		return "", false
	}
	sig := errorSignature(tail[0])
	if sig == "" {
		return "", false
	}
	for _, t := range tail[1:] {
		if errorSignature(t) != sig {
			return "", false
		}
	}
	return sig, true
}
