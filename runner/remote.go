package runner

import (
	"context"

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
		x.post(x.release)
		x.stop()
	}
}

// Status is the run's status as this process's machine has it, and
// whether the run has work in flight here; "" when it has no loop here.
func (rn *Runner) Status(ctx context.Context, id string) (string, bool) {
	rn.mu.Lock()
	x := rn.active[id]
	rn.mu.Unlock()
	if x == nil {
		return "", false
	}
	ch := make(chan string, 1)
	if !x.post(func() { ch <- string(x.m.Run().Status) }) {
		return "", false
	}
	select {
	case s := <-ch:
		return s, true
	case <-ctx.Done():
		return "", false
	}
}
