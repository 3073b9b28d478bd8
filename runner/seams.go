package runner

import (
	"context"
	"encoding/json"

	"github.com/apserver/apserver/runs"
	"github.com/apserver/apserver/store"
)

// RunStore is the run event log: what the runner appends each event to
// before it applies the event's effects, and what it replays. The
// embedded default is the SQLite store (SQLiteRuns); package cluster
// offers PostgreSQL.
type RunStore interface {
	// AppendRunEvent appends the event to the run's log, rewrites its
	// listing row and enqueues work (the slow effects the event implies
	// that the run's WorkQueue takes), all in one transaction: no event
	// without its work, no work without its event. It returns the event's
	// sequence number.
	AppendRunEvent(ctx context.Context, row store.RunRow, typ string, event json.RawMessage, at int64, work []Work) (int64, error)
	// RunEvents is the run's log in order; an unknown run wraps
	// store.ErrNotFound.
	RunEvents(ctx context.Context, runID string) ([]store.RunEvent, error)
	// RunRows is every run's listing row, newest first.
	RunRows(ctx context.Context) ([]store.RunRow, error)
}

// Work is one slow effect of a run as a work queue holds it: the run, the
// event whose effect it is (its sequence number is known once stored),
// the kind of effect and its JSON.
type Work struct {
	RunID  string          `json:"runId"`
	Kind   string          `json:"kind"`
	TaskID string          `json:"taskId,omitempty"`
	Effect json.RawMessage `json:"effect"`
}

// WorkQueue says where a run's slow effects are carried out. The default
// (InProcess) takes none: the runner carries out each one on a goroutine
// of its own, as it always did. A queue that takes an effect has it
// enqueued with the event that implied it (RunStore.AppendRunEvent), and
// the runner leaves it to whoever claims it.
type WorkQueue interface {
	// Takes reports whether the queue carries out the effect instead of
	// this process.
	Takes(e runs.Effect) bool
}

// InProcess is the default WorkQueue: every effect is carried out by the
// runner itself.
type InProcess struct{}

// Takes implements WorkQueue: it takes nothing.
func (InProcess) Takes(runs.Effect) bool { return false }

// SQLiteRuns is the default RunStore: the run tables of the embedded
// SQLite store. It holds no work: with InProcess nothing is enqueued, and
// work passed to it is an error.
type SQLiteRuns struct {
	// Open returns the store (session.Manager.Store).
	Open func() (*store.Store, error)
}

// AppendRunEvent implements RunStore.
func (s SQLiteRuns) AppendRunEvent(ctx context.Context, row store.RunRow, typ string, event json.RawMessage, at int64, work []Work) (int64, error) {
	if len(work) > 0 {
		return 0, errNoQueue
	}
	db, err := s.Open()
	if err != nil {
		return 0, err
	}
	return db.AppendRunEvent(ctx, row, typ, event, at)
}

// RunEvents implements RunStore.
func (s SQLiteRuns) RunEvents(ctx context.Context, runID string) ([]store.RunEvent, error) {
	db, err := s.Open()
	if err != nil {
		return nil, err
	}
	return db.RunEvents(ctx, runID)
}

// RunRows implements RunStore.
func (s SQLiteRuns) RunRows(ctx context.Context) ([]store.RunRow, error) {
	db, err := s.Open()
	if err != nil {
		return nil, err
	}
	return db.RunRows(ctx)
}

type noQueue struct{}

func (noQueue) Error() string {
	return "runner: the SQLite run store holds no work queue; enqueued work needs the cluster's store"
}

var errNoQueue error = noQueue{}

// WorkOf is the work an effect is as a queue holds it, and false for
// effects no queue carries out (notifications, attention, release).
func WorkOf(runID string, e runs.Effect) (Work, bool) {
	var kind, task string
	switch e := e.(type) {
	case runs.CreateWorktree:
		kind = "worktree"
	case runs.StartPlanner:
		kind = "plan"
	case runs.StartTask:
		kind, task = "task", e.Task.ID
	case runs.Validate:
		kind, task = "validate", e.Task.ID
	case runs.Commit:
		kind, task = "commit", e.Task.ID
	case runs.Merge:
		kind = "merge"
	default:
		return Work{}, false
	}
	b, err := json.Marshal(e)
	if err != nil {
		return Work{}, false
	}
	return Work{RunID: runID, Kind: kind, TaskID: task, Effect: b}, true
}
