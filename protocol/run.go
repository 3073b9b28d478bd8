package protocol

import (
	"path"
	"regexp"
	"strings"
)

// Run methods and notifications: apserver's extension (docs/runs.md). A run
// carries a request through planner → plan approval → implementer →
// validator on a branch of its own.
// Their method names are constants in methods_gen.go, generated from the
// schema (see internal/protogen).

// RunStatus is where a run is in its life.
type RunStatus string

// Run statuses. completed, failed and cancelled are final.
const (
	RunRunning   RunStatus = "running"   // a stage is working
	RunWaiting   RunStatus = "waiting"   // a human has to answer (see WaitingFor)
	RunPaused    RunStatus = "paused"    // paused by run/pause or a blocker; run/resume goes on
	RunPausing   RunStatus = "pausing"   // run/pause asked while a step works: paused once that step ends
	RunQueued    RunStatus = "queued"    // waits for a slot of max_parallel_runs (QueuePosition)
	RunCompleted RunStatus = "completed" // every task done (merged or left for review)
	RunFailed    RunStatus = "failed"    // gave up; the branch is kept
	RunCancelled RunStatus = "cancelled" // run/cancel; the branch is kept
)

// Final reports whether a run in this status is over.
func (s RunStatus) Final() bool {
	return s == RunCompleted || s == RunFailed || s == RunCancelled
}

// RunStage is the stage of the pipeline a run is in.
type RunStage string

// Stages, in order. No stage is skipped.
const (
	StagePlanning       RunStage = "planning"       // the planner thread writes the plan
	StagePlanApproval   RunStage = "planApproval"   // the plan waits for approval (or is approved by trust)
	StageImplementation RunStage = "implementation" // task threads run, in dependency order
	StageValidation     RunStage = "validation"     // checks and review of the current task
	StageMerge          RunStage = "merge"          // finishing: merge or leave the branch
	StageDone           RunStage = "done"           // the run is over
)

// RunWaitingFor says what a waiting or paused run needs from a human.
type RunWaitingFor string

// What a run can wait for.
const (
	WaitPlanApproval  RunWaitingFor = "planApproval"  // run/plan/approve, /update or /reject
	WaitTaskApproval  RunWaitingFor = "taskApproval"  // run/task/approve (the high-risk gate)
	WaitClarification RunWaitingFor = "clarification" // run/clarification/answer
	WaitRepair        RunWaitingFor = "repair"        // run/repair/approve (a task is blocked)
	WaitResume        RunWaitingFor = "resume"        // run/resume (paused, escalated or failed)
	WaitTaskThread    RunWaitingFor = "taskThread"    // the task thread's full auto waits: fullAuto/resume, or answer its approval or question
	WaitChecks        RunWaitingFor = "checks"        // the pull request's workflows wait for a human to approve them on GitHub
	WaitReview        RunWaitingFor = "review"        // the pull request is open for a human to review and merge on GitHub
	WaitGitHub        RunWaitingFor = "github"        // GitHub refused or failed (token, branch protection, a moved head): fix it, then run/resume
)

// Trust is how a stage goes on: by itself (auto) or after a human (manual).
type Trust string

// Trust values.
const (
	TrustAuto   Trust = "auto"
	TrustManual Trust = "manual"
)

// Autonomy is how much a run's task threads may do without asking.
type Autonomy string

// Autonomy modes. Forbidden rules always ask a human, in every mode.
const (
	AutonomyOff      Autonomy = "off"       // plan only: the run stops after the plan is approved
	AutonomySuggest  Autonomy = "suggest"   // every write and command asks
	AutonomySemiAuto Autonomy = "semi_auto" // reads, searches and allowed checks run; writes ask
	AutonomyFullAuto Autonomy = "full_auto" // everything the rules allow runs
)

// MergeMode is how a completed run under auto trust lands on its base branch.
type MergeMode string

// Merge modes.
const (
	MergeFastForward MergeMode = "ff"
	MergeSquash      MergeMode = "squash"
)

