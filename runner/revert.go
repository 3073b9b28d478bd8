package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/apserver/apserver/github"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runs"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/tools/gitwork"
)

// Undoing a run that is over (docs/runs.md, "Undo"): a merged run gets one
// revert commit on its base naming it; an unmerged one has its branch
// closed and its worktree removed; one task's commit is reverted on the
// base (merged) or the run's branch. A revert that conflicts with later
// work stops, names the files and changes nothing. Each undo is an event
// of the run's log (runs.EvReverted).

// RevertTrailer marks a revert commit with the run (and task) it undoes,
// so that a revert asked again finds it.
const RevertTrailer = "Apserver-Revert-Of"

// Revert implements run/revert.
func (rn *Runner) Revert(p protocol.RunParams) Call[protocol.RunRevertResult] {
	return func(ctx context.Context, then func(protocol.RunRevertResult, error)) {
		if err := p.Validate(); err != nil {
			then(protocol.RunRevertResult{}, err)
			return
		}
		go rn.revert(ctx, p.RunID, "", then)
	}
}

// TaskRevert implements run/task/revert.
func (rn *Runner) TaskRevert(p protocol.RunTaskRevertParams) Call[protocol.RunRevertResult] {
	return func(ctx context.Context, then func(protocol.RunRevertResult, error)) {
		if err := p.Validate(); err != nil {
			then(protocol.RunRevertResult{}, err)
			return
		}
		go rn.revert(ctx, p.RunID, p.TaskID, then)
	}
}

func (rn *Runner) revert(ctx context.Context, id, taskID string, then func(protocol.RunRevertResult, error)) {
	fail := func(err error) { then(protocol.RunRevertResult{}, err) }
	// One undo at a time: each reads the run's log, changes git, appends.
	rn.revertMu.Lock()
	defer rn.revertMu.Unlock()
	m, err := rn.replay(ctx, id)
	if err != nil {
		fail(err)
		return
	}
	if err := m.Check(runs.Event{Type: runs.EvReverted, Revert: &protocol.RunRevert{}}); err != nil {
		fail(err)
		return
	}
	r := m.Run()
	for _, rv := range r.Reverts {
		if (rv.TaskID == nil && taskID == "") || (rv.TaskID != nil && *rv.TaskID == taskID) {
			what := "run " + id
			if taskID != "" {
				what = "task " + taskID + " of run " + id
			}
			fail(protocol.Errorf(protocol.ErrInvalidRequest, "%s was already undone (%s %s on %s)", what, rv.Kind, rv.Commit, rv.Branch))
			return
		}
	}
	rv, err := rn.undo(ctx, m.Config(), r, taskID)
	if err != nil {
		fail(err)
		return
	}
	ev := runs.Event{Type: runs.EvReverted, AtMs: rn.now(), Revert: &rv}
	rn.mu.Lock()
	x := rn.active[id]
	rn.mu.Unlock()
	if x != nil {
		// A failed run still has its loop: the event goes through it.
		x.do(ev, func(err error) {
			if err != nil {
				fail(err)
				return
			}
			out := x.m.Run()
			then(protocol.RunRevertResult{Run: out, Revert: out.Reverts[len(out.Reverts)-1]}, nil)
		})
		return
	}
	effs := m.Apply(ev.AtMs, ev)
	if err := rn.store(ctx, m, ev); err != nil {
		fail(fmt.Errorf("run %s: recording the revert %s: %w", id, rv.Commit, err))
		return
	}
	out := m.Run()
	then(protocol.RunRevertResult{Run: out, Revert: out.Reverts[len(out.Reverts)-1]}, nil)
	for _, e := range effs {
		switch e := e.(type) {
		case runs.Notify:
			rn.threads.Notify(e.Method, e.Params)
		case runs.WriteArtifacts:
			_ = writeArtifacts(m.Config().Worktree, e.Snapshot)
		}
	}
}

