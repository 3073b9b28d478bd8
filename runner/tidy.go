package runner

import (
	"context"
	"encoding/json"
	"os"
	"strings"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tools/gitwork"
)

// Worktrees of runs that are over. A completed run's branch holds all it
// did (every task, the final artifacts, a review note), and a cancelled
// one's its committed tasks, so the worktree is removed when the run ends
// and git forgets it; the branch stays. A cancelled run whose worktree
// holds uncommitted changes (the task in flight when it was cancelled)
// keeps it, for the user to look at. A failed run keeps its worktree:
// run/resume tries its step again there.

// removable says whether the worktree of a run in status st goes when the
// run ends.
func removable(st protocol.RunStatus) bool {
	return st == protocol.RunCompleted || st == protocol.RunCancelled
}

// removeWorktree removes the worktree of a run that is over (see above).
func (rn *Runner) removeWorktree(ctx context.Context, id, cwd, worktree string, st protocol.RunStatus) {
	if !removable(st) || worktree == "" {
		return
	}
	repo, err := gitwork.Open(ctx, cwd)
	if err != nil {
		rn.log.Warn("removing a finished run's worktree", "run", id, "err", err)
		return
	}
	if _, err := os.Stat(worktree); err == nil && st == protocol.RunCancelled {
		if changed, err := uncommitted(ctx, worktree); err != nil || changed {
			rn.log.Info("a cancelled run's worktree has uncommitted changes: kept", "run", id, "worktree", worktree, "err", err)
			return
		}
	}
	if err := repo.RemoveWorktree(ctx, worktree); err != nil {
		rn.log.Warn("removing a finished run's worktree", "run", id, "worktree", worktree, "err", err)
	}
}

// uncommitted says whether worktree has changes outside the run's own
// files (.apserver/), which apserver rewrites on every transition.
func uncommitted(ctx context.Context, worktree string) (bool, error) {
	diff, err := gitwork.Diff(ctx, worktree, "HEAD")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(diff, "\n") {
		if rest, ok := strings.CutPrefix(line, "diff --git a/"); ok && !strings.HasPrefix(rest, ".apserver/") {
			return true, nil
		}
	}
	return false, nil
}

// Tidy removes what runs that are over left behind: the worktrees of
// completed and cancelled runs whose removal a stop cut short, and git's
// registrations of worktrees whose directories are gone (git worktree
// prune), in every repository a stored run worked on. It runs in the
// background; Close waits for it to finish (it is quick once nothing is
// left: a stat per finished run, a prune per repository).
func (rn *Runner) Tidy() {
	rn.wg.Add(1)
	go func() {
		defer rn.wg.Done()
		ctx := context.WithoutCancel(rn.ctx)
		rows, err := rn.opts.Runs.RunRows(ctx)
		if err != nil {
			rn.log.Warn("tidying runs' worktrees", "err", err)
			return
		}
		repos := map[string]bool{}
		for _, row := range rows {
			repos[row.Cwd] = true
			st := protocol.RunStatus(row.Status)
			if !removable(st) {
				continue
			}
			var r protocol.Run
			if err := json.Unmarshal(row.Run, &r); err != nil || r.Worktree == "" {
				continue
			}
			if _, err := os.Stat(r.Worktree); err != nil {
				continue // gone: the prune below makes git forget it
			}
			rn.mu.Lock()
			live := rn.active[row.ID] != nil
			rn.mu.Unlock()
			if !live {
				rn.removeWorktree(ctx, r.ID, r.Cwd, r.Worktree, st)
			}
		}
		for cwd := range repos {
			if repo, err := gitwork.Open(ctx, cwd); err == nil {
				if err := repo.Prune(ctx); err != nil {
					rn.log.Warn("pruning worktrees", "repo", cwd, "err", err)
				}
			}
		}
	}()
}
