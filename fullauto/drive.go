package fullauto

import (
	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/protocol"
)

// Limits on what a drive keeps for the controller.
const (
	HistoryTurns    = 20
	RecentDecisions = 20
)

// Overrides: what a receipt's decision was replaced by when it was not
// carried out as decided (Resolve).
const (
	// OverrideTurnStarted: a client started a turn meanwhile; it is the
	// next turn.
	OverrideTurnStarted = "turnStarted"
	// OverrideTimeoutMode: a stop on approvalTimeout carried out as a
	// pause (onApprovalTimeout "pause").
	OverrideTimeoutMode = "onApprovalTimeout=pause"
	// OverrideGoalInterrupted: a goal stays active after an interrupted
	// turn, without a continuation (Codex 0.169).
	OverrideGoalInterrupted = "goalInterrupted"
	// OverrideHandoff: a continue carried out in a fresh thread, handed
	// the objective, the plan and the latest summary, because the last
	// HandoffAfter compactions each left the context above HandoffRatio
	// of the window.
	OverrideHandoff = "handoff"
)

// A drive hands off to a fresh thread when HandoffAfter compactions in a
// row leave the context above HandoffRatio of the model's window:
// compacting again would free too little to work in.
const (
	HandoffRatio = 0.75
	HandoffAfter = 2
)

// Drive is one thread's drive: everything the controller needs across turns.
// It is stored as JSON (store.Drive) after every change; the field names are
// the stored format.
type Drive struct {
	Objective string                      `json:"objective"`
	State     protocol.FullAutoState      `json:"state"`
	Reason    string                      `json:"reason,omitempty"`
	Stop      controller.StopCondition    `json:"stopCondition,omitempty"`
	Approvals controller.ApprovalStrategy `json:"approvals"`
	Config    controller.Config           `json:"config"`
	// ApprovalTimeoutMs: 0 waits forever. OnTimeout is "pause" or "stop".
	ApprovalTimeoutMs int64              `json:"approvalTimeoutMs,omitempty"`
	OnTimeout         protocol.OnTimeout `json:"onApprovalTimeout"`

	// Goal: the drive was made by thread/goal/set.
	Goal          bool  `json:"goal,omitempty"`
	GoalCreatedAt int64 `json:"goalCreatedAt,omitempty"` // unix s
	GoalUpdatedAt int64 `json:"goalUpdatedAt,omitempty"` // unix s

	StartedAtMs int64                     `json:"startedAtMs"`
	Spent       controller.Spent          `json:"spent"`
	History     []controller.TurnSummary  `json:"history"`
	Recent      []controller.Decision     `json:"recent"`
	Retries     int                       `json:"retries,omitempty"`
	Denials     map[string]int            `json:"denials,omitempty"`
	Last        *protocol.FullAutoReceipt `json:"last,omitempty"`
	// LastKind is the kind of the last turn the drive started; a retry runs
	// the same kind again.
	LastKind string `json:"lastKind,omitempty"`
	// Seq numbers receipts of threads without a store (ephemeral).
	Seq int `json:"seq,omitempty"`
	// ContextHigh counts the compactions in a row that left the context
	// above HandoffRatio of the window (Compacted).
	ContextHigh int `json:"contextHigh,omitempty"`
	// HandedOffFrom is the thread whose drive this one continues (Adopt).
	HandedOffFrom string `json:"handedOffFrom,omitempty"`
}

// Active: running or waiting.
func (r *Drive) Active() bool {
	return r != nil && (r.State == protocol.FullAutoRunning || r.State == protocol.FullAutoWaiting)
}

// newDrive makes a fresh drive from defaults.
func newDrive(objective string, nowMs int64) *Drive {
	return &Drive{
		Objective:   objective,
		State:       protocol.FullAutoRunning,
		Approvals:   controller.ApprovePolicy,
		Config:      controller.DefaultConfig(),
		OnTimeout:   protocol.OnTimeoutPause,
		StartedAtMs: nowMs,
		Denials:     map[string]int{},
		History:     []controller.TurnSummary{},
		Recent:      []controller.Decision{},
	}
}

