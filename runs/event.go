package runs

import "github.com/apserver/apserver/protocol"

// EventType names an event of a run's log.
type EventType string

// Events. Those a human causes come from run/* requests; the others are
// results of effects the driver applied.
const (
	EvStarted               EventType = "started"               // Config: run/start
	EvWorktreeReady         EventType = "worktreeReady"         // the worktree and branch exist
	EvPlannerStarted        EventType = "plannerStarted"        // ThreadID: the planner thread
	EvPlanProposed          EventType = "planProposed"          // Tasks, Summary: the planner's plan
	EvPlannerFailed         EventType = "plannerFailed"         // Reason
	EvClarificationAsked    EventType = "clarificationAsked"    // Clarification: a stage asks
	EvClarificationAnswered EventType = "clarificationAnswered" // ID, Text
	EvPlanUpdated           EventType = "planUpdated"           // Tasks: run/plan/update
	EvPlanApproved          EventType = "planApproved"          // run/plan/approve (or auto trust)
	EvPlanRejected          EventType = "planRejected"          // Text: the feedback
	EvTaskApproved          EventType = "taskApproved"          // TaskID, Decision: the gate
	EvTaskStarted           EventType = "taskStarted"           // TaskID, ThreadID
	EvTaskWaiting           EventType = "taskWaiting"           // TaskID, Reason, Text (attention kind): the task thread's full auto waits on a human
	EvTaskContinued         EventType = "taskContinued"         // TaskID: the task thread's full auto runs again
	EvTaskImplemented       EventType = "taskImplemented"       // TaskID, OK, Reason: the task thread's full auto ended
	EvTaskValidated         EventType = "taskValidated"         // TaskID, OK, Reason: checks and review
	EvTaskCommitted         EventType = "taskCommitted"         // TaskID, Commit
	EvRepairApproved        EventType = "repairApproved"        // TaskID, Tasks[0]: the fix task
	EvPaused                EventType = "paused"                // run/pause
	EvResumed               EventType = "resumed"               // run/resume
	EvCancelled             EventType = "cancelled"             // run/cancel
	EvMerged                EventType = "merged"                // Commit ("" when the branch is left for review)
	EvFailed                EventType = "failed"                // Reason: a step that cannot go on
	EvQueued                EventType = "queued"                // Position: the run waits for a slot of max_parallel_runs
	EvDequeued              EventType = "dequeued"              // the run got its slot
	EvReverted              EventType = "reverted"              // Revert: run/revert or run/task/revert undid the run or a task
	EvImported              EventType = "imported"              // Run, Decisions: a run rebuilt from its branch (apserver runs import); the first event
)

// Event is one entry of a run's log: what happened, when, and its data.
// The log is the run: replaying it gives the same state (Replay).
type Event struct {
	Type EventType `json:"type"`
	AtMs int64     `json:"atMs"`

	Config        *Config                    `json:"config,omitempty"`
	Tasks         []protocol.PlanTask        `json:"tasks,omitempty"`
	Summary       string                     `json:"summary,omitempty"`
	Clarification *protocol.RunClarification `json:"clarification,omitempty"`
	TaskID        string                     `json:"taskId,omitempty"`
	ThreadID      string                     `json:"threadId,omitempty"`
	ID            string                     `json:"id,omitempty"`
	Text          string                     `json:"text,omitempty"`
	Decision      protocol.TaskDecision      `json:"decision,omitempty"`
	OK            bool                       `json:"ok,omitempty"`
	Reason        string                     `json:"reason,omitempty"`
	Commit        string                     `json:"commit,omitempty"`
	Position      int                        `json:"position,omitempty"`
	// GitHub is the data of the GitHub stage's events (github.go).
	GitHub *GitHubData `json:"github,omitempty"`
	// Revert is what run/revert or run/task/revert did.
	Revert *protocol.RunRevert `json:"revert,omitempty"`
	// Run and Decisions are an imported run (EvImported).
	Run       *protocol.Run `json:"run,omitempty"`
	Decisions []Decision    `json:"decisions,omitempty"`
}

// Config is what a run is started with; it never changes.
type Config struct {
	ID                string             `json:"id"`
	Request           string             `json:"request"`
	Cwd               string             `json:"cwd"`
	BaseBranch        string             `json:"baseBranch"`
	Branch            string             `json:"branch"`
	Worktree          string             `json:"worktree"`
	Trust             protocol.RunTrust  `json:"trust"`
	Autonomy          protocol.Autonomy  `json:"autonomy"`
	Merge             protocol.MergeMode `json:"merge"`
	Models            protocol.RunModels `json:"models"`
	MaxClarifications int                `json:"maxClarifications"`
	// MaxRetries is how many failed validations block a task (3).
	MaxRetries int `json:"maxRetries"`
	// GitHub, when set, ends the run on GitHub (github.go); nil ends it
	// locally.
	GitHub *GitHubConfig `json:"github,omitempty"`
	// Blueprint: the run was started from a blueprint; Tasks (its tasks,
	// with the run's ids) are then the first plan, Summary its summary
	// (blueprint.go).
	Blueprint *protocol.RunBlueprint `json:"blueprint,omitempty"`
	Tasks     []protocol.PlanTask    `json:"tasks,omitempty"`
	Summary   string                 `json:"summary,omitempty"`
}
