package checkpoint

import (
	"context"
	"errors"
	"sync"
)

// Turn records the snapshot ids of one turn of a thread: the workspace
// before its first tool ran and when it ended. Its JSON is what session
// stores under TurnKey.
type Turn struct {
	Start string `json:"start,omitempty"`
	End   string `json:"end,omitempty"`
	// Missing: the turn ran tools but no snapshot could be taken, so its
	// changes cannot be undone.
	Missing bool `json:"missing,omitempty"`
}

// TurnKey is the state key of a turn's record; with turnID "" it is the
// prefix of every record of the thread.
func TurnKey(threadID, turnID string) string {
	return "checkpoint/" + threadID + "/" + turnID
}

// RevertPlan is what reverting a thread to the start of a turn takes.
type RevertPlan struct {
	// Target is the start snapshot of the first turn from the one reverted
	// on that ran a tool; "" when none did, so no file is restored.
	Target string
	// LastEnd is the agent's last known state of the workspace: the end
	// snapshot of the latest turn that has one ("" none).
	LastEnd string
	// Missing names a turn that ran tools without a snapshot: its files
	// cannot be restored, so the revert is refused.
	Missing string
}

// PlanRevert plans a revert of the thread whose turns are turnIDs (oldest
// first) to the start of turnIDs[from]; load reads a turn's record.
func PlanRevert(turnIDs []string, from int, load func(turnID string) (Turn, bool)) RevertPlan {
	var p RevertPlan
	for _, id := range turnIDs[from:] {
		c, ok := load(id)
		if ok && c.Missing {
			return RevertPlan{Missing: id}
		}
		if ok && c.Start != "" {
			p.Target = c.Start
			break
		}
	}
	if p.Target == "" {
		return p
	}
	for i := len(turnIDs) - 1; i >= from && p.LastEnd == ""; i-- {
		if c, ok := load(turnIDs[i]); ok {
			p.LastEnd = c.End
		}
	}
	return p
}

// ChangedOutsideError refuses a revert that would lose changes made to
// the workspace since the agent's last snapshot.
type ChangedOutsideError struct {
	Paths []string // sorted
}

func (e *ChangedOutsideError) Error() string {
	return "files changed since the last snapshot"
}

// Revert carries out p: it snapshots the workspace as it is now and,
// unless force, refuses with a *ChangedOutsideError when files changed
// since p.LastEnd; then it restores p.Target and returns the paths it
// wrote or deleted (Restore).
func (s *Store) Revert(ctx context.Context, p RevertPlan, force bool) ([]string, error) {
	now, err := s.Snapshot(ctx, "before revert")
	if err != nil {
		return nil, err
	}
	if p.LastEnd != "" && !force {
		changed, err := s.Changed(ctx, p.LastEnd, now.ID)
		if err != nil {
			return nil, err
		}
		if len(changed) > 0 {
			return nil, &ChangedOutsideError{Paths: changed}
		}
	}
	return s.Restore(ctx, p.Target, now.ID)
}

// Stores opens the snapshot store of each workspace once and keeps it:
// concurrent callers wait for the one opening it, and a failed open is
// tried again by the next caller. Any goroutine may use it.
type Stores struct {
	ctx     context.Context // the opens', not a caller's: others may wait on one
	dataDir string
	opt     Options

	mu    sync.Mutex
	byCwd map[string]*opening // guarded by mu
}

// opening is a workspace's snapshot store, once open.
type opening struct {
	done chan struct{}
	cs   *Store
	err  error
}

// NewStores returns the stores of the workspaces under dataDir, opened
// with opt and within ctx. With dataDir "" every Open fails: checkpoints
// are off.
func NewStores(ctx context.Context, dataDir string, opt Options) *Stores {
	return &Stores{ctx: ctx, dataDir: dataDir, opt: opt, byCwd: map[string]*opening{}}
}

// Open returns the snapshot store of workspace cwd, opening it on first
// use; it may run git init.
func (ss *Stores) Open(ctx context.Context, cwd string) (*Store, error) {
	if ss.dataDir == "" {
		return nil, errors.New("checkpoints are off (no data dir)")
	}
	ss.mu.Lock()
	o := ss.byCwd[cwd]
	opener := o == nil
	if opener {
		o = &opening{done: make(chan struct{})}
		ss.byCwd[cwd] = o
	}
	ss.mu.Unlock()
	if !opener {
		select {
		case <-o.done:
			return o.cs, o.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	o.cs, o.err = Open(ss.ctx, ss.dataDir, cwd, ss.opt)
	if o.err != nil {
		ss.mu.Lock()
		delete(ss.byCwd, cwd)
		ss.mu.Unlock()
	}
	close(o.done)
	return o.cs, o.err
}
