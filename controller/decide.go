package controller

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Rule ids. doc.go documents each one; receipts store them.
const (
	ruleUserStop             = "userStop"
	ruleFailedUnrecoverable  = "failed.unrecoverable"
	ruleRetry                = "retry"
	ruleRetryExhausted       = "retry.exhausted"
	ruleBudgetTokens         = "budget.tokens"
	ruleBudgetTurns          = "budget.turns"
	ruleBudgetTime           = "budget.time"
	ruleBudgetCost           = "budget.cost"
	ruleWrapUp               = "softLanding.wrapUp"
	ruleWrapUpStop           = "softLanding.stop"
	ruleWaitingApproval      = "waiting.approval"
	ruleWaitingQuestion      = "waiting.question"
	ruleApprovalTimeout      = "waiting.approvalTimeout"
	ruleInterrupted          = "waiting.interrupted"
	ruleSameActionError      = "stuck.sameActionError"
	ruleSameActionResult     = "stuck.sameActionResult"
	ruleAlternation          = "stuck.alternation"
	ruleSameMessage          = "stuck.sameMessage"
	ruleEmptyReplies         = "stuck.emptyReplies"
	ruleCompactionStreak     = "stuck.compactionStreak"
	ruleCompactionNoProgress = "stuck.compactionNoProgress"
	ruleRepeatedError        = "stuck.repeatedError"
	ruleNoProgress           = "noProgress"
	ruleReviewApproved       = "review.approved"
	ruleReviewRejected       = "review.rejected"
	ruleDoneDisputed         = "done.disputed"
	ruleDoneReview           = "done.review"
	ruleDoneUnverified       = "done.unverified"
	ruleDone                 = "done"
	ruleContinue             = "continue"
	ruleModel                = "model"
	ruleModelLowConfidence   = "model.lowConfidence"
	ruleModelStopDisputed    = "model.stopDisputed"
	ruleModelStopUnverified  = "model.stopUnverified"
)

// Confidence of policy decisions. Hard rules are certain; detectors and
// heuristics are not, and say so.
const (
	confHard      = 1.0  // user stop, failures, retries, budgets, soft landing, waiting on a human
	confStuck     = 0.9  // step and message patterns, empty replies, repeated error
	confThrash    = 0.8  // compaction thrash, no progress (fingerprints may miss real progress)
	confVerified  = 0.95 // completion with passing checks, or approved by review
	confDone      = 0.8  // completion with no checks run; a disputed claim; a review request
	confHeuristic = 0.7  // plain continue: the agent has not claimed completion
)

// Decide returns what the session does after in.Turn. It is a pure
// function of in: the same input always gives the same decision, which is
// what makes receipts replayable. doc.go describes the rules in order.
func Decide(in Input) Decision {
	r := newRun(in)
	if d, ok := r.hardRules(); ok {
		return d
	}
	d := r.judge()
	if in.Model != nil {
		return r.withModel(d)
	}
	return d
}

// run is one evaluation of Decide.
type run struct {
	in    Input
	cfg   Config
	turns []TurnSummary // History then Turn
}

func newRun(in Input) *run {
	turns := make([]TurnSummary, 0, len(in.History)+1)
	turns = append(turns, in.History...)
	turns = append(turns, in.Turn)
	return &run{in: in, cfg: in.Config.WithDefaults(), turns: turns}
}

func decision(a Action, cond StopCondition, rule string, conf float64, reason string) Decision {
	return Decision{Action: a, StopCondition: cond, Rule: rule, Confidence: conf, Reason: reason, Source: SourcePolicy}
}

// hardRules are steps 1 to 7: the model never overrides them.
func (r *run) hardRules() (Decision, bool) {
	t := r.in.Turn
	if r.in.UserStop {
		return decision(ActStop, StopUserStop, ruleUserStop, confHard, "the user stopped the run"), true
	}
	if t.Status == StatusFailed {
		return r.failed(), true
	}
	if b, ok := r.budgetReached(); ok {
		return decision(ActStop, b.cond, b.rule, confHard, b.name+" budget reached: "+b.used()), true
	}
	if t.Status == StatusInterrupted {
		return decision(ActPause, StopWaitingOnHuman, ruleInterrupted, confHard,
			"the turn was interrupted; waiting for a human to resume"), true
	}
	if d, ok := r.softLanding(); ok {
		return d, true
	}
	if d, ok := r.waiting(); ok {
		return d, true
	}
	if d, ok := r.stuck(); ok {
		return d, true
	}
	if d, ok := r.noProgress(); ok {
		return d, true
	}
	return Decision{}, false
}

