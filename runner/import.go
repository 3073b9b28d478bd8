package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"

	"github.com/apserver/apserver/github"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runs"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/tools/gitwork"
)

// Imported says what Import did with one run found in git.
type Imported struct {
	Run protocol.Run
	// Skipped says why the run was not imported ("" when it was).
	Skipped string
}

// Import rebuilds, from git alone, the runs recorded in the repository at
// dir — for a user whose data dir is gone or who works on a second
// machine: every local branch's .apserver/runs/<id>/context.json (the run
// as it was last committed: request, plan, tasks with their commits,
// clarifications, decisions, outcome, pull request), the newest record of
// each run winning; the merge commit from git (the branch's tip in its
// base, or the squash commit naming it). A run is stored as one
// `imported` event; one already in the store is left alone. Runs whose
// branch records no end (cancelled or failed before their end was
// committed) are skipped, saying so.
func (rn *Runner) Import(ctx context.Context, dir string) ([]Imported, error) {
	repo, err := gitwork.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	branches, err := repo.Branches(ctx)
	if err != nil {
		return nil, err
	}
	type found struct {
		run       protocol.Run
		decisions []runs.Decision
	}
	best := map[string]found{}
	for _, b := range branches {
		ids, err := repo.ListDir(ctx, b, ".apserver/runs")
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			raw, err := repo.ReadFile(ctx, b, path.Join(runs.Dir(id), "context.json"))
			if err != nil {
				continue
			}
			var cj struct {
				Run       *protocol.Run   `json:"run"`
				Decisions []runs.Decision `json:"decisions"`
			}
			if json.Unmarshal(raw, &cj) != nil || cj.Run == nil || cj.Run.ID != id {
				continue
			}
			if f, ok := best[id]; ok && f.run.UpdatedAtMs >= cj.Run.UpdatedAtMs && !(f.run.Status != protocol.RunCompleted && cj.Run.Status == protocol.RunCompleted) {
				continue
			}
			best[id] = found{*cj.Run, cj.Decisions}
		}
	}
	ids := make([]string, 0, len(best))
	for id := range best {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return best[ids[i]].run.CreatedAtMs < best[ids[j]].run.CreatedAtMs })
	db, err := rn.opts.Store()
	if err != nil {
		return nil, err
	}
	var out []Imported
	for _, id := range ids {
		f := best[id]
		r := f.run
		r.Cwd, r.Worktree = repo.Root(), ""
		if !r.Status.Final() {
			// A run that ended on GitHub (its pull request merged or
			// closed there) committed no end to its branch: ask GitHub.
			ended, why := rn.endOnGitHub(ctx, repo.Root(), r)
			if why != "" {
				out = append(out, Imported{Run: r, Skipped: why})
				continue
			}
			r = ended
		}
		if !r.Status.Final() {
			out = append(out, Imported{Run: r, Skipped: fmt.Sprintf("its branch records it %s: it ended (cancelled or failed) without committing its end", r.Status)})
			continue
		}
		if _, err := db.RunEvents(ctx, id); err == nil {
			out = append(out, Imported{Run: r, Skipped: "already in the data dir"})
			continue
		} else if !errors.Is(err, store.ErrNotFound) {
			return out, err
		}
		if r.MergeCommit == nil && r.Status == protocol.RunCompleted {
			if sha := mergedAs(ctx, repo, r); sha != "" {
				r.MergeCommit = &sha
			}
		}
		m := runs.New()
		ev := runs.Event{Type: runs.EvImported, AtMs: r.UpdatedAtMs, Run: &r, Decisions: f.decisions}
		if err := m.Accepts(ev); err != nil {
			out = append(out, Imported{Run: r, Skipped: err.Error()})
			continue
		}
		m.Apply(ev.AtMs, ev)
		if err := rn.store(ctx, m, ev); err != nil {
			return out, err
		}
		out = append(out, Imported{Run: m.Run()})
	}
	return out, nil
}

// mergedAs is the commit by which the run's branch landed on its base:
// the branch's tip when the base contains it (a fast-forward), the squash
// commit that names the tip, or "".
func mergedAs(ctx context.Context, repo *gitwork.Repo, r protocol.Run) string {
	tip, err := repo.HeadSHA(ctx, "refs/heads/"+r.Branch)
	if err != nil {
		return ""
	}
	if r.Merge == protocol.MergeSquash {
		if sha, ok, err := repo.FindOn(ctx, r.BaseBranch, []gitwork.Trailer{{Key: gitwork.SquashTrailer, Value: tip}}); err == nil && ok {
			return sha
		}
		return ""
	}
	if in, err := repo.IsAncestor(ctx, tip, "refs/heads/"+r.BaseBranch); err == nil && in {
		return tip
	}
	return ""
}

// endOnGitHub is a run whose branch records its pull request but not its
// end, as GitHub tells it: merged (completed, with the merge commit),
// closed without merging (cancelled), or still open ("": the run goes on
// elsewhere, or waits). why says why it cannot be told.
func (rn *Runner) endOnGitHub(ctx context.Context, root string, r protocol.Run) (protocol.Run, string) {
	noEnd := fmt.Sprintf("its branch records it %s: it ended (cancelled or failed) without committing its end", r.Status)
	gc := rn.githubConfig(ctx, root)
	switch {
	case gc == nil:
		return r, noEnd
	case gc.Unavailable != "":
		return r, noEnd + ", and GitHub, where it may have ended, cannot be asked: " + gc.Unavailable
	}
	tok, _ := github.Token(rn.getenv, gc.TokenEnv)
	c, err := github.New(github.Repo{Owner: gc.Owner, Name: gc.Name, REST: gc.REST, GraphQL: gc.GraphQL}, tok, nil)
	if err != nil {
		return r, noEnd + ": " + err.Error()
	}
	pr, ok, err := c.FindRunPR(ctx, r.Branch, r.ID)
	switch {
	case err != nil:
		return r, noEnd + ": " + err.Error()
	case !ok:
		return r, noEnd + " (and it has no pull request on GitHub)"
	}
	n := pr.Number
	pull := protocol.RunPullRequest{Number: n, URL: pr.URL, State: protocol.PullRequestOpen, HeadSHA: pr.HeadSHA}
	if r.PullRequest != nil {
		pull.Checks, pull.UnresolvedComments = r.PullRequest.Checks, r.PullRequest.UnresolvedComments
	}
	r.PullRequest = &pull
	switch {
	case pr.Merged:
		r.Status, r.Stage, r.WaitingFor = protocol.RunCompleted, protocol.StageDone, nil
		pull.State = protocol.PullRequestMerged
		if pr.MergeCommit != "" {
			sha := pr.MergeCommit
			r.MergeCommit = &sha
		}
		why := fmt.Sprintf("merged on GitHub as pull request #%d", n)
		r.Reason = &why
	case pr.State == "closed":
		r.Status, r.Stage, r.WaitingFor = protocol.RunCancelled, protocol.StageDone, nil
		pull.State = protocol.PullRequestClosed
		why := fmt.Sprintf("pull request #%d was closed on GitHub without merging", n)
		r.Reason = &why
	default:
		return r, fmt.Sprintf("its pull request #%d is still open on GitHub: the run is not over", n)
	}
	return r, ""
}
