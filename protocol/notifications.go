package protocol

// ThreadStartedNotification: thread/started.
type ThreadStartedNotification struct {
	Thread Thread `json:"thread"`
}

// ThreadStatusChangedNotification: thread/status/changed.
type ThreadStatusChangedNotification struct {
	ThreadID string       `json:"threadId"`
	Status   ThreadStatus `json:"status"`
}

// ThreadIDNotification: thread/archived, thread/unarchived.
type ThreadIDNotification struct {
	ThreadID string `json:"threadId"`
}

// ThreadNameUpdatedNotification: thread/name/updated.
type ThreadNameUpdatedNotification struct {
	ThreadID   string  `json:"threadId"`
	ThreadName *string `json:"threadName"`
}

// TokenUsageBreakdown counts tokens of one response or of the whole thread.
type TokenUsageBreakdown struct {
	TotalTokens           int64 `json:"totalTokens"`
	InputTokens           int64 `json:"inputTokens"`
	CachedInputTokens     int64 `json:"cachedInputTokens"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	ReasoningOutputTokens int64 `json:"reasoningOutputTokens"`
}

// Add accumulates o into u.
func (u *TokenUsageBreakdown) Add(o TokenUsageBreakdown) {
	u.TotalTokens += o.TotalTokens
	u.InputTokens += o.InputTokens
	u.CachedInputTokens += o.CachedInputTokens
	u.CacheWriteInputTokens += o.CacheWriteInputTokens
	u.OutputTokens += o.OutputTokens
	u.ReasoningOutputTokens += o.ReasoningOutputTokens
}

// ThreadTokenUsage is the thread's running total and the last response's usage.
type ThreadTokenUsage struct {
	Total              TokenUsageBreakdown `json:"total"`
	Last               TokenUsageBreakdown `json:"last"`
	ModelContextWindow *int64              `json:"modelContextWindow"`
}

// ThreadTokenUsageUpdatedNotification: thread/tokenUsage/updated.
type ThreadTokenUsageUpdatedNotification struct {
	ThreadID   string           `json:"threadId"`
	TurnID     string           `json:"turnId"`
	TokenUsage ThreadTokenUsage `json:"tokenUsage"`
}

// TurnNotification: turn/started and turn/completed.
type TurnNotification struct {
	ThreadID string `json:"threadId"`
	Turn     Turn   `json:"turn"`
}

// TurnDiffUpdatedNotification: turn/diff/updated (a full snapshot).
type TurnDiffUpdatedNotification struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	Diff     string `json:"diff"`
}

// TurnPlanStep is one step of the agent's plan.
type TurnPlanStep struct {
	Step   string `json:"step"`
	Status string `json:"status"` // pending | inProgress | completed
}

// TurnPlanUpdatedNotification: turn/plan/updated.
type TurnPlanUpdatedNotification struct {
	ThreadID    string         `json:"threadId"`
	TurnID      string         `json:"turnId"`
	Explanation *string        `json:"explanation"`
	Plan        []TurnPlanStep `json:"plan"`
}

// ItemStartedNotification: item/started.
type ItemStartedNotification struct {
	Item        ThreadItem `json:"item"`
	ThreadID    string     `json:"threadId"`
	TurnID      string     `json:"turnId"`
	StartedAtMs int64      `json:"startedAtMs"`
}

// ItemCompletedNotification: item/completed.
type ItemCompletedNotification struct {
	Item          ThreadItem `json:"item"`
	ThreadID      string     `json:"threadId"`
	TurnID        string     `json:"turnId"`
	CompletedAtMs int64      `json:"completedAtMs"`
}

// DeltaNotification: item/agentMessage/delta and
// item/commandExecution/outputDelta.
type DeltaNotification struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	ItemID   string `json:"itemId"`
	Delta    string `json:"delta"`
}

// ReasoningSummaryDeltaNotification: item/reasoning/summaryTextDelta.
type ReasoningSummaryDeltaNotification struct {
	ThreadID     string `json:"threadId"`
	TurnID       string `json:"turnId"`
	ItemID       string `json:"itemId"`
	Delta        string `json:"delta"`
	SummaryIndex int    `json:"summaryIndex"`
}

// ReasoningSummaryPartAddedNotification: item/reasoning/summaryPartAdded.
type ReasoningSummaryPartAddedNotification struct {
	ThreadID     string `json:"threadId"`
	TurnID       string `json:"turnId"`
	ItemID       string `json:"itemId"`
	SummaryIndex int    `json:"summaryIndex"`
}

// ReasoningTextDeltaNotification: item/reasoning/textDelta.
type ReasoningTextDeltaNotification struct {
	ThreadID     string `json:"threadId"`
	TurnID       string `json:"turnId"`
	ItemID       string `json:"itemId"`
	Delta        string `json:"delta"`
	ContentIndex int    `json:"contentIndex"`
}

// ServerRequestResolvedNotification: serverRequest/resolved.
type ServerRequestResolvedNotification struct {
	ThreadID  string `json:"threadId"`
	RequestID int64  `json:"requestId"`
}

// ErrorNotification: error.
type ErrorNotification struct {
	Error     TurnError `json:"error"`
	WillRetry bool      `json:"willRetry"`
	ThreadID  string    `json:"threadId"`
	TurnID    string    `json:"turnId"`
}

// WarningNotification: warning.
type WarningNotification struct {
	ThreadID *string `json:"threadId"`
	Message  string  `json:"message"`
}