func (r *run) failed() Decision {
	e := r.in.Turn.Error
	if e == nil {
		return decision(ActStop, StopFailedUnrecoverable, ruleFailedUnrecoverable, confHard, "the turn failed without an error")
	}
	if !e.Recoverable {
		return decision(ActStop, StopFailedUnrecoverable, ruleFailedUnrecoverable, confHard, "unrecoverable failure: "+describeError(e))
	}
	if r.in.Retries <= r.cfg.MaxRetries {
		return decision(ActContinue, StopNone, ruleRetry, confHard,
			fmt.Sprintf("recoverable failure, retry %d of %d: %s", r.in.Retries, r.cfg.MaxRetries, describeError(e)))
	}
	return decision(ActPause, StopRetriesExhausted, ruleRetryExhausted, confHard,
		fmt.Sprintf("blocked: %d failures in a row, last: %s", r.in.Retries, describeError(e)))
}

func describeError(e *TurnError) string {
	if e.Kind == "" {
		return e.Message
	}
	return e.Kind + ": " + e.Message
}

// budget is one limited budget with what was spent against it.
type budget struct {
	name, unit string // "token", "tokens"
	rule       string
	cond       StopCondition
	spent      float64
	limit      float64
	format     func(float64) string
}

func (b budget) used() string { return b.format(b.spent) + " of " + b.format(b.limit) }

func (b budget) left() string {
	left := b.format(math.Max(0, b.limit-b.spent))
	if b.unit == "" {
		return left
	}
	return left + " " + b.unit
}

// budgets lists the limited budgets in rule order: tokens, turns, time, cost.
func (r *run) budgets() []budget {
	lim, sp := r.cfg.Budgets, r.in.Spent
	var bs []budget
	if lim.Tokens > 0 {
		bs = append(bs, budget{"token", "tokens", ruleBudgetTokens, StopBudgetTokens, float64(sp.Tokens), float64(lim.Tokens), formatCount})
	}
	if lim.Turns > 0 {
		bs = append(bs, budget{"turn", "turns", ruleBudgetTurns, StopBudgetTurns, float64(sp.Turns), float64(lim.Turns), formatCount})
	}
	if lim.TimeMs > 0 {
		bs = append(bs, budget{"time", "", ruleBudgetTime, StopBudgetTime, float64(sp.TimeMs), float64(lim.TimeMs), formatMs})
	}
	if lim.CostUSD > 0 {
		bs = append(bs, budget{"cost", "", ruleBudgetCost, StopBudgetCost, sp.CostUSD, lim.CostUSD, formatUSD})
	}
	return bs
}

func formatCount(v float64) string { return fmt.Sprintf("%.0f", v) }

func formatUSD(v float64) string { return fmt.Sprintf("$%.2f", v) }

func formatMs(v float64) string {
	s := int64(math.Round(v / 1000))
	if s < 60 {
		return fmt.Sprintf("%ds", s)
	}
	if s < 3600 {
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, s/60%60)
}

func (r *run) budgetReached() (budget, bool) {
	for _, b := range r.budgets() {
		if b.spent >= b.limit {
			return b, true
		}
	}
	return budget{}, false
}

// forecastCrossing returns the first budget the next turn is forecast to
// use up, taking the mean spend per turn of this run as the forecast.
func (r *run) forecastCrossing() (budget, bool) {
	n := float64(r.in.Spent.Turns)
	if n <= 0 {
		n = float64(len(r.turns))
	}
	for _, b := range r.budgets() {
		perTurn := b.spent / n
		if b.rule == ruleBudgetTurns {
			perTurn = 1
		}
		if b.spent+perTurn >= b.limit {
			return b, true
		}
	}
	return budget{}, false
}

// softLanding is step 4. A completion the evidence confirms is not held up
// by a wrap-up turn: it falls through to step 8.
func (r *run) softLanding() (Decision, bool) {
	if !r.cfg.WrapUp {
		return Decision{}, false
	}
	b, ok := r.forecastCrossing()
	if !ok || r.verifiedDone() {
		return Decision{}, false
	}
	if r.afterWrapUp() {
		return decision(ActStop, b.cond, ruleWrapUpStop, confHard,
			fmt.Sprintf("wrap-up turn done; the next turn would exhaust the %s budget (%s)", b.name, b.used())), true
	}
	d := decision(ActContinue, StopNone, ruleWrapUp, confHard,
		fmt.Sprintf("the next turn would exhaust the %s budget (%s): wrap up", b.name, b.used()))
	d.WrapUp = true
	d.NextInput = wrapUpInput(b)
	return d, true
}

func (r *run) afterWrapUp() bool {
	if r.in.Turn.Kind == KindWrapUp {
		return true
	}
	n := len(r.in.Recent)
	return n > 0 && r.in.Recent[n-1].WrapUp
}

