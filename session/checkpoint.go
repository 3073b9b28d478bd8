package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/tools/checkpoint"
)

// Checkpoints: the workspace is snapshotted (in apserver's own git object
// store, never the user's .git) before a turn's first tool runs and when the
// turn ends. The turn's diff is the start snapshot against the workspace
// now, so it shows what shell commands changed too; thread/revert restores
// a start snapshot. A turn that runs no tool cannot change the workspace and
// takes no snapshot at all, so a plain chat turn never waits for git.

// pendingSnapshot is a snapshot being taken by a child goroutine.
type pendingSnapshot struct {
	done chan struct{}
	id   string
	err  error
}

// checkpointOpener opens the snapshot store of one workspace. It runs on a
// child goroutine: opening may run git init.
type checkpointOpener func(ctx context.Context) (*checkpoint.Store, error)

// checkpoints returns the opener of the thread's workspace's snapshot store
// (checkpoint.Stores.Open); it fails when checkpoints are off (no data
// dir) or git is missing. Called on the thread goroutine; the opener is
// called off it.
func (t *thread) checkpoints() checkpointOpener {
	ss, cwd := t.m.ckpts, t.settings.Cwd
	return func(ctx context.Context) (*checkpoint.Store, error) { return ss.Open(ctx, cwd) }
}

// snapshotAsync starts a snapshot in a child goroutine.
func (t *thread) snapshotAsync(label string) *pendingSnapshot {
	ps := &pendingSnapshot{done: make(chan struct{})}
	open := t.checkpoints()
	go func() {
		defer close(ps.done)
		// Not the turn's context: an interrupted turn still gets its
		// snapshot, which a later revert needs.
		cs, err := open(t.ctx)
		if err != nil {
			ps.err = err
			return
		}
		snap, err := cs.Snapshot(t.ctx, label)
		ps.id, ps.err = snap.ID, err
	}()
	return ps
}

// prune drops the snapshots beyond the store's cap and lets git collect
// what only they used (checkpoint.Store.Prune). It runs on the child
// goroutine that took a turn's last snapshot, after the turn has its result.
func (t *thread) prune(cs *checkpoint.Store) {
	if err := cs.Prune(t.ctx); err != nil && t.ctx.Err() == nil {
		t.m.log.Warn("pruning checkpoints", "thread", t.id, "err", err)
	}
}

// afterStartCheckpoint runs then on the thread goroutine once the turn's
// start snapshot exists (at once when it already does), taking it first if
// this is the turn's first tool call.
func (t *thread) afterStartCheckpoint(tr *turn, then func()) {
	if tr.startSnap == nil {
		tr.startSnap = t.snapshotAsync("turn " + tr.id + " start")
	}
	ps := tr.startSnap
	select {
	case <-ps.done:
		t.noteStartSnapshot(tr)
		then()
		return
	default:
	}
	go func() {
		<-ps.done
		t.postEvent(tr.ctx, func() {
			if t.turn != tr {
				return
			}
			t.noteStartSnapshot(tr)
			then()
		})
	}()
}

// noteStartSnapshot records the start snapshot once.
func (t *thread) noteStartSnapshot(tr *turn) {
	ps := tr.startSnap
	if ps == nil || tr.ckpt.Start != "" {
		return
	}
	if ps.err != nil {
		if !tr.ckptWarned {
			tr.ckptWarned = true
			t.m.log.Warn("no checkpoint for turn; its diff and revert are unavailable", "thread", t.id, "turn", tr.id, "err", ps.err)
			t.saveCheckpoints(tr.id, checkpoint.Turn{Missing: true})
		}
		return
	}
	tr.ckpt.Start = ps.id
	t.saveCheckpoints(tr.id, tr.ckpt)
}

func (t *thread) saveCheckpoints(turnID string, c checkpoint.Turn) {
	if !t.persistent() {
		t.ckpts[turnID] = c
		return
	}
	db, err := t.m.store()
	if err != nil {
		return
	}
	raw, _ := json.Marshal(c)
	if err := db.PutState(context.Background(), checkpoint.TurnKey(t.id, turnID), raw); err != nil {
		t.m.log.Warn("recording checkpoint", "thread", t.id, "turn", turnID, "err", err)
	}
}

