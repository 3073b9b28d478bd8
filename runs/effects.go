package runs

import "github.com/apserver/apserver/protocol"

// Effect is what the machine asks its driver to do. The driver applies a
// batch in order and feeds results back as events. Effects that change the
// world (a worktree, a thread, a commit, a merge) are asked for again by
// Restore after a restart when their result event is missing from the log;
// the driver makes each of them idempotent (it finds the worktree, the
// thread, the commit by its trailers, the merge already done).
type Effect interface{ effect() }

// Notify sends a notification to the clients.
type Notify struct {
	Method string
	Params any
}

// CreateWorktree creates the run's branch and worktree (and runs the
// configured setup); the result is EvWorktreeReady or EvFailed.
type CreateWorktree struct{}

// StartPlanner runs the planner: a read-only thread in the worktree whose
// turn returns the plan (or a clarification) as structured output.
// ThreadID is the planner thread to go on in ("" starts one); Prompt is
// the turn's input. Results: EvPlannerStarted, then EvPlanProposed,
// EvClarificationAsked or EvPlannerFailed.
type StartPlanner struct {
	ThreadID string
	Prompt   string
	// NoMoreQuestions: the clarification limit is reached; the planner
	// must decide by itself.
	NoMoreQuestions bool
}

// StartTask runs one attempt of a task: a thread in the worktree driven by
// full auto with Objective. ThreadID is set when the attempt already has a
// thread (after a restart): the driver reattaches to it instead of starting
// another. Results: EvTaskStarted (for a new thread), then
// EvTaskImplemented.
type StartTask struct {
	Task      protocol.RunTask
	Attempt   int
	Objective string
	ThreadID  string
}

// Validate runs the task's acceptance checks in the worktree (sandboxed)
// and a review of its diff by the validator model; the result is
// EvTaskValidated.
type Validate struct {
	Task protocol.RunTask
}

// Commit commits the worktree as the task's commit with trailers
// Apserver-Run and Apserver-Task; an existing commit with those trailers
// is the result instead of a new one. The result is EvTaskCommitted.
type Commit struct {
	Task     protocol.RunTask
	Message  string
	Trailers []Trailer
}

// Trailer is a git commit trailer ("Key: Value").
type Trailer struct{ Key, Value string }

// Merge finishes a completed run: commits the final artifacts and, when
// Into is set, merges the branch into the base branch (Mode). The result
// is EvMerged (Commit: the merge commit, "" when left for review) or
// EvFailed.
type Merge struct {
	Into bool
	Mode protocol.MergeMode
	// Reason, when the branch is left, says why (GitHub cannot be used).
	Reason string
}

// WriteArtifacts rewrites the run's files in the worktree (state.md,
// plan.md, context.json, validation-report.md, and memory.md's entry)
// from Snapshot. It is idempotent and asked for on every transition.
type WriteArtifacts struct {
	Snapshot Snapshot
}

// Interrupt stops the thread's work (cancel): its full auto and turn.
type Interrupt struct{ ThreadID string }

// SetAttention puts the run in the attention summary (ThreadID: the thread
// shown, Kind: protocol.AttentionApproval, Question or Paused).
type SetAttention struct {
	ThreadID string
	// TaskID is the task the wait is about (the gate's, the task thread's,
	// the blocked one), "" when none.
	TaskID  string
	Kind    protocol.AttentionKind
	Reason  string
	SinceMs int64
}

// ClearAttention takes the run out of the attention summary.
type ClearAttention struct{}

// Released says the run no longer needs a slot of max_parallel_runs.
type Released struct{}

func (Notify) effect()         {}
func (CreateWorktree) effect() {}
func (StartPlanner) effect()   {}
func (StartTask) effect()      {}
func (Validate) effect()       {}
func (Commit) effect()         {}
func (Merge) effect()          {}
func (WriteArtifacts) effect() {}
func (Interrupt) effect()      {}
func (SetAttention) effect()   {}
func (ClearAttention) effect() {}
func (Released) effect()       {}
