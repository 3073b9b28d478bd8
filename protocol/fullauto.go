package protocol

import "math"

// Full-auto methods and notifications: apserver's extension (docs/fullauto.md).
// Their method names are constants in methods_gen.go, generated from the
// schema (see internal/protogen).

// FullAutoState is the state of a full-auto run.
type FullAutoState string

// Run states.
const (
	FullAutoRunning FullAutoState = "running" // turns are running or about to
	FullAutoPaused  FullAutoState = "paused"  // a human has to resume it
	FullAutoWaiting FullAutoState = "waiting" // an approval or question waits on a human
	FullAutoStopped FullAutoState = "stopped" // the run is over
)

// FullAutoApprovals is how a run answers approvals.
type FullAutoApprovals string

// Approval strategies of a run.
const (
	FullAutoApproveNever  FullAutoApprovals = "never"
	FullAutoApprovePolicy FullAutoApprovals = "policy"
	FullAutoApproveAsk    FullAutoApprovals = "ask"
)

// Valid reports whether a is one of the strategies.
func (a FullAutoApprovals) Valid() bool {
	return a == FullAutoApproveNever || a == FullAutoApprovePolicy || a == FullAutoApproveAsk
}

// OnTimeout is what a run does when an approval or question times out.
type OnTimeout string

// What a run does when an approval or question times out.
const (
	OnTimeoutPause OnTimeout = "pause"
	OnTimeoutStop  OnTimeout = "stop"
)

// Valid reports whether o is one of the timeout actions.
func (o OnTimeout) Valid() bool { return o == OnTimeoutPause || o == OnTimeoutStop }

// FullAutoBudgets limit a run. An absent or null field is unlimited.
type FullAutoBudgets struct {
	Tokens  *int64   `json:"tokens"`
	Turns   *int     `json:"turns"`
	TimeMs  *int64   `json:"timeMs"`
	CostUSD *float64 `json:"costUsd"`
}

func (b *FullAutoBudgets) validate() error {
	if b == nil {
		return nil
	}
	switch {
	case b.Tokens != nil && *b.Tokens <= 0:
		return Errorf(ErrInvalidParams, "Invalid params: budgets.tokens must be positive")
	case b.Turns != nil && *b.Turns <= 0:
		return Errorf(ErrInvalidParams, "Invalid params: budgets.turns must be positive")
	case b.TimeMs != nil && *b.TimeMs <= 0:
		return Errorf(ErrInvalidParams, "Invalid params: budgets.timeMs must be positive")
	case b.CostUSD != nil && (*b.CostUSD <= 0 || math.IsInf(*b.CostUSD, 0) || math.IsNaN(*b.CostUSD)):
		return Errorf(ErrInvalidParams, "Invalid params: budgets.costUsd must be positive")
	}
	return nil
}

// FullAutoSpent is what a run has used so far.
type FullAutoSpent struct {
	Tokens  int64   `json:"tokens"`
	Turns   int     `json:"turns"`
	TimeMs  int64   `json:"timeMs"`
	CostUSD float64 `json:"costUsd"`
}

// FullAutoStartParams are fullAuto/start's params.
type FullAutoStartParams struct {
	ThreadID  string           `json:"threadId"`
	Objective *string          `json:"objective,omitempty"`
	Budgets   *FullAutoBudgets `json:"budgets,omitempty"`
	// Approvals is "never", "policy" or "ask" (default "policy").
	Approvals *FullAutoApprovals `json:"approvals,omitempty"`
	// Review asks for one review turn before a run is declared done.
	Review *bool `json:"review,omitempty"`
	// ApprovalTimeoutMs: an approval or question unanswered for this long
	// is declined and the run pauses (or stops, see OnApprovalTimeout).
	ApprovalTimeoutMs *int64 `json:"approvalTimeoutMs,omitempty"`
	// OnApprovalTimeout is "pause" (default) or "stop".
	OnApprovalTimeout *OnTimeout `json:"onApprovalTimeout,omitempty"`
}

func (p *FullAutoStartParams) Validate() error {
	if p.ThreadID == "" {
		return MissingField("threadId")
	}
	if p.Approvals != nil && !p.Approvals.Valid() {
		return Errorf(ErrInvalidParams, "Invalid params: approvals must be \"never\", \"policy\" or \"ask\", got %q", *p.Approvals)
	}
	if p.OnApprovalTimeout != nil && !p.OnApprovalTimeout.Valid() {
		return Errorf(ErrInvalidParams, "Invalid params: onApprovalTimeout must be \"pause\" or \"stop\", got %q", *p.OnApprovalTimeout)
	}
	if p.ApprovalTimeoutMs != nil && *p.ApprovalTimeoutMs <= 0 {
		return Errorf(ErrInvalidParams, "Invalid params: approvalTimeoutMs must be positive")
	}
	return p.Budgets.validate()
}

