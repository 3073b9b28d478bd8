package controller

// Action is what the session does after a turn.
type Action string

// Actions a Decision can carry.
const (
	ActContinue Action = "continue" // start another turn with Decision.NextInput ("" = re-run the same input)
	ActPause    Action = "pause"    // keep the run, wait for a human
	ActStop     Action = "stop"     // end the run
	ActReview   Action = "review"   // run a review turn with Decision.NextInput
)

// StopCondition says why a run paused or stopped. Empty means none.
type StopCondition string

// Stop conditions.
const (
	StopNone                StopCondition = ""
	StopCompleted           StopCondition = "completed"
	StopUserStop            StopCondition = "userStop"
	StopBudgetTokens        StopCondition = "budgetTokens"
	StopBudgetTurns         StopCondition = "budgetTurns"
	StopBudgetTime          StopCondition = "budgetTime"
	StopBudgetCost          StopCondition = "budgetCost"
	StopNoProgress          StopCondition = "noProgress"
	StopRepeatedError       StopCondition = "repeatedError"
	StopStuckLoop           StopCondition = "stuckLoop"
	StopCompactionThrash    StopCondition = "compactionThrash"
	StopEmptyReplies        StopCondition = "emptyReplies"
	StopApprovalTimeout     StopCondition = "approvalTimeout"
	StopFailedUnrecoverable StopCondition = "failedUnrecoverable"
	StopRetriesExhausted    StopCondition = "retriesExhausted"
	StopLowConfidence       StopCondition = "lowConfidence"
	StopWaitingOnHuman      StopCondition = "waitingOnHuman"
	// StopHandoff: the run goes on in a fresh thread because compaction
	// no longer frees enough of the context (fullauto.OverrideHandoff).
	StopHandoff StopCondition = "handoff"
)

// Decision sources.
const (
	SourcePolicy = "policy" // the rules of Decide
	SourceModel  = "model"  // Input.Model's answer
)

// Budgets limits a run. A zero field means unlimited.
type Budgets struct {
	Tokens  int64   `json:"tokens"`
	Turns   int     `json:"turns"`
	TimeMs  int64   `json:"timeMs"`
	CostUSD float64 `json:"costUsd"`
}

// Spent is what a run has used so far. The session does the accounting
// (Codex counts non-cached input plus output tokens).
type Spent struct {
	Tokens  int64   `json:"tokens"`
	Turns   int     `json:"turns"`
	TimeMs  int64   `json:"timeMs"`
	CostUSD float64 `json:"costUsd"`
}

// Usage is the token usage of one turn.
type Usage struct {
	Input  int64 `json:"input"`
	Cached int64 `json:"cached"`
	Output int64 `json:"output"`
}

// Plan step statuses.
const (
	PlanPending    = "pending"
	PlanInProgress = "inProgress"
	PlanCompleted  = "completed"
)

// PlanStep is one entry of the agent's plan.
type PlanStep struct {
	Step   string `json:"step"`
	Status string `json:"status"`
}

// Step is one tool call of a turn, normalized by the session.
type Step struct {
	Tool string `json:"tool"`
	// Action is the normalized call, e.g. "exec_command: go test ./...".
	Action string `json:"action"`
	// Result is a normalized digest of the result: exit code and output with
	// timestamps, durations, hex ids and temp paths masked.
	Result string `json:"result"`
	Error  bool   `json:"error,omitempty"`
}

// TurnError describes why a turn failed.
type TurnError struct {
	Message     string `json:"message"`
	Kind        string `json:"kind,omitempty"`
	Recoverable bool   `json:"recoverable"`
}

// Turn kinds. The session sets Kind from the decision that started the
// turn: ActReview gives KindReview, Decision.WrapUp gives KindWrapUp.
const (
	KindNormal = "normal"
	KindReview = "review"
	KindWrapUp = "wrapUp"
)

// Turn statuses.
const (
	StatusCompleted   = "completed"
	StatusInterrupted = "interrupted"
	StatusFailed      = "failed"
)