// waiting is step 5: a human is needed before anything else can happen.
func (r *run) waiting() (Decision, bool) {
	t := r.in.Turn
	switch {
	case t.ApprovalTimeouts > 0:
		return decision(ActStop, StopApprovalTimeout, ruleApprovalTimeout, confHard,
			fmt.Sprintf("%d approval(s) went unanswered past the deadline", t.ApprovalTimeouts)), true
	case t.PendingApprovals > 0:
		return decision(ActPause, StopWaitingOnHuman, ruleWaitingApproval, confHard,
			fmt.Sprintf("%d approval(s) pending", t.PendingApprovals)), true
	case t.PendingQuestions > 0:
		return decision(ActPause, StopWaitingOnHuman, ruleWaitingQuestion, confHard,
			fmt.Sprintf("%d question(s) pending", t.PendingQuestions)), true
	}
	return Decision{}, false
}

// noProgress is step 7.
func (r *run) noProgress() (Decision, bool) {
	n := len(r.noProgressRun())
	if n < r.cfg.NoProgressTurns {
		return Decision{}, false
	}
	return decision(ActStop, StopNoProgress, ruleNoProgress, confThrash,
		fmt.Sprintf("no progress in %d turns: workspace, plan and step results unchanged", n)), true
}

// judge is steps 8 and 9: completion, review, or another turn.
func (r *run) judge() Decision {
	t := r.in.Turn
	if t.Kind == KindReview {
		if t.ReviewApproved != nil && *t.ReviewApproved {
			if dis := r.disagreements(); len(dis) > 0 {
				return r.disputed(dis)
			}
			if why := r.unverified(); why != "" {
				return r.unverifiedDone("the reviewer accepted the work", why)
			}
			return decision(ActStop, StopCompleted, ruleReviewApproved, confVerified, "the reviewer accepted the work")
		}
		reason := "the reviewer did not accept the work"
		if t.ReviewApproved == nil {
			reason = "the reviewer gave no verdict"
		}
		d := decision(ActContinue, StopNone, ruleReviewRejected, confStuck, reason)
		d.NextInput = reviewRejectedInput(t.AgentMessage)
		return d
	}
	if r.claimsDone() {
		if dis := r.disagreements(); len(dis) > 0 {
			return r.disputed(dis)
		}
		if why := r.unverified(); why != "" {
			return r.unverifiedDone("the agent says it is done", why)
		}
		if r.cfg.ReviewOnDone && !r.approvedReviewOfCurrentState() {
			d := decision(ActReview, StopNone, ruleDoneReview, confDone, "the agent says it is done; review before accepting")
			d.NextInput = reviewInput(r.in.Objective)
			return d
		}
		if c := r.lastChecks(); c != nil && *c {
			return decision(ActStop, StopCompleted, ruleDone, confVerified, "the agent says it is done and the last checks passed")
		}
		return decision(ActStop, StopCompleted, ruleDone, confDone, "the agent says it is done; no checks ran to confirm it")
	}
	d := decision(ActContinue, StopNone, ruleContinue, confHeuristic, r.continueReason())
	d.NextInput = r.continueInput()
	return d
}

// unverifiedDone stops, not completed, a completion no check confirms
// where one was due: a claim is not completion, and a human reviews it (a
// run's task thread is then validated and retried by its run).
func (r *run) unverifiedDone(claim, why string) Decision {
	return decision(ActStop, StopWaitingOnHuman, ruleDoneUnverified, confHard,
		claim+", but "+why+": stopping for review")
}

// unverified says why a completion cannot be accepted without a human
// although nothing contradicts it, or "": a check the agent tried did not
// run (declined, refused or unable to start) and no clean passing check
// came after it, or the objective names checks (NamedChecks) and none ran
// in the turns kept.
func (r *run) unverified() string {
	for _, t := range slices.Backward(r.turns) {
		if len(t.ChecksNotRun) > 0 {
			return fmt.Sprintf("the check %s did not run (declined, refused or unable to start)", quoteCommands(t.ChecksNotRun))
		}
		if t.ChecksPassed != nil && *t.ChecksPassed {
			break
		}
	}
	if named := NamedChecks(r.in.Objective); len(named) > 0 && r.lastChecks() == nil {
		return fmt.Sprintf("the objective names %s and no check ran to confirm it", strings.Join(named, ", "))
	}
	return ""
}

func quoteCommands(cmds []string) string {
	q := make([]string, len(cmds))
	for i, c := range cmds {
		q[i] = "`" + clip(c, 120) + "`"
	}
	return strings.Join(q, ", ")
}