// GoalStatus maps a drive onto Codex's goal statuses.
func (r *Drive) GoalStatus() protocol.ThreadGoalStatus {
	budget := false
	switch r.Stop {
	case controller.StopBudgetTokens, controller.StopBudgetTurns, controller.StopBudgetTime, controller.StopBudgetCost:
		budget = true
	}
	switch r.State {
	case protocol.FullAutoRunning, protocol.FullAutoWaiting:
		return protocol.GoalActive
	case protocol.FullAutoPaused:
		switch {
		case budget:
			return protocol.GoalBudgetLimited
		case r.Stop == controller.StopRetriesExhausted:
			return protocol.GoalBlocked // the same failure, again and again
		}
		return protocol.GoalPaused
	}
	switch {
	case r.Stop == controller.StopCompleted:
		return protocol.GoalComplete
	case budget:
		return protocol.GoalBudgetLimited
	case r.Stop == controller.StopUserStop:
		return protocol.GoalPaused
	}
	return protocol.GoalBlocked
}

// WireDrive renders a drive for the client; extraMs is the time of the
// current stretch, not yet in Spent.
func WireDrive(threadID string, r *Drive, extraMs int64) protocol.FullAutoRun {
	spent := r.Spent
	spent.TimeMs += extraMs
	w := protocol.FullAutoRun{
		ThreadID:  threadID,
		State:     r.State,
		Approvals: protocol.FullAutoApprovals(r.Approvals),
		Spent:     protocol.FullAutoSpent(spent),
		Budgets:   WireBudgets(r.Config.Budgets),
	}
	if r.Reason != "" {
		w.Reason = ptr(r.Reason)
	}
	if r.Objective != "" {
		w.Objective = ptr(r.Objective)
	}
	if r.Stop != "" {
		w.StopCondition = ptr(string(r.Stop))
	}
	if r.Last != nil {
		last := *r.Last
		w.LastDecision = &last
	}
	return w
}

// WireGoal renders a drive as a Codex goal (extraMs as for WireDrive).
func WireGoal(threadID string, r *Drive, extraMs int64) protocol.ThreadGoal {
	spent := r.Spent.TimeMs + extraMs
	g := protocol.ThreadGoal{
		ThreadID: threadID, Objective: r.Objective, Status: r.GoalStatus(),
		TokensUsed: r.Spent.Tokens, TimeUsedSeconds: spent / 1000,
		CreatedAt: r.GoalCreatedAt, UpdatedAt: r.GoalUpdatedAt,
	}
	if g.CreatedAt == 0 {
		g.CreatedAt = r.StartedAtMs / 1000
	}
	if g.UpdatedAt == 0 {
		g.UpdatedAt = g.CreatedAt
	}
	if b := r.Config.Budgets.Tokens; b > 0 {
		g.TokenBudget = ptr(b)
	}
	return g
}

// WireBudgets renders budgets: zero (unlimited) is null.
func WireBudgets(b controller.Budgets) protocol.FullAutoBudgets {
	var w protocol.FullAutoBudgets
	if b.Tokens > 0 {
		w.Tokens = ptr(b.Tokens)
	}
	if b.Turns > 0 {
		w.Turns = ptr(b.Turns)
	}
	if b.TimeMs > 0 {
		w.TimeMs = ptr(b.TimeMs)
	}
	if b.CostUSD > 0 {
		w.CostUSD = ptr(b.CostUSD)
	}
	return w
}

// BudgetsFrom reads wire budgets: null is unlimited.
func BudgetsFrom(w *protocol.FullAutoBudgets) controller.Budgets {
	var b controller.Budgets
	if w == nil {
		return b
	}
	if w.Tokens != nil {
		b.Tokens = *w.Tokens
	}
	if w.Turns != nil {
		b.Turns = *w.Turns
	}
	if w.TimeMs != nil {
		b.TimeMs = *w.TimeMs
	}
	if w.CostUSD != nil {
		b.CostUSD = *w.CostUSD
	}
	return b
}

// WireReceipt renders a decision receipt for the client.
func WireReceipt(r controller.Receipt) protocol.FullAutoReceipt {
	d := r.Output
	w := protocol.FullAutoReceipt{
		ID: r.ID, ThreadID: r.ThreadID, TurnID: r.TurnID, Seq: r.Seq, Action: string(d.Action), Reason: d.Reason,
		Confidence: d.Confidence, Rule: d.Rule, Source: d.Source, Executed: r.Executed,
	}
	if d.StopCondition != "" {
		w.StopCondition = ptr(string(d.StopCondition))
	}
	if d.NextInput != "" {
		w.NextInput = ptr(d.NextInput)
	}
	return w
}

func ptr[T any](v T) *T { return &v }

func appendCapped[T any](s []T, v T, n int) []T {
	s = append(s, v)
	if len(s) > n {
		s = append(s[:0:0], s[len(s)-n:]...)
	}
	return s
}

func copyDenials(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