// TurnSummary is everything Decide needs to know about a finished turn.
type TurnSummary struct {
	TurnID string `json:"turnId"`
	Kind   string `json:"kind,omitempty"` // KindNormal ("" means normal), KindReview, KindWrapUp
	Status string `json:"status"`
	// Error is set on failed turns.
	Error        *TurnError `json:"error,omitempty"`
	Steps        []Step     `json:"steps"`
	AgentMessage string     `json:"agentMessage,omitempty"`
	// EmptyReply: the model answered with neither text nor tool calls.
	EmptyReply           bool       `json:"emptyReply,omitempty"`
	Plan                 []PlanStep `json:"plan"`
	DiffFingerprint      string     `json:"diffFingerprint,omitempty"`
	WorkspaceFingerprint string     `json:"workspaceFingerprint,omitempty"`
	Usage                Usage      `json:"usage"`
	Compactions          int        `json:"compactions,omitempty"`
	// ContextRatio is the prompt's share of the context window after the
	// turn's last compaction (0: none, or the window is unknown).
	ContextRatio     float64 `json:"contextRatio,omitempty"`
	PendingApprovals int     `json:"pendingApprovals,omitempty"`
	PendingQuestions int     `json:"pendingQuestions,omitempty"`
	// ApprovalTimeouts counts approvals or questions that no human answered
	// before the session's deadline.
	ApprovalTimeouts int `json:"approvalTimeouts,omitempty"`
	// WaitingOnProcess: the turn ended while a process it started is still
	// running (the agent is polling a build, a server, a long test run).
	WaitingOnProcess bool `json:"waitingOnProcess,omitempty"`
	// ChecksPassed is the outcome of the last test/build/lint command of the
	// turn, nil if none ran.
	ChecksPassed *bool `json:"checksPassed,omitempty"`
	// ChecksNotRun are the checks (test, build or lint commands) the turn
	// tried that did not run: declined (by a human, full auto or the
	// policy), refused, or unable to start, and not run later in the turn.
	ChecksNotRun []string `json:"checksNotRun,omitempty"`
	// ReviewApproved is set on review turns: did the reviewer accept the
	// work. ReviewVerdict derives it from the reviewer's message.
	ReviewApproved *bool `json:"reviewApproved,omitempty"`
	ElapsedMs      int64 `json:"elapsedMs"`
}

// Config tunes the policy. Zero thresholds take the defaults of WithDefaults.
type Config struct {
	Budgets Budgets `json:"budgets"`
	// NoProgressTurns: stop after this many turns in a row without progress (3).
	NoProgressTurns int `json:"noProgressTurns"`
	// SameErrorTimes: stop after the same error ends this many turns in a row (3).
	SameErrorTimes int `json:"sameErrorTimes"`
	// CompactionTimes: stop after this many compactions without progress (3).
	CompactionTimes int `json:"compactionTimes"`
	// MaxRetries: recoverable failures retried in a row (3; negative: none).
	MaxRetries int `json:"maxRetries"`
	// ReviewOnDone: run a review turn before accepting completion.
	ReviewOnDone bool `json:"reviewOnDone"`
	// MinConfidence: model answers below it pause the run (0.6).
	MinConfidence float64 `json:"minConfidence"`
	// WrapUp enables the soft-landing turn before a budget runs out. A bool
	// cannot tell "unset" from false, so WithDefaults leaves it alone; start
	// from DefaultConfig to get it on.
	WrapUp bool `json:"wrapUp"`
}

// Default thresholds.
const (
	DefaultNoProgressTurns = 3
	DefaultSameErrorTimes  = 3
	DefaultCompactionTimes = 3
	DefaultMaxRetries      = 3
	DefaultMinConfidence   = 0.6
)

// DefaultConfig is the recommended configuration: default thresholds and
// WrapUp on, no budgets.
func DefaultConfig() Config { return Config{WrapUp: true}.WithDefaults() }

