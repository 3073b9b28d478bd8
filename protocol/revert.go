package protocol

// Undoing a run (docs/runs.md, "Undo"): run/revert and run/task/revert.

// RunTaskRevertParams are run/task/revert's params.
type RunTaskRevertParams struct {
	RunID  string `json:"runId"`
	TaskID string `json:"taskId"`
}

// Validate checks run/task/revert's params.
func (p *RunTaskRevertParams) Validate() error {
	if p.RunID == "" {
		return MissingField("runId")
	}
	if p.TaskID == "" {
		return MissingField("taskId")
	}
	return nil
}

// RunRevertKind is how a run (or a task) was undone.
type RunRevertKind string

// Revert kinds.
const (
	// RevertCommit: one revert commit on Branch (the base of a merged run,
	// or the run's branch for a task of an unmerged run).
	RevertCommit RunRevertKind = "commit"
	// RevertBranchClosed: an unmerged run's branch deleted and its worktree
	// removed; Commit is the branch's tip, to restore it with git branch.
	RevertBranchClosed RunRevertKind = "branchClosed"
	// RevertPullRequest: a run merged on GitHub; the revert commit is on
	// Branch, a branch of its own off the base, in the pull request
	// PullRequest for a human to merge.
	RevertPullRequest RunRevertKind = "pullRequest"
)

// RunRevert records one undo of a run or of one of its tasks.
type RunRevert struct {
	Kind RunRevertKind `json:"kind"`
	// TaskID is the task undone (run/task/revert), null for the whole run.
	TaskID *string `json:"taskId"`
	Branch string  `json:"branch"`
	Commit string  `json:"commit"`
	AtMs   int64   `json:"atMs"`
	// PullRequest is the revert pull request (kind pullRequest).
	PullRequest *RunPullRequest `json:"pullRequest,omitempty"`
}

// RunRevertResult is the result of run/revert and run/task/revert.
type RunRevertResult struct {
	Run    Run       `json:"run"`
	Revert RunRevert `json:"revert"`
}
