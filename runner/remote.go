package runner

import (
	"context"
	"strings"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runs"
)

// local is the run's configuration with this process's repository and
// worktree (Options.Local).
func (rn *Runner) local(c runs.Config) runs.Config {
	if rn.opts.Local == nil {
		return c
	}
	return rn.opts.Local(c)
}

// push publishes the run's branch (and its base when merged) where
// Options.Push says; without it, nothing.
func (rn *Runner) push(ctx context.Context, cfg runs.Config, merged bool) error {
	if rn.opts.Push == nil {
		return nil
	}
	return rn.opts.Push(ctx, cfg, merged)
}

// Forget stops the run's loop here without touching the run: a worker
// drops a run it drove once its job ends, so that the next job replays
// the log afresh.
func (rn *Runner) Forget(id string) {
	rn.mu.Lock()
	x := rn.active[id]
	delete(rn.active, id)
	rn.mu.Unlock()
	if x != nil {
		x.stop()
		x.release() // slotMu guards what it touches
	}
}

// Busy reports whether the run has slow steps in flight in this process,
// and its status as this process's machine has it; ok is false when the
// run has no loop here (it is over, or its driving stopped).
func (rn *Runner) Busy(ctx context.Context, id string) (busy bool, status string, ok bool) {
	rn.mu.Lock()
	x := rn.active[id]
	rn.mu.Unlock()
	if x == nil {
		return false, "", false
	}
	type state struct {
		busy   bool
		status string
	}
	ch := make(chan state, 1)
	if !x.post(func() { ch <- state{x.busy > 0, string(x.m.Run().Status)} }) {
		return false, "", false
	}
	select {
	case s := <-ch:
		return s.busy, s.status, true
	case <-x.ctx.Done(): // the loop stopped before it read the run
		return false, "", false
	case <-ctx.Done():
		return false, "", false
	}
}

// merging is Options.Merging, or nothing.
func (rn *Runner) merging(ctx context.Context, cfg runs.Config) (func(), error) {
	if rn.opts.Merging == nil {
		return func() {}, nil
	}
	return rn.opts.Merging(ctx, cfg)
}

// unknownThread reports whether this process has no such thread (it was
// started by another process of a cluster).
func (rn *Runner) unknownThread(ctx context.Context, thread string) bool {
	err := rn.threads.Resume(ctx, thread, protocol.ThreadSettings{})
	return err != nil && strings.Contains(err.Error(), "thread not found")
}