func (t *thread) loadCheckpoints(turnID string) (checkpoint.Turn, bool) {
	if !t.persistent() {
		c, ok := t.ckpts[turnID]
		return c, ok
	}
	db, err := t.m.store()
	if err != nil {
		return checkpoint.Turn{}, false
	}
	raw, err := db.GetState(context.Background(), checkpoint.TurnKey(t.id, turnID))
	if err != nil {
		return checkpoint.Turn{}, false
	}
	var c checkpoint.Turn
	return c, json.Unmarshal(raw, &c) == nil
}

// sendTurnDiff snapshots the workspace, sends turn/diff/updated (the whole
// diff of the turn so far) and then runs then on the thread goroutine. The
// snapshot becomes the turn's latest end snapshot; the final one (at the
// turn's end) is recorded in the store, the ones after each file change
// only in memory. Without checkpoints it just runs then.
func (t *thread) sendTurnDiff(tr *turn, final bool, then func()) {
	if tr.startSnap == nil {
		// No tool ran: nothing in the workspace changed through the turn.
		then()
		return
	}
	t.afterStartCheckpoint(tr, func() {
		start := tr.ckpt.Start
		if start == "" {
			then()
			return
		}
		open := t.checkpoints()
		ctx := tr.ctx
		go func() {
			cs, err := open(t.ctx)
			var snap checkpoint.Snapshot
			if err == nil {
				snap, err = cs.Snapshot(t.ctx, "turn "+tr.id)
			}
			var diff string
			if err == nil {
				diff, err = cs.Diff(t.ctx, start, snap.ID)
			}
			if final && err == nil {
				defer t.prune(cs)
			}
			t.postEvent(ctx, func() {
				if t.turn != tr {
					return
				}
				if err != nil {
					t.m.log.Warn("computing the turn diff", "thread", t.id, "turn", tr.id, "err", err)
				} else {
					tr.ckpt.End = snap.ID
					if final {
						t.saveCheckpoints(tr.id, tr.ckpt)
					}
					if diff != "" || tr.diffSent {
						tr.diffSent = true
						t.notify(protocol.NotifyTurnDiffUpdated, protocol.TurnDiffUpdatedNotification{ThreadID: t.id, TurnID: tr.id, Diff: diff})
					}
				}
				then()
			})
		}()
	})
}

// endCheckpointAsync records the end snapshot of a turn that ended without
// a final diff (interrupted, failed), so that revert can tell the agent's
// changes from later outside edits.
func (t *thread) endCheckpointAsync(tr *turn) {
	if tr.startSnap == nil || tr.endRecorded {
		return
	}
	tr.endRecorded = true
	ps := tr.startSnap
	open := t.checkpoints()
	ck := tr.ckpt
	go func() {
		<-ps.done
		if ps.err != nil {
			return
		}
		ck.Start = ps.id
		cs, err := open(t.ctx)
		if err != nil {
			return
		}
		snap, err := cs.Snapshot(t.ctx, "turn "+tr.id+" end")
		if err != nil {
			return
		}
		ck.End = snap.ID
		t.post(func() { t.saveCheckpoints(tr.id, ck) })
		t.prune(cs)
	}()
}