// store appends ev to the log of a run that has no loop.
func (rn *Runner) store(ctx context.Context, m *runs.Machine, ev runs.Event) error {
	db, err := rn.opts.Store()
	if err != nil {
		return err
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	r := m.Run()
	view, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = db.AppendRunEvent(ctx, store.RunRow{ID: r.ID, Cwd: r.Cwd, Status: string(r.Status), Run: view, CreatedAt: r.CreatedAtMs},
		string(ev.Type), b, ev.AtMs)
	return err
}

// undo changes git (and GitHub) and says what it did.
func (rn *Runner) undo(ctx context.Context, cfg runs.Config, r protocol.Run, taskID string) (protocol.RunRevert, error) {
	repo, err := gitwork.Open(ctx, r.Cwd)
	if err != nil {
		return protocol.RunRevert{}, err
	}
	onGitHub := r.PullRequest != nil && r.PullRequest.State == protocol.PullRequestMerged
	if onGitHub && taskID == "" {
		return rn.undoOnGitHub(ctx, cfg, repo, r)
	}
	if onGitHub {
		return protocol.RunRevert{}, protocol.Errorf(protocol.ErrInvalidRequest,
			"run %s was merged on GitHub (pull request #%d): revert the whole run (run/revert opens a revert pull request)", r.ID, r.PullRequest.Number)
	}
	merged := r.MergeCommit != nil
	if taskID != "" {
		var t *protocol.RunTask
		for i := range r.Plan.Tasks {
			if r.Plan.Tasks[i].ID == taskID {
				t = &r.Plan.Tasks[i]
			}
		}
		if t == nil {
			return protocol.RunRevert{}, protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: run %s has no task %q", r.ID, taskID)
		}
		if t.Commit == nil {
			return protocol.RunRevert{}, protocol.Errorf(protocol.ErrInvalidRequest, "task %s of run %s has no commit to revert", taskID, r.ID)
		}
		branch := r.Branch
		if merged {
			branch = r.BaseBranch
		}
		msg := fmt.Sprintf("Revert task %s of apserver run %s: %s\n\nThis reverts commit %s.\n", taskID, r.ID, t.Title, *t.Commit)
		sha, err := repo.Revert(ctx, branch, []string{*t.Commit}, msg, []gitwork.Trailer{{Key: RevertTrailer, Value: r.ID + "/" + taskID}}, runs.Dir(r.ID))
		if err != nil {
			return protocol.RunRevert{}, revertErr(r.ID, err)
		}
		return protocol.RunRevert{Kind: protocol.RevertCommit, TaskID: &taskID, Branch: branch, Commit: sha}, nil
	}
	if !merged {
		if r.Worktree != "" {
			if err := repo.RemoveWorktree(ctx, r.Worktree); err != nil {
				return protocol.RunRevert{}, err
			}
		}
		tip, err := repo.DeleteBranch(ctx, r.Branch)
		if err != nil {
			return protocol.RunRevert{}, protocol.Errorf(protocol.ErrInvalidRequest, "run %s: closing its branch: %v", r.ID, err)
		}
		if r.PullRequest != nil && r.PullRequest.State != protocol.PullRequestClosed && cfg.GitHub != nil {
			x := &run{rn: rn, id: r.ID, ctx: ctx}
			if c, err := x.client(cfg); err == nil {
				if err := c.Close(ctx, r.PullRequest.Number); err != nil {
					rn.log.Warn("run/revert: closing the pull request", "run", r.ID, "err", err)
				}
			}
		}
		return protocol.RunRevert{Kind: protocol.RevertBranchClosed, Branch: r.Branch, Commit: tip}, nil
	}
	commits := []string{*r.MergeCommit}
	if r.Merge != protocol.MergeSquash {
		if commits, err = gitwork.RunCommits(ctx, repo.Root(), *r.MergeCommit, r.ID); err != nil {
			return protocol.RunRevert{}, err
		}
		if len(commits) == 0 {
			return protocol.RunRevert{}, fmt.Errorf("run %s: no commit of the run under %s", r.ID, *r.MergeCommit)
		}
	}
	msg := fmt.Sprintf("Revert apserver run %s: %s\n\nThis undoes the run's %d commits merged into %s as %s.\n", r.ID, firstLine(r.Request), len(commits), r.BaseBranch, *r.MergeCommit)
	sha, err := repo.Revert(ctx, r.BaseBranch, commits, msg, []gitwork.Trailer{{Key: RevertTrailer, Value: r.ID}})
	if err != nil {
		return protocol.RunRevert{}, revertErr(r.ID, err)
	}
	return protocol.RunRevert{Kind: protocol.RevertCommit, Branch: r.BaseBranch, Commit: sha}, nil
}

// revertErr says why a revert stopped, for the client.
func revertErr(id string, err error) error {
	var ce *gitwork.ConflictError
	switch {
	case errors.As(err, &ce):
		return protocol.Errorf(protocol.ErrInvalidRequest, "run %s: the revert conflicts with later work in %s; nothing was changed", id, strings.Join(ce.Files, ", "))
	case errors.Is(err, gitwork.ErrBaseDirty):
		return protocol.Errorf(protocol.ErrInvalidRequest, "run %s: %v; commit or stash it, then revert again", id, err)
	}
	return err
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// undoOnGitHub undoes a run merged on GitHub: a revert commit on a branch
// of its own off the remote base (the run's commits on it, or the merge
// commit against its first parent), pushed, in a revert pull request
// for a human (or the repository's rules) to merge.
func (rn *Runner) undoOnGitHub(ctx context.Context, cfg runs.Config, repo *gitwork.Repo, r protocol.Run) (protocol.RunRevert, error) {
	g := cfg.GitHub
	if g == nil || g.Unavailable != "" || r.MergeCommit == nil {
		return protocol.RunRevert{}, protocol.Errorf(protocol.ErrInvalidRequest, "run %s was merged on GitHub, but GitHub cannot be used now", r.ID)
	}
	tip, err := gitwork.Fetch(ctx, repo.Root(), g.Remote, r.BaseBranch)
	if err != nil {
		return protocol.RunRevert{}, err
	}
	commits, err := gitwork.RunCommits(ctx, repo.Root(), *r.MergeCommit, r.ID)
	if err != nil {
		return protocol.RunRevert{}, err
	}
	if len(commits) == 0 {
		commits = []string{*r.MergeCommit} // GitHub's merge commit
	}
	branch := "apserver/revert-" + r.ID
	if err := repo.EnsureBranch(ctx, branch, tip); err != nil {
		return protocol.RunRevert{}, err
	}
	msg := fmt.Sprintf("Revert apserver run %s: %s\n\nThis undoes pull request #%d, merged into %s as %s.\n",
		r.ID, firstLine(r.Request), r.PullRequest.Number, r.BaseBranch, *r.MergeCommit)
	sha, err := repo.Revert(ctx, branch, commits, msg, []gitwork.Trailer{{Key: RevertTrailer, Value: r.ID}})
	if err != nil {
		return protocol.RunRevert{}, revertErr(r.ID, err)
	}
	if _, err := gitwork.Push(ctx, repo.Root(), g.Remote, branch); err != nil {
		return protocol.RunRevert{}, err
	}
	x := &run{rn: rn, id: r.ID, ctx: ctx}
	c, err := x.client(cfg)
	if err != nil {
		return protocol.RunRevert{}, err
	}
	pr, _, err := c.EnsurePR(ctx, github.NewPR{Head: branch, Base: r.BaseBranch,
		Title: github.Title("Revert: " + r.Request),
		Body:  fmt.Sprintf("Reverts #%d: undoes apserver run `%s` (%s).\n", r.PullRequest.Number, r.ID, firstLine(r.Request))})
	if err != nil {
		return protocol.RunRevert{}, err
	}
	if err := c.RequestReviewers(ctx, pr.Number, g.Reviewers, g.TeamReviewers); err != nil {
		rn.log.Warn("run/revert: requesting reviewers", "run", r.ID, "err", err)
	}
	return protocol.RunRevert{Kind: protocol.RevertPullRequest, Branch: branch, Commit: sha, PullRequest: prOut(pr)}, nil
}