// WithDefaults returns c with zero thresholds replaced by their defaults.
// Counts below zero also take the default, except MaxRetries, where a
// negative value means "never retry".
func (c Config) WithDefaults() Config {
	if c.NoProgressTurns <= 0 {
		c.NoProgressTurns = DefaultNoProgressTurns
	}
	if c.SameErrorTimes <= 0 {
		c.SameErrorTimes = DefaultSameErrorTimes
	}
	if c.CompactionTimes <= 0 {
		c.CompactionTimes = DefaultCompactionTimes
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	if c.MinConfidence == 0 {
		c.MinConfidence = DefaultMinConfidence
	}
	return c
}

// ModelAnswer is the decision model's structured answer (see ModelSchema).
type ModelAnswer struct {
	Action     Action  `json:"action"`
	NextInput  string  `json:"nextInput"`
	Reason     string  `json:"reason"`
	Confidence float64 `json:"confidence"`
}

// Input is everything Decide looks at. It round-trips through JSON exactly,
// so a Receipt can be replayed.
type Input struct {
	Objective string `json:"objective"`
	Config    Config `json:"config"`
	// Spent includes this turn.
	Spent        Spent       `json:"spent"`
	RunElapsedMs int64       `json:"runElapsedMs"`
	Turn         TurnSummary `json:"turn"`
	// History holds the earlier turns of this run, oldest first; the
	// session keeps at most the last 20.
	History []TurnSummary `json:"history"`
	// Recent holds the earlier decisions, oldest first, at most 20.
	Recent   []Decision `json:"recent"`
	UserStop bool       `json:"userStop,omitempty"`
	// Retries counts consecutive recoverable failures, this one included.
	Retries int `json:"retries,omitempty"`
	// Model is the decision model's answer for this input, when one was asked.
	Model *ModelAnswer `json:"model,omitempty"`
}

// Decision is what Decide returns.
type Decision struct {
	Action Action `json:"action"`
	// NextInput is the hidden input of the next turn (continue, review).
	// Empty on continue means "re-run the same input" (a retry).
	NextInput     string        `json:"nextInput,omitempty"`
	Reason        string        `json:"reason"`
	Confidence    float64       `json:"confidence"`
	StopCondition StopCondition `json:"stopCondition,omitempty"`
	// Rule is the id of the rule that fired; doc.go lists them.
	Rule   string `json:"rule"`
	Source string `json:"source"` // SourcePolicy or SourceModel
	// WrapUp marks a continue as the soft-landing wrap-up turn.
	WrapUp bool `json:"wrapUp,omitempty"`
}

// PolicyVersion changes whenever Decide's behaviour changes; it is part of
// PolicyHash.
const PolicyVersion = "1"

// Receipt records one decision so it can be audited and replayed.
type Receipt struct {
	ID         string   `json:"id"`
	ThreadID   string   `json:"threadId"`
	TurnID     string   `json:"turnId"`
	Seq        int      `json:"seq"`
	Input      Input    `json:"input"`
	Output     Decision `json:"output"`
	PolicyHash string   `json:"policyHash"`
	Executed   bool     `json:"executed"`
	// Override names what replaced Output when the executed action
	// differs, e.g. "userStop".
	Override    string `json:"override,omitempty"`
	CreatedAtMs int64  `json:"createdAtMs"`
}

// ApprovalStrategy says how approvals are answered under full auto.
type ApprovalStrategy string

// Approval strategies.
const (
	ApproveNever  ApprovalStrategy = "never"  // never ask a human; decline only what the rules forbid
	ApprovePolicy ApprovalStrategy = "policy" // accept what is safe, forward the rest
	ApproveAsk    ApprovalStrategy = "ask"    // forward everything to a human
)

// ApprovalRequest is one approval the agent needs.
type ApprovalRequest struct {
	Kind    string `json:"kind"` // "command", "fileChange", "question"
	Command string `json:"command,omitempty"`
	// Prefix is the first two words of Command; Approve derives it when empty.
	Prefix string `json:"prefix,omitempty"`
	// RuleDecision is the rules engine's verdict: "allow", "prompt", "forbidden".
	RuleDecision        string   `json:"ruleDecision,omitempty"`
	Rule                string   `json:"rule,omitempty"`
	Paths               []string `json:"paths"`
	InsideWritableRoots bool     `json:"insideWritableRoots,omitempty"`
	Sandboxed           bool     `json:"sandboxed,omitempty"`
	// Escalated: the command asks to run outside the sandbox.
	Escalated bool `json:"escalated,omitempty"`
	// Opaque says why the rules cannot read the command fully; it matters
	// only outside the sandbox.
	Opaque string `json:"opaque,omitempty"`
	// Privileged says why the command runs a command as another user
	// (sudo, su, doas, pkexec, run0, ...): only a human approves it.
	Privileged string `json:"privileged,omitempty"`
	// HumanOnly says why only a human approves the request, whatever the
	// strategy: a tool of an MCP server that an untrusted workspace file
	// added (its URL is the repository's choice).
	HumanOnly string `json:"humanOnly,omitempty"`
}

// Approval outcomes.
const (
	OutcomeAccept  = "accept"
	OutcomeDecline = "decline"
	OutcomeForward = "forward" // a human (or, for questions, the decision model) answers
)

// ApprovalVerdict answers an ApprovalRequest.
type ApprovalVerdict struct {
	Outcome string `json:"outcome"`
	Reason  string `json:"reason"`
	Rule    string `json:"rule"`
}
