package cluster

import (
	"github.com/apserver/apserver/runs"
)

// Queue is the River work queue as the runner sees it (a
// runner.WorkQueue): it takes the slow effects of the kinds it is given
// (runner.WorkOf's kinds: "worktree", "plan", "task", "validate",
// "commit", "merge"), which are then enqueued with their event and
// carried out by whoever claims them. A Queue that takes nothing runs
// everything in the process, with the log in PostgreSQL.
type Queue struct {
	kinds map[string]bool
}

// NewQueue is a queue that takes the effects of the given kinds.
func NewQueue(kinds ...string) Queue {
	q := Queue{kinds: map[string]bool{}}
	for _, k := range kinds {
		q.kinds[k] = true
	}
	return q
}

// Takes implements runner.WorkQueue.
func (q Queue) Takes(e runs.Effect) bool {
	switch e.(type) {
	case runs.CreateWorktree:
		return q.kinds["worktree"]
	case runs.StartPlanner:
		return q.kinds["plan"]
	case runs.StartTask:
		return q.kinds["task"]
	case runs.Validate:
		return q.kinds["validate"]
	case runs.Commit:
		return q.kinds["commit"]
	case runs.Merge:
		return q.kinds["merge"]
	}
	return false
}
