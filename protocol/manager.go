package protocol

// The manager (docs/manager.md): project settings, the tick, explain and
// status. Method names are generated (methods_gen.go) from
// protocol/apserver/schema.

// ProjectCwdParams names a project by a directory of its workspace
// (project/settings/read, manager/tick, manager/explain, project/status).
type ProjectCwdParams struct {
	Cwd string `json:"cwd"`
}

// Validate checks the params.
func (p ProjectCwdParams) Validate() error {
	if p.Cwd == "" {
		return Errorf(ErrInvalidParams, "Invalid params: cwd: missing")
	}
	return nil
}

// ProjectBudget is a project's daily budget; 0 is no limit.
type ProjectBudget struct {
	TokensPerDay int64   `json:"tokensPerDay"`
	CostPerDay   float64 `json:"costPerDay"`
	RunsPerDay   int     `json:"runsPerDay"`
}

// ProjectSettings are a project's manager settings. Mode is off, suggest,
// semi_auto or full_auto.
type ProjectSettings struct {
	Mode            string        `json:"mode"`
	BlueprintID     string        `json:"blueprintId"`
	Phase           string        `json:"phase"`
	Paused          bool          `json:"paused"`
	MaxParallelRuns int           `json:"maxParallelRuns"`
	Budget          ProjectBudget `json:"budget"`
	DonePhases      []string      `json:"donePhases"`
}

// ProjectSettingsResult answers project/settings/read and /update.
type ProjectSettingsResult struct {
	Cwd      string          `json:"cwd"`
	Settings ProjectSettings `json:"settings"`
}

// ProjectSettingsUpdateParams changes a project's settings; nil fields
// are left alone.
type ProjectSettingsUpdateParams struct {
	Cwd             string         `json:"cwd"`
	Mode            *string        `json:"mode,omitempty"`
	BlueprintID     *string        `json:"blueprintId,omitempty"`
	Phase           *string        `json:"phase,omitempty"`
	Paused          *bool          `json:"paused,omitempty"`
	MaxParallelRuns *int           `json:"maxParallelRuns,omitempty"`
	Budget          *ProjectBudget `json:"budget,omitempty"`
}

// ManagerTickResult is a tick's decision: result (idle,
// waiting_for_approval, advanced_run, started_run, nothing_to_do,
// budget_exhausted), why, and the run and tasks it concerns.
type ManagerTickResult struct {
	Result  string   `json:"result"`
	Reason  string   `json:"reason"`
	RunID   string   `json:"runId,omitempty"`
	TaskIDs []string `json:"taskIds,omitempty"`
	// ProposalID (suggest) is the proposal waiting for manager/approve,
	// or the approved one a run started for.
	ProposalID string `json:"proposalId,omitempty"`
	Error      string `json:"error,omitempty"`
}

// ProjectRunRef is a run of the project's blueprint.
type ProjectRunRef struct {
	RunID      string         `json:"runId"`
	TaskIDs    []string       `json:"taskIds"`
	Status     RunStatus      `json:"status"`
	WaitingFor *RunWaitingFor `json:"waitingFor"`
}

// ProjectSpend is what the project used today against its budget.
type ProjectSpend struct {
	Tokens int64         `json:"tokens"`
	Cost   float64       `json:"cost"`
	Runs   int           `json:"runs"`
	Budget ProjectBudget `json:"budget"`
	// CostUnknown: some tokens are of models without a price
	// (UnpricedModels); Cost counts the others only.
	CostUnknown    bool     `json:"costUnknown,omitempty"`
	UnpricedModels []string `json:"unpricedModels,omitempty"`
	// Exhausted names the budget spent, with the figures ("tokens today:
	// 1200 of 1000"); "" while none is.
	Exhausted string `json:"exhausted,omitempty"`
}

// ProjectStatusResult answers project/status.
type ProjectStatusResult struct {
	Cwd         string             `json:"cwd"`
	Mode        string             `json:"mode"`
	Paused      bool               `json:"paused"`
	BlueprintID string             `json:"blueprintId"`
	Phase       string             `json:"phase"`
	PhaseDone   bool               `json:"phaseDone"`
	LastTick    *ManagerTickResult `json:"lastTick"`
	LastTickMs  int64              `json:"lastTickAtMs"`
	Tasks       map[string]int     `json:"tasks"`
	Runs        map[string]int     `json:"runs"`
	Spend       ProjectSpend       `json:"spend"`
	// Proposal is suggest's pending proposal, waiting for
	// manager/approve; nil when none waits.
	Proposal *ManagerProposal `json:"proposal,omitempty"`
	// Recent are the manager's last decisions (ticks and intent routings), newest first.
	Recent []ManagerRecord `json:"recent,omitempty"`
	// Attention is what of the project waits on a human (runs, the manager's proposals, budgets, a pause).
	Attention []AttentionItem `json:"attention,omitempty"`
}

// ManagerProposal is a run suggest mode proposes (docs/manager.md#suggest).
type ManagerProposal struct {
	ID      string   `json:"id"`
	TaskIDs []string `json:"taskIds"`
	Phase   string   `json:"phase"`
	SinceMs int64    `json:"sinceMs"`
}

// ManagerExplainResult answers manager/explain: the active phase, the
// next tasks in the order the manager takes them, the runs in progress,
// those waiting for a human, and a summary.
type ManagerExplainResult struct {
	Phase   string          `json:"phase"`
	Next    []string        `json:"next"`
	Runs    []ProjectRunRef `json:"runs"`
	Waiting []ProjectRunRef `json:"waiting"`
	Summary string          `json:"summary"`
	// Intents are the last routings of the project's threads' messages, newest first.
	Intents []ManagerRecord `json:"intents,omitempty"`
}

// ProjectUpdatedNotification: a project's settings or manager state
// changed (project/status has the new state).
type ProjectUpdatedNotification struct {
	Cwd string `json:"cwd"`
}

// The params and results as the schema names them.
type (
	ProjectSettingsReadParams     = ProjectCwdParams
	ProjectStatusParams           = ProjectCwdParams
	ManagerTickParams             = ProjectCwdParams
	ManagerExplainParams          = ProjectCwdParams
	ProjectSettingsReadResponse   = ProjectSettingsResult
	ProjectSettingsUpdateResponse = ProjectSettingsResult
	ManagerTickResponse           = ManagerTickResult
	ProjectStatusResponse         = ProjectStatusResult
	ManagerExplainResponse        = ManagerExplainResult
)

// ManagerApproveParams approves suggest mode's pending proposal of a
// project (manager/approve).
type ManagerApproveParams struct {
	Cwd        string `json:"cwd"`
	ProposalID string `json:"proposalId"`
}

// Validate checks the params.
func (p ManagerApproveParams) Validate() error {
	switch {
	case p.Cwd == "":
		return Errorf(ErrInvalidParams, "Invalid params: cwd: missing")
	case p.ProposalID == "":
		return Errorf(ErrInvalidParams, "Invalid params: proposalId: missing")
	}
	return nil
}

// ManagerApproveResponse is the tick that follows the approval.
type ManagerApproveResponse = ManagerTickResult
