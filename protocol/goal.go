package protocol

import (
	"bytes"
	"encoding/json"
)

// Codex goal methods and notifications (protocol/codex/CORE.md §7).
// Their method names are constants in methods_gen.go, generated from the
// schema (see internal/protogen).

// ThreadGoalStatus is a goal's status.
type ThreadGoalStatus string

// The six goal statuses.
const (
	GoalActive        ThreadGoalStatus = "active"
	GoalPaused        ThreadGoalStatus = "paused"
	GoalBlocked       ThreadGoalStatus = "blocked"
	GoalUsageLimited  ThreadGoalStatus = "usageLimited"
	GoalBudgetLimited ThreadGoalStatus = "budgetLimited"
	GoalComplete      ThreadGoalStatus = "complete"
)

func (s ThreadGoalStatus) valid() bool {
	switch s {
	case GoalActive, GoalPaused, GoalBlocked, GoalUsageLimited, GoalBudgetLimited, GoalComplete:
		return true
	}
	return false
}

// ThreadGoal is a thread's goal. createdAt and updatedAt are Unix seconds.
type ThreadGoal struct {
	ThreadID        string           `json:"threadId"`
	Objective       string           `json:"objective"`
	Status          ThreadGoalStatus `json:"status"`
	TokenBudget     *int64           `json:"tokenBudget"`
	TokensUsed      int64            `json:"tokensUsed"`
	TimeUsedSeconds int64            `json:"timeUsedSeconds"`
	CreatedAt       int64            `json:"createdAt"`
	UpdatedAt       int64            `json:"updatedAt"`
}

// Optional is a field that can be absent, null or set: Codex's
// double-option (tokenBudget: absent = keep, null = remove, n = set).
type Optional[T any] struct {
	Present bool // the key was in the JSON
	Value   *T   // nil when the value was null
}

func (o *Optional[T]) UnmarshalJSON(b []byte) error {
	o.Present = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		o.Value = nil
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	o.Value = &v
	return nil
}

// ThreadGoalSetParams are thread/goal/set's params.
type ThreadGoalSetParams struct {
	ThreadID    string            `json:"threadId"`
	Objective   *string           `json:"objective"`
	Status      *ThreadGoalStatus `json:"status"`
	TokenBudget Optional[int64]   `json:"tokenBudget"`
	Origin      *string           `json:"origin"`
}

func (p *ThreadGoalSetParams) Validate() error {
	if p.ThreadID == "" {
		return MissingField("threadId")
	}
	if p.Status != nil && !p.Status.valid() {
		return Errorf(ErrInvalidParams, "Invalid params: unknown goal status %q", *p.Status)
	}
	if p.Origin != nil && *p.Origin != "user" && *p.Origin != "automatic" {
		return Errorf(ErrInvalidParams, "Invalid params: origin must be \"user\" or \"automatic\", got %q", *p.Origin)
	}
	return nil
}

// ThreadGoalClearParams are thread/goal/clear's params.
type ThreadGoalClearParams struct {
	ThreadID string  `json:"threadId"`
	Origin   *string `json:"origin"`
}

func (p *ThreadGoalClearParams) Validate() error {
	if p.ThreadID == "" {
		return MissingField("threadId")
	}
	return nil
}

// ThreadGoalSetResult is thread/goal/set's result.
type ThreadGoalSetResult struct {
	Goal ThreadGoal `json:"goal"`
}

// ThreadGoalGetResult is thread/goal/get's result.
type ThreadGoalGetResult struct {
	Goal *ThreadGoal `json:"goal"`
}

// ThreadGoalClearResult is thread/goal/clear's result.
type ThreadGoalClearResult struct {
	Cleared bool `json:"cleared"`
}

// ThreadGoalUpdatedNotification: thread/goal/updated.
type ThreadGoalUpdatedNotification struct {
	ThreadID string     `json:"threadId"`
	TurnID   *string    `json:"turnId"`
	Goal     ThreadGoal `json:"goal"`
}

// ThreadGoalClearedNotification: thread/goal/cleared.
type ThreadGoalClearedNotification struct {
	ThreadID string `json:"threadId"`
}