// TaskStatus is a task's status: pending → approved → running → completed
// | failed | blocked | skipped.
type TaskStatus string

// Task statuses.
const (
	TaskPending   TaskStatus = "pending"
	TaskApproved  TaskStatus = "approved"
	TaskRunning   TaskStatus = "running"
	TaskCompleted TaskStatus = "completed"
	TaskFailed    TaskStatus = "failed"
	TaskBlocked   TaskStatus = "blocked"
	TaskSkipped   TaskStatus = "skipped"
)

// TaskRisk is a task's risk. High-risk tasks wait for run/task/approve even
// under full_auto.
type TaskRisk string

// Risks.
const (
	RiskLow    TaskRisk = "low"
	RiskMedium TaskRisk = "medium"
	RiskHigh   TaskRisk = "high"
)

// Task kinds the planner uses. The field is open: another kind is kept as
// written and treated as file_edit.
const (
	TaskKindFileCreate   = "file_create"
	TaskKindFileEdit     = "file_edit"
	TaskKindShellCommand = "shell_command"
	TaskKindResearch     = "research"
	TaskKindTest         = "test"
	TaskKindDocs         = "docs"
)

// RunTrust is the trust of each stage.
type RunTrust struct {
	Planning       Trust `json:"planning"`
	Implementation Trust `json:"implementation"`
	Fixes          Trust `json:"fixes"`
}

// RunTrustParams overrides some stages' trust; absent fields keep the
// configured value.
type RunTrustParams struct {
	Planning       *Trust `json:"planning,omitempty"`
	Implementation *Trust `json:"implementation,omitempty"`
	Fixes          *Trust `json:"fixes,omitempty"`
}

// RunModels is the model of each stage (null: the thread's default).
type RunModels struct {
	Planner     *string `json:"planner"`
	Implementer *string `json:"implementer"`
	Validator   *string `json:"validator"`
}

// RunModelsParams overrides some stages' model for one run.
type RunModelsParams struct {
	Planner     *string `json:"planner,omitempty"`
	Implementer *string `json:"implementer,omitempty"`
	Validator   *string `json:"validator,omitempty"`
}

// TaskAcceptance is what proves a task done: criteria in words, the checks
// (shell commands run in the run's worktree, in the sandbox; each must exit
// 0) and the files that must exist afterwards (LocalFile paths).
type TaskAcceptance struct {
	Criteria []string `json:"criteria"`
	Checks   []string `json:"checks"`
	Files    []string `json:"files"`
}

// LocalFile reports whether f, an acceptance file, is a slash-separated
// path relative to the repository that stays inside it (as
// filepath.IsLocal): not empty, not absolute, no ".." out of it. A
// planner's answer naming another file would have apserver look outside
// the worktree for it.
func LocalFile(f string) bool {
	if f == "" || path.IsAbs(f) || strings.ContainsRune(f, 0) {
		return false
	}
	c := path.Clean(f)
	return c != ".." && !strings.HasPrefix(c, "../")
}

// PlanTask is a task as the planner or a client writes it (run/plan/update,
// run/repair/approve): status and retry count are the run's.
type PlanTask struct {
	ID           string         `json:"id"`
	Title        string         `json:"title"`
	Description  string         `json:"description"`
	Kind         string         `json:"kind"`
	Dependencies []string       `json:"dependencies"`
	Risk         TaskRisk       `json:"risk"`
	Acceptance   TaskAcceptance `json:"acceptance"`
	Estimate     string         `json:"estimate"`
}

// RunTask is a task of a run's plan with its progress.
type RunTask struct {
	PlanTask
	Status     TaskStatus `json:"status"`
	RetryCount int        `json:"retryCount"`
	// ThreadID is the task's thread (the last attempt's), once started.
	ThreadID *string `json:"threadId"`
	// Commit is the task's commit on the run's branch, once completed.
	Commit *string `json:"commit"`
	// LastFailure is what the last validation found wrong.
	LastFailure *string `json:"lastFailure"`
	// CompletedAtMs is when the task completed (Unix ms).
	CompletedAtMs *int64 `json:"completedAtMs"`
}