func (r *run) disputed(dis []string) Decision {
	d := decision(ActContinue, StopNone, ruleDoneDisputed, confDone,
		"the agent says it is done but "+strings.Join(dis, "; "))
	d.NextInput = disputedInput(dis)
	return d
}

// claimsDone: the current turn's message claims completion. An empty reply
// never does.
func (r *run) claimsDone() bool {
	t := r.in.Turn
	return !t.EmptyReply && t.Kind != KindReview && ClaimsDone(t.AgentMessage)
}

// verifiedDone: the turn is a completion the evidence agrees with, a claim
// by the agent or an approval by a reviewer.
func (r *run) verifiedDone() bool {
	t := r.in.Turn
	done := r.claimsDone()
	if t.Kind == KindReview {
		done = t.ReviewApproved != nil && *t.ReviewApproved
	}
	return done && len(r.disagreements()) == 0 && r.unverified() == ""
}

// disagreements lists the evidence against a completion claim.
func (r *run) disagreements() []string {
	var dis []string
	if open := openSteps(r.in.Turn.Plan); len(open) > 0 {
		dis = append(dis, fmt.Sprintf("the plan has %d unfinished step(s): %s", len(open), strings.Join(open, ", ")))
	}
	if c := r.lastChecks(); c != nil && !*c {
		dis = append(dis, "the last test/build/lint run failed")
	}
	return dis
}

// lastChecks is the most recent check outcome of the run, nil if no checks
// ran in the turns the session kept.
func (r *run) lastChecks() *bool {
	for _, t := range slices.Backward(r.turns) {
		if t.ChecksPassed != nil {
			return t.ChecksPassed
		}
	}
	return nil
}

func openSteps(plan []PlanStep) []string {
	var open []string
	for _, s := range plan {
		if s.Status != PlanCompleted {
			open = append(open, fmt.Sprintf("%q (%s)", s.Step, s.Status))
		}
	}
	return open
}

// approvedReviewOfCurrentState: the latest review turn of the state the
// workspace is in now approved the work.
func (r *run) approvedReviewOfCurrentState() bool {
	now := stateKey(r.in.Turn)
	for _, t := range slices.Backward(r.in.History) {
		if t.Kind == KindReview && stateKey(t) == now {
			return t.ReviewApproved != nil && *t.ReviewApproved
		}
	}
	return false
}

func stateKey(t TurnSummary) string { return t.WorkspaceFingerprint + "\x00" + t.DiffFingerprint }

func (r *run) continueReason() string {
	if open := openSteps(r.in.Turn.Plan); len(open) > 0 {
		return fmt.Sprintf("the agent has not claimed completion; %d plan step(s) left", len(open))
	}
	return "the agent has not claimed completion"
}

// withModel is step 10: the model's answer replaces the decision of steps
// 8 and 9, unless it is unsure or claims a completion the evidence denies.
func (r *run) withModel(policy Decision) Decision {
	m := *r.in.Model
	d := Decision{Action: m.Action, Reason: m.Reason, Confidence: m.Confidence, Rule: ruleModel, Source: SourceModel}
	if !validAction(m.Action) || math.IsNaN(m.Confidence) || m.Confidence < r.cfg.MinConfidence {
		d.Action, d.StopCondition, d.Rule = ActPause, StopLowConfidence, ruleModelLowConfidence
		d.Reason = fmt.Sprintf("decision model unsure (%s, confidence %.2f < %.2f): %s",
			m.Action, m.Confidence, r.cfg.MinConfidence, m.Reason)
		return d
	}
	switch m.Action {
	case ActContinue:
		d.NextInput = m.NextInput
		if d.NextInput == "" {
			d.NextInput = policy.NextInput
		}
		if d.NextInput == "" {
			d.NextInput = r.continueInput()
		}
	case ActReview:
		d.NextInput = m.NextInput
		if d.NextInput == "" {
			d.NextInput = reviewInput(r.in.Objective)
		}
	case ActPause:
		d.StopCondition = StopWaitingOnHuman
	case ActStop:
		if dis := r.disagreements(); len(dis) > 0 {
			d.Action, d.StopCondition, d.Rule = ActPause, StopWaitingOnHuman, ruleModelStopDisputed
			d.Reason = "decision model says stop but " + strings.Join(dis, "; ") + ": " + m.Reason
			return d
		}
		if why := r.unverified(); why != "" {
			d.Action, d.StopCondition, d.Rule = ActStop, StopWaitingOnHuman, ruleModelStopUnverified
			d.Reason = "decision model says stop but " + why + ": stopping for review: " + m.Reason
			return d
		}
		d.StopCondition = StopCompleted
	}
	return d
}

func validAction(a Action) bool {
	switch a {
	case ActContinue, ActPause, ActStop, ActReview:
		return true
	}
	return false
}
