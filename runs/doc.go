// Package runs owns a run — a request carried through planner → plan
// approval → implementer → validator, task by task, on a branch of its
// own — as a pure state machine, after etcd raft's RawNode/Ready and the
// shape of fullauto. A Machine takes events (Event: run/start, the
// planner's plan, a clarification, a human's approval, a task thread that
// ended, a validation, a commit, a merge) each with its time, and returns
// effects (Effect: create the worktree, start the planner or a task
// thread, validate, commit, merge, write the artifacts, notify, set
// attention). Its driver (package runner) applies them and feeds the
// results back as events.
//
// The event log is the run: the store keeps it append-only, Replay
// rebuilds the same state from it, and Restore says what work was in
// flight so a restart takes it up (the driver's effects are idempotent:
// nothing is done twice). A run that failed or waits on a human is never
// retried by Restore.
//
// Every rule of a run lives here: the stages and their order, trust per
// stage, autonomy off, the high-risk gate (ClassifyRisk), dependency order,
// retries → blocked → repair proposal (RepairTask), the clarification
// limit, pause (pausing until the step in flight ends), resume, cancel,
// the wait for a slot (queued, with its place), the evidence a task's
// claim of completion needs (MissingEvidence), the validator's answer
// (ParseReview), and the end (merge or leave the branch).
// The artifacts' text (Artifacts, MemoryEntry) is rendered here too.
//
// A run whose Config.GitHub is set ends on GitHub (github.go): push, a
// draft pull request marked ready after validation, its checks and review
// comments watched with backoff and turned into fix tasks (consumed
// comment ids in the log), a merge guarded by the head SHA under
// implementation trust auto, and GitHub's refusals and errors as waits
// (docs/github.md). A run that is over records its undos (EvReverted);
// a run rebuilt from its branch starts with EvImported.
//
// runs has no goroutines, no I/O and no clock reads. It imports only
// protocol and the standard library.
package runs