// RunPlan is a run's plan: the task graph, in the order the user sees it.
// Version counts the plans written (planner or run/plan/update).
type RunPlan struct {
	Version  int       `json:"version"`
	Summary  string    `json:"summary"`
	Tasks    []RunTask `json:"tasks"`
	Approved bool      `json:"approved"`
}

// RunClarification is a question a stage asks the user.
type RunClarification struct {
	ID           string   `json:"id"`
	Stage        RunStage `json:"stage"`
	Question     string   `json:"question"`
	Context      string   `json:"context"`
	Options      []string `json:"options"`
	Answer       *string  `json:"answer"`
	AskedAtMs    int64    `json:"askedAtMs"`
	AnsweredAtMs *int64   `json:"answeredAtMs"`
}

// RunRepairProposal is the "stop and ask" of a blocked task: what failed
// and a proposed fix task; run/repair/approve inserts it and resumes.
type RunRepairProposal struct {
	TaskID       string   `json:"taskId"`
	Failure      string   `json:"failure"`
	ProposedTask PlanTask `json:"proposedTask"`
}

// RunCounts counts a run's tasks by status.
type RunCounts struct {
	Total     int `json:"total"`
	Pending   int `json:"pending"`
	Approved  int `json:"approved"`
	Running   int `json:"running"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Blocked   int `json:"blocked"`
	Skipped   int `json:"skipped"`
}

// Run is a run as clients see it.
type Run struct {
	ID                string             `json:"id"`
	Request           string             `json:"request"`
	Status            RunStatus          `json:"status"`
	Stage             RunStage           `json:"stage"`
	WaitingFor        *RunWaitingFor     `json:"waitingFor"`
	Reason            *string            `json:"reason"`
	Cwd               string             `json:"cwd"`
	BaseBranch        string             `json:"baseBranch"`
	Branch            string             `json:"branch"`
	Worktree          string             `json:"worktree"`
	Trust             RunTrust           `json:"trust"`
	Autonomy          Autonomy           `json:"autonomy"`
	Merge             MergeMode          `json:"merge"`
	Models            RunModels          `json:"models"`
	MaxClarifications int                `json:"maxClarifications"`
	Clarifications    []RunClarification `json:"clarifications"`
	PlannerThreadID   *string            `json:"plannerThreadId"`
	CurrentTaskID     *string            `json:"currentTaskId"`
	Counts            RunCounts          `json:"counts"`
	Plan              RunPlan            `json:"plan"`
	RepairProposal    *RunRepairProposal `json:"repairProposal"`
	MergeCommit       *string            `json:"mergeCommit"`
	CreatedAtMs       int64              `json:"createdAtMs"`
	UpdatedAtMs       int64              `json:"updatedAtMs"`
	// QueuePosition is the run's place among the runs waiting for a slot
	// of max_parallel_runs (1: next) while its status is queued, else null.
	QueuePosition *int `json:"queuePosition"`
	// PullRequest is the run's pull request on GitHub (docs/github.md),
	// absent when the run has none.
	PullRequest *RunPullRequest `json:"pullRequest,omitempty"`
	// Reverts are the undos of the run and its tasks (run/revert,
	// run/task/revert), oldest first; absent when none.
	Reverts []RunRevert `json:"reverts,omitempty"`
	// Blueprint is the blueprint the run was started from, if any.
	Blueprint *RunBlueprint `json:"blueprint,omitempty"`
}

// RunPullRequestState is where a run's pull request stands.
type RunPullRequestState string

// Pull request states.
const (
	PullRequestDraft  RunPullRequestState = "draft"
	PullRequestOpen   RunPullRequestState = "open"
	PullRequestMerged RunPullRequestState = "merged"
	PullRequestClosed RunPullRequestState = "closed"
)

// RunPullRequest is a run's pull request as clients see it.
type RunPullRequest struct {
	Number  int                 `json:"number"`
	URL     string              `json:"url"`
	State   RunPullRequestState `json:"state"`
	HeadSHA string              `json:"headSha"`
	// Checks sums up the checks of HeadSHA: pending, passed, failed or
	// actionRequired ("" before the first look), with a one-line summary.
	Checks RunPullRequestChecks `json:"checks"`
	// UnresolvedComments counts the review threads not resolved.
	UnresolvedComments int `json:"unresolvedComments"`
}

// RunPullRequestChecks sums up a pull request's checks.
type RunPullRequestChecks struct {
	State   string `json:"state"`
	Summary string `json:"summary"`
}

// RunStartParams are run/start's params.
type RunStartParams struct {
	// Cwd is a directory in the git repository the run works on.
	Cwd     string `json:"cwd"`
	Request string `json:"request"`
	// BaseBranch: the branch the run starts from and merges into (default:
	// the checked-out branch).
	BaseBranch        *string          `json:"baseBranch,omitempty"`
	Trust             *RunTrustParams  `json:"trust,omitempty"`
	Autonomy          *Autonomy        `json:"autonomy,omitempty"`
	Merge             *MergeMode       `json:"merge,omitempty"`
	Models            *RunModelsParams `json:"models,omitempty"`
	MaxClarifications *int             `json:"maxClarifications,omitempty"`
	// Blueprint starts the run from a blueprint's node or tasks
	// (runblueprint.go): then request and cwd may be left out.
	Blueprint *RunBlueprintParams `json:"blueprint,omitempty"`
}

func validTrust(field string, t *Trust) error {
	if t != nil && *t != TrustAuto && *t != TrustManual {
		return Errorf(ErrInvalidParams, "Invalid params: %s must be \"auto\" or \"manual\", got %q", field, *t)
	}
	return nil
}

// Validate checks run/start's params.
func (p *RunStartParams) Validate() error {
	if p.Blueprint != nil {
		if err := p.Blueprint.Validate(); err != nil {
			return err
		}
	} else {
		if p.Cwd == "" {
			return MissingField("cwd")
		}
		if strings.TrimSpace(p.Request) == "" {
			return MissingField("request")
		}
	}
	if p.BaseBranch != nil && *p.BaseBranch == "" {
		return Errorf(ErrInvalidParams, "Invalid params: baseBranch must not be empty")
	}
	if p.Trust != nil {
		for _, f := range []struct {
			name string
			t    *Trust
		}{{"trust.planning", p.Trust.Planning}, {"trust.implementation", p.Trust.Implementation}, {"trust.fixes", p.Trust.Fixes}} {
			if err := validTrust(f.name, f.t); err != nil {
				return err
			}
		}
	}
	if p.Autonomy != nil {
		switch *p.Autonomy {
		case AutonomyOff, AutonomySuggest, AutonomySemiAuto, AutonomyFullAuto:
		default:
			return Errorf(ErrInvalidParams, "Invalid params: autonomy must be \"off\", \"suggest\", \"semi_auto\" or \"full_auto\", got %q", *p.Autonomy)
		}
	}
	if p.Merge != nil && *p.Merge != MergeFastForward && *p.Merge != MergeSquash {
		return Errorf(ErrInvalidParams, "Invalid params: merge must be \"ff\" or \"squash\", got %q", *p.Merge)
	}
	if p.MaxClarifications != nil && *p.MaxClarifications < 0 {
		return Errorf(ErrInvalidParams, "Invalid params: maxClarifications must not be negative")
	}
	return nil
}

// RunParams are the params of run/read, run/plan/approve, run/pause,
// run/resume and run/cancel.
type RunParams struct {
	RunID string `json:"runId"`
}

// Validate checks that runId is present.
func (p *RunParams) Validate() error {
	if p.RunID == "" {
		return MissingField("runId")
	}
	return nil
}

// RunListParams are run/list's params. Cwd, if given, keeps the runs of
// that repository.
type RunListParams struct {
	Cwd *string `json:"cwd,omitempty"`
}

// RunPlanUpdateParams replace the plan waiting for approval: editing,
// deleting, adding and reordering tasks are all one update.
type RunPlanUpdateParams struct {
	RunID string     `json:"runId"`
	Tasks []PlanTask `json:"tasks"`
}

var taskIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ValidateTasks checks a task list as a plan: ids well formed and unique,
// titles present, risks known, acceptance files inside the repository
// (LocalFile), dependencies on tasks of the list, no cycle.
func ValidateTasks(field string, tasks []PlanTask) error {
	ids := make(map[string]int, len(tasks))
	for i, t := range tasks {
		if !taskIDPattern.MatchString(t.ID) {
			return Errorf(ErrInvalidParams, "Invalid params: %s[%d].id must be 1-64 letters, digits, '_', '.' or '-', got %q", field, i, t.ID)
		}
		if _, dup := ids[t.ID]; dup {
			return Errorf(ErrInvalidParams, "Invalid params: %s: task id %q appears twice", field, t.ID)
		}
		ids[t.ID] = i
		if strings.TrimSpace(t.Title) == "" {
			return Errorf(ErrInvalidParams, "Invalid params: %s[%d].title must not be empty", field, i)
		}
		switch t.Risk {
		case RiskLow, RiskMedium, RiskHigh:
		default:
			return Errorf(ErrInvalidParams, "Invalid params: %s[%d].risk must be \"low\", \"medium\" or \"high\", got %q", field, i, t.Risk)
		}
		for j, f := range t.Acceptance.Files {
			if !LocalFile(f) {
				return Errorf(ErrInvalidParams, "Invalid params: %s[%d].acceptance.files[%d] must be a path relative to the repository that stays inside it, got %q", field, i, j, f)
			}
		}
	}
	for i, t := range tasks {
		for _, d := range t.Dependencies {
			if _, ok := ids[d]; !ok {
				return Errorf(ErrInvalidParams, "Invalid params: %s[%d] (%s) depends on unknown task %q", field, i, t.ID, d)
			}
		}
	}
	// Cycle check: depth-first, colouring.
	state := make(map[string]int, len(tasks))
	byID := make(map[string]PlanTask, len(tasks))
	for _, t := range tasks {
		byID[t.ID] = t
	}
	var visit func(id string) string
	visit = func(id string) string {
		switch state[id] {
		case 1:
			return id
		case 2:
			return ""
		}
		state[id] = 1
		for _, d := range byID[id].Dependencies {
			if c := visit(d); c != "" {
				return c
			}
		}
		state[id] = 2
		return ""
	}
	for _, t := range tasks {
		if c := visit(t.ID); c != "" {
			return Errorf(ErrInvalidParams, "Invalid params: %s: the dependencies form a cycle through task %q", field, c)
		}
	}
	return nil
}

// Validate checks run/plan/update's params.
func (p *RunPlanUpdateParams) Validate() error {
	if p.RunID == "" {
		return MissingField("runId")
	}
	if p.Tasks == nil {
		return MissingField("tasks")
	}
	if len(p.Tasks) == 0 {
		return Errorf(ErrInvalidParams, "Invalid params: tasks must not be empty (run/cancel ends a run)")
	}
	return ValidateTasks("tasks", p.Tasks)
}

// RunPlanRejectParams send the plan back to the planner with feedback.
type RunPlanRejectParams struct {
	RunID    string `json:"runId"`
	Feedback string `json:"feedback"`
}

// Validate checks run/plan/reject's params.
func (p *RunPlanRejectParams) Validate() error {
	if p.RunID == "" {
		return MissingField("runId")
	}
	if strings.TrimSpace(p.Feedback) == "" {
		return MissingField("feedback")
	}
	return nil
}

// TaskDecision answers the high-risk gate.
type TaskDecision string

// Decisions on a high-risk task.
const (
	TaskDecisionApprove TaskDecision = "approve"
	TaskDecisionSkip    TaskDecision = "skip"
)

// RunTaskApproveParams answer the high-risk gate for one task.
type RunTaskApproveParams struct {
	RunID  string `json:"runId"`
	TaskID string `json:"taskId"`
	// Decision is "approve" (default) or "skip".
	Decision *TaskDecision `json:"decision,omitempty"`
}

// Validate checks run/task/approve's params.
func (p *RunTaskApproveParams) Validate() error {
	if p.RunID == "" {
		return MissingField("runId")
	}
	if p.TaskID == "" {
		return MissingField("taskId")
	}
	if p.Decision != nil && *p.Decision != TaskDecisionApprove && *p.Decision != TaskDecisionSkip {
		return Errorf(ErrInvalidParams, "Invalid params: decision must be \"approve\" or \"skip\", got %q", *p.Decision)
	}
	return nil
}

// RunClarificationAnswerParams answer a clarification.
type RunClarificationAnswerParams struct {
	RunID           string `json:"runId"`
	ClarificationID string `json:"clarificationId"`
	Answer          string `json:"answer"`
}

// Validate checks run/clarification/answer's params.
func (p *RunClarificationAnswerParams) Validate() error {
	switch {
	case p.RunID == "":
		return MissingField("runId")
	case p.ClarificationID == "":
		return MissingField("clarificationId")
	case strings.TrimSpace(p.Answer) == "":
		return MissingField("answer")
	}
	return nil
}

// RunRepairApproveParams approve a blocked task's repair proposal, as
// proposed or with the fix task edited.
type RunRepairApproveParams struct {
	RunID  string    `json:"runId"`
	TaskID string    `json:"taskId"`
	Task   *PlanTask `json:"task,omitempty"`
}

// Validate checks run/repair/approve's params.
func (p *RunRepairApproveParams) Validate() error {
	if p.RunID == "" {
		return MissingField("runId")
	}
	if p.TaskID == "" {
		return MissingField("taskId")
	}
	if p.Task != nil {
		return ValidateTasks("task", []PlanTask{*p.Task})
	}
	return nil
}

// RunResult is {run}: the result of every run/* request about one run.
type RunResult struct {
	Run Run `json:"run"`
}

// RunListResult is run/list's result, newest first.
type RunListResult struct {
	Runs []Run `json:"runs"`
}

// RunStartedNotification: run/started.
type RunStartedNotification struct {
	Run Run `json:"run"`
}

// RunUpdatedNotification: run/updated, on every change of status, stage,
// current task or counts.
type RunUpdatedNotification struct {
	RunID         string         `json:"runId"`
	Status        RunStatus      `json:"status"`
	Stage         RunStage       `json:"stage"`
	WaitingFor    *RunWaitingFor `json:"waitingFor"`
	Reason        *string        `json:"reason"`
	CurrentTaskID *string        `json:"currentTaskId"`
	QueuePosition *int           `json:"queuePosition"`
	Counts        RunCounts      `json:"counts"`
	// PullRequest is the run's pull request, when it has one.
	PullRequest *RunPullRequest `json:"pullRequest,omitempty"`
}

// RunPlanUpdatedNotification: run/plan/updated, when the planner writes a
// plan or a client changes it.
type RunPlanUpdatedNotification struct {
	RunID string  `json:"runId"`
	Plan  RunPlan `json:"plan"`
}

// RunTaskUpdatedNotification: run/task/updated.
type RunTaskUpdatedNotification struct {
	RunID string  `json:"runId"`
	Task  RunTask `json:"task"`
}

// RunClarificationRequestedNotification: run/clarification/requested.
type RunClarificationRequestedNotification struct {
	RunID         string           `json:"runId"`
	Clarification RunClarification `json:"clarification"`
}

// RunCompletedNotification: run/completed, once, when a run ends
// (completed, failed or cancelled).
type RunCompletedNotification struct {
	Run Run `json:"run"`
}