// revert implements thread/revert: restore the workspace to its state at
// the start of p.BeforeTurnID and drop that turn and every later one.
func (t *thread) revert(p protocol.ThreadRevertParams, reply Reply) {
	if t.turn != nil {
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "cannot revert thread %s while a turn is running; interrupt it first", t.id))
		return
	}
	turnIDs, err := t.turnIDs()
	if err != nil {
		reply(nil, err)
		return
	}
	idx := -1
	for i, id := range turnIDs {
		if id == p.BeforeTurnID {
			idx = i
		}
	}
	if idx < 0 {
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "turn not found in thread %s: %s", t.id, p.BeforeTurnID))
		return
	}
	// The state to go back to is the start snapshot of the first turn from
	// beforeTurnId on that ran a tool: turns before it changed nothing.
	// When none did, there are no files to restore.
	plan := checkpoint.PlanRevert(turnIDs, idx, t.loadCheckpoints)
	if plan.Missing != "" {
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "turn %s ran tools but has no checkpoint (is git installed?): its files cannot be restored", plan.Missing))
		return
	}
	if plan.Target == "" {
		t.finishRevert(p, idx, turnIDs, nil, nil, reply)
		return
	}
	open := t.checkpoints()
	ctx := t.ctx
	go func() {
		cs, err := open(ctx)
		var restored []string
		if err != nil {
			err = fmt.Errorf("revert: %w", err)
		} else {
			restored, err = cs.Revert(ctx, plan, p.Force)
		}
		var outside *checkpoint.ChangedOutsideError
		if errors.As(err, &outside) {
			err = protocol.Errorf(protocol.ErrInvalidRequest,
				"revert refused: these files changed outside apserver since its last turn, and reverting would lose those changes: %s (pass force: true to revert anyway)",
				strings.Join(outside.Paths, ", "))
		}
		t.post(func() { t.finishRevert(p, idx, turnIDs, restored, err, reply) })
	}()
}

func (t *thread) finishRevert(p protocol.ThreadRevertParams, idx int, turnIDs, restored []string, err error, reply Reply) {
	if err != nil {
		reply(nil, err)
		return
	}
	if t.persistent() {
		db, derr := t.m.store()
		if derr == nil {
			derr = db.DropTurnsFrom(t.ctx, t.id, p.BeforeTurnID)
		}
		if derr != nil {
			reply(nil, fmt.Errorf("revert: files restored, but dropping the turns failed: %w", derr))
			return
		}
		for _, id := range turnIDs[idx:] {
			_ = db.DeleteState(t.ctx, checkpoint.TurnKey(t.id, id))
		}
		if err := t.reloadHistory(db); err != nil {
			reply(nil, fmt.Errorf("revert: files restored and turns dropped, but %w", err))
			return
		}
	} else {
		t.turns = t.turns[:idx]
		t.undoCompactions(turnIDs[idx:]) // compact.go
		if n, ok := t.histMark[p.BeforeTurnID]; ok && n <= len(t.history) {
			t.history = t.history[:n]
		}
	}
	if restored == nil {
		restored = []string{}
	}
	reply(protocol.ThreadRevertResult{Thread: t.wire(false), RestoredPaths: restored}, nil)
	t.notify(protocol.NotifyThreadReverted, protocol.ThreadRevertedNotification{ThreadID: t.id})
}

// turnIDs lists the thread's turns, oldest first.
func (t *thread) turnIDs() ([]string, error) {
	if !t.persistent() {
		ids := make([]string, len(t.turns))
		for i, tn := range t.turns {
			ids[i] = tn.ID
		}
		return ids, nil
	}
	db, err := t.m.store()
	if err != nil {
		return nil, err
	}
	turns, err := db.Turns(t.ctx, t.id)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(turns))
	for i, tn := range turns {
		ids[i] = tn.ID
	}
	return ids, nil
}

// copyCheckpoints gives a fork the checkpoints of the turns it copied (a
// fork keeps their ids), so that reverting them in the fork restores files
// as it would in the source.
func (t *thread) copyCheckpoints(db *store.Store, srcID string) {
	prefix := checkpoint.TurnKey(srcID, "")
	states, err := db.ListState(t.ctx, prefix)
	if err != nil {
		t.m.log.Warn("copying checkpoints to a fork", "thread", t.id, "from", srcID, "err", err)
		return
	}
	ids, err := t.turnIDs()
	if err != nil {
		return
	}
	for _, id := range ids {
		if raw, ok := states[prefix+id]; ok {
			if err := db.PutState(t.ctx, checkpoint.TurnKey(t.id, id), raw); err != nil {
				t.m.log.Warn("copying checkpoints to a fork", "thread", t.id, "turn", id, "err", err)
			}
		}
	}
}