// FullAutoThreadParams are the params of fullAuto/pause, resume and stop.
type FullAutoThreadParams struct {
	ThreadID string `json:"threadId"`
}

func (p *FullAutoThreadParams) Validate() error {
	if p.ThreadID == "" {
		return MissingField("threadId")
	}
	return nil
}

// FullAutoStatusParams are fullAuto/status's params; no threadId means
// every run apserver knows of.
type FullAutoStatusParams struct {
	ThreadID *string `json:"threadId,omitempty"`
}

// FullAutoReceipt is a decision as the client sees it. The full inputs
// stay in the store (apserver replay).
type FullAutoReceipt struct {
	ID            string  `json:"id"`
	ThreadID      string  `json:"threadId"`
	TurnID        string  `json:"turnId"`
	Seq           int     `json:"seq"`
	Action        string  `json:"action"` // continue, pause, stop, review
	Reason        string  `json:"reason"`
	Confidence    float64 `json:"confidence"`
	StopCondition *string `json:"stopCondition"`
	Rule          string  `json:"rule"`
	Source        string  `json:"source"` // policy or model
	NextInput     *string `json:"nextInput"`
	Executed      bool    `json:"executed"`
}

// FullAutoRun is one thread's run.
type FullAutoRun struct {
	ThreadID      string            `json:"threadId"`
	State         FullAutoState     `json:"state"`
	Reason        *string           `json:"reason"`
	Objective     *string           `json:"objective"`
	Approvals     FullAutoApprovals `json:"approvals"`
	Budgets       FullAutoBudgets   `json:"budgets"`
	Spent         FullAutoSpent     `json:"spent"`
	StopCondition *string           `json:"stopCondition"`
	LastDecision  *FullAutoReceipt  `json:"lastDecision"`
}

// FullAutoRunResult is {run}: the result of fullAuto/start, pause, resume
// and stop.
type FullAutoRunResult struct {
	Run FullAutoRun `json:"run"`
}

// FullAutoStatusResult is fullAuto/status's result.
type FullAutoStatusResult struct {
	Runs      []FullAutoRun         `json:"runs"`
	Attention AttentionNotification `json:"attention"`
}

// FullAutoStatusChangedNotification: fullAuto/statusChanged.
type FullAutoStatusChangedNotification struct {
	ThreadID string        `json:"threadId"`
	State    FullAutoState `json:"state"`
	Reason   *string       `json:"reason"`
	Run      FullAutoRun   `json:"run"`
}

// FullAutoDecisionNotification: fullAuto/decision.
type FullAutoDecisionNotification struct {
	ThreadID string          `json:"threadId"`
	TurnID   string          `json:"turnId"`
	Receipt  FullAutoReceipt `json:"receipt"`
}

// AttentionKind says what an attention item waits for.
type AttentionKind string

// Kinds of attention items.
const (
	AttentionApproval AttentionKind = "approval"
	AttentionQuestion AttentionKind = "question"
	AttentionPaused   AttentionKind = "paused"
)

// AttentionItem is one thing waiting on a human.
type AttentionItem struct {
	ThreadID string        `json:"threadId"`
	Kind     AttentionKind `json:"kind"`
	Reason   string        `json:"reason"`
	SinceMs  int64         `json:"sinceMs"` // Unix ms
	// RunID is set when a run waits (docs/runs.md); ThreadID is then the
	// run's planner or task thread.
	RunID string `json:"runId,omitempty"`
	// TaskID is the run's task the item is about (the task waiting at the
	// high-risk gate, or whose thread waits), when there is one.
	TaskID string `json:"taskId,omitempty"`
	// ProposalID and Cwd: the manager's proposal (suggest mode) for the
	// project of Cwd, waiting for manager/approve (docs/manager.md).
	ProposalID string `json:"proposalId,omitempty"`
	Cwd        string `json:"cwd,omitempty"`
}

// AttentionNotification: attention. One summary across every thread,
// re-sent whenever it changes; count 0 means nothing waits.
type AttentionNotification struct {
	Count         int             `json:"count"`
	OldestSinceMs *int64          `json:"oldestSinceMs"`
	Items         []AttentionItem `json:"items"`
}
