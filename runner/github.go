package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/apserver/apserver/github"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runs"
	"github.com/apserver/apserver/tools/gitwork"
)

// The GitHub stage's effects (runs/github.go decides; this carries out):
// the push with the git CLI, the rest through package github. The token
// is read from the environment each time and appears nowhere else.

// githubConfig is a new run's GitHub configuration from [github] and the
// repository's origin: nil when the run does not use GitHub (disabled, or
// a remote that is not GitHub's with nothing configured), Unavailable set
// when it should but cannot (no origin, no token).
func (rn *Runner) githubConfig(ctx context.Context, root string) *runs.GitHubConfig {
	gc := rn.opts.Config.GitHub
	if gc.Enabled != nil && !*gc.Enabled {
		return nil
	}
	explicit := gc.Enabled != nil || gc.Repository != ""
	out := &runs.GitHubConfig{Remote: "origin", TokenEnv: gc.TokenEnv, Push: gc.Push, Draft: gc.Draft,
		Reviewers: gc.Reviewers, TeamReviewers: gc.TeamReviewers, Labels: gc.Labels, MergeMethod: gc.MergeMethod,
		AutoMerge: gc.AutoMerge, Bots: gc.Bots, DeleteBranch: gc.DeleteBranchAfterMerge,
		PollMs: gc.PollInterval.Milliseconds(), PollMaxMs: gc.PollMax.Milliseconds()}
	if out.MergeMethod == "" {
		out.MergeMethod = "merge"
	}
	remote, err := gitwork.RemoteURL(ctx, root, out.Remote)
	var repo github.Repo
	switch {
	case err != nil:
		if !explicit {
			return nil
		}
		out.Unavailable = "the repository has no remote origin to push the branch to"
		return out
	case gc.Repository != "":
		owner, name, _ := strings.Cut(gc.Repository, "/")
		repo = github.Repo{Owner: owner, Name: name, REST: "https://api.github.com/", GraphQL: "https://api.github.com/graphql"}
		if gc.APIURL != "" {
			if repo.REST, repo.GraphQL, err = github.Endpoints(gc.APIURL); err != nil {
				out.Unavailable = err.Error()
				return out
			}
		}
	default:
		if repo, err = github.ParseRemote(remote, gc.APIURL); err != nil {
			if !explicit {
				return nil
			}
			out.Unavailable = "origin is not a GitHub remote; set [github] repository"
			return out
		}
	}
	out.Owner, out.Name, out.REST, out.GraphQL = repo.Owner, repo.Name, repo.REST, repo.GraphQL
	if tok, _ := github.Token(rn.getenv, gc.TokenEnv); tok == "" && !rn.workElsewhere() {
		out.Unavailable = "no token: set GITHUB_TOKEN or GH_TOKEN, or name a variable with [github] token_env"
	}
	return out
}

// workElsewhere reports whether the runs' work is done by other processes
// (the cluster's workers take it from the queue): the GitHub token is
// theirs, not this process's.
func (rn *Runner) workElsewhere() bool {
	return rn.opts.Queue != nil && rn.opts.Queue.Takes(runs.CreateWorktree{})
}

func (rn *Runner) getenv(k string) string {
	if rn.opts.Getenv != nil {
		return rn.opts.Getenv(k)
	}
	return os.Getenv(k)
}

// client is a GitHub client for the run's repository, with the token the
// environment holds now.
func (x *run) client(cfg runs.Config) (*github.Client, error) {
	g := cfg.GitHub
	tok, _ := github.Token(x.rn.getenv, g.TokenEnv)
	return github.New(github.Repo{Owner: g.Owner, Name: g.Name, REST: g.REST, GraphQL: g.GraphQL}, tok, nil)
}

// ghError posts an error of the GitHub stage as the run's event.
func (x *run) ghError(err error) {
	kind := "other"
	var e *github.Error
	switch {
	case errors.As(err, &e):
		kind = e.Kind.String()
	case errors.Is(err, gitwork.ErrPushRejected):
		kind = "pushRejected"
	}
	now := time.UnixMilli(x.rn.now())
	x.result(runs.Event{Type: runs.EvGitHubError, Reason: err.Error(),
		GitHub: &runs.GitHubData{Kind: kind, WaitMs: github.Wait(err, now).Milliseconds()}})
}

// ghWork carries out one GitHub effect; it reports whether e was one.
func (x *run) ghWork(ctx context.Context, cfg runs.Config, e runs.Effect) bool {
	var err error
	switch e := e.(type) {
	case runs.PushBranch:
		err = x.push(ctx, cfg, e)
	case runs.OpenPR:
		err = x.openPR(ctx, cfg, e)
	case runs.MarkReady:
		err = x.markReady(ctx, cfg, e)
	case runs.PollPR:
		err = x.pollPR(ctx, cfg, e)
	case runs.ReplyAndResolve:
		err = x.reply(ctx, cfg, e)
	case runs.MergePR:
		err = x.mergePR(ctx, cfg, e)
	default:
		return false
	}
	if err != nil && ctx.Err() == nil {
		x.rn.log.Warn("run: GitHub step", "run", x.id, "effect", fmt.Sprintf("%T", e), "err", err)
		x.ghError(err)
	}
	return true
}

// push commits the run's artifacts and pushes its branch; never forced.
func (x *run) push(ctx context.Context, cfg runs.Config, e runs.PushBranch) error {
	if err := writeArtifacts(cfg.Worktree, e.Snapshot); err != nil {
		return err
	}
	if err := x.writeRunMemory(ctx, cfg, e.Snapshot); err != nil {
		return err
	}
	msg := fmt.Sprintf("apserver run %s: state for review\n", cfg.ID)
	if _, err := gitwork.Commit(ctx, cfg.Worktree, msg, []gitwork.Trailer{{Key: "Apserver-Run", Value: cfg.ID},
		{Key: "Apserver-Step", Value: fmt.Sprintf("push-%d", e.N)}}); err != nil {
		return err
	}
	sha, err := gitwork.Push(ctx, cfg.Worktree, cfg.GitHub.Remote, cfg.Branch)
	if err != nil {
		return err
	}
	x.result(runs.Event{Type: runs.EvPushed, Commit: sha})
	return nil
}

// body is the pull request's description, generated from the run.
func body(cfg runs.Config, s runs.Snapshot) string {
	r := s.Run
	info := github.RunInfo{RunID: r.ID, Request: r.Request, Branch: r.Branch, Base: r.BaseBranch,
		Status: fmt.Sprintf("%s (%s)", r.Status, r.Stage)}
	ev := map[string]string{}
	for _, a := range s.Attempts {
		if a.OK {
			ev[a.TaskID] = strings.TrimSpace(strings.ReplaceAll(a.Report, "\n", "; "))
			info.Validation = fmt.Sprintf("Task %s passed validation: %s", a.TaskID, strings.TrimSpace(a.Report))
		}
	}
	for _, t := range r.Plan.Tasks {
		ti := github.TaskInfo{ID: t.ID, Title: t.ID + " " + t.Title, Status: string(t.Status), Evidence: ev[t.ID]}
		if t.Commit != nil {
			ti.Commit = *t.Commit
		}
		info.Tasks = append(info.Tasks, ti)
	}
	for _, c := range r.Clarifications {
		if c.Answer != nil {
			info.Clarifications = append(info.Clarifications, github.QA{Question: c.Question, Answer: *c.Answer})
		}
	}
	for _, d := range s.Decisions {
		info.Decisions = append(info.Decisions, d.Text)
	}
	return github.Body(info)
}

func prOut(p github.PR) *protocol.RunPullRequest {
	st := protocol.PullRequestOpen
	switch {
	case p.Merged:
		st = protocol.PullRequestMerged
	case p.State == "closed":
		st = protocol.PullRequestClosed
	case p.Draft:
		st = protocol.PullRequestDraft
	}
	return &protocol.RunPullRequest{Number: p.Number, URL: p.URL, State: st, HeadSHA: p.HeadSHA}
}

// openPR opens the run's pull request, or takes the one open for its
// branch (never a second), then asks for reviewers and labels.
func (x *run) openPR(ctx context.Context, cfg runs.Config, e runs.OpenPR) error {
	c, err := x.client(cfg)
	if err != nil {
		return err
	}
	g := cfg.GitHub
	pr, _, err := c.EnsurePR(ctx, github.NewPR{Head: cfg.Branch, Base: cfg.BaseBranch, Title: github.Title(cfg.Request),
		Body: body(cfg, e.Snapshot), Draft: e.Draft})
	if err != nil {
		return err
	}
	if err := c.RequestReviewers(ctx, pr.Number, g.Reviewers, g.TeamReviewers); err != nil {
		return err
	}
	if err := c.AddLabels(ctx, pr.Number, g.Labels); err != nil {
		return err
	}
	x.result(runs.Event{Type: runs.EvPROpened, GitHub: &runs.GitHubData{PR: prOut(pr)}})
	return nil
}

// updateBody rewrites the body; best effort (the next one catches up).
func (x *run) updateBody(ctx context.Context, cfg runs.Config, e runs.UpdatePRBody) {
	c, err := x.client(cfg)
	if err == nil {
		err = c.SetBody(ctx, e.Number, body(cfg, e.Snapshot))
	}
	if err != nil && ctx.Err() == nil {
		x.rn.log.Warn("run: updating the pull request's body", "run", x.id, "err", err)
	}
}

func (x *run) markReady(ctx context.Context, cfg runs.Config, e runs.MarkReady) error {
	c, err := x.client(cfg)
	if err != nil {
		return err
	}
	pr, err := c.GetPR(ctx, e.PR.Number)
	if err != nil {
		return err
	}
	if pr.Draft {
		if err := c.MarkReady(ctx, pr); err != nil {
			return err
		}
	}
	x.result(runs.Event{Type: runs.EvPRReady})
	return nil
}

// sleep waits d, or until the run stops; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// pollPR looks at the pull request: its state and head, the checks of the
// head (with each failure's annotations and log tail), and the first
// batch of review comments to act on.
func (x *run) pollPR(ctx context.Context, cfg runs.Config, e runs.PollPR) error {
	if !sleep(ctx, time.Duration(e.DelayMs)*time.Millisecond) {
		return nil
	}
	c, err := x.client(cfg)
	if err != nil {
		return err
	}
	pr, err := c.GetPR(ctx, e.PR.Number)
	if err != nil {
		return err
	}
	out := prOut(pr)
	p := runs.Poll{State: out.State, HeadSHA: pr.HeadSHA, MergeCommit: pr.MergeCommit}
	if out.State == protocol.PullRequestMerged || out.State == protocol.PullRequestClosed {
		if out.State == protocol.PullRequestMerged && cfg.GitHub.DeleteBranch {
			x.deleteBranch(ctx, c, cfg)
		}
		x.result(runs.Event{Type: runs.EvPRPolled, GitHub: &runs.GitHubData{Poll: &p}})
		return nil
	}
	if pr.HeadSHA != "" {
		cs, err := c.Checks(ctx, pr.HeadSHA)
		if err != nil {
			return err
		}
		p.Checks = protocol.RunPullRequestChecks{State: string(cs.State), Summary: checksSummary(cs)}
		for _, f := range cs.Failed() {
			p.Failures = append(p.Failures, f.Describe())
		}
	}
	threads, err := c.ReviewThreads(ctx, pr.Number)
	if err != nil {
		return err
	}
	consumed := map[int64]bool{}
	for _, id := range e.Consumed {
		consumed[id] = true
	}
	for _, t := range threads {
		if !t.Resolved {
			p.Unresolved++
		}
	}
	if bs := github.Actionable(threads, github.Filter{Consumed: consumed, Bots: cfg.GitHub.Bots}); len(bs) > 0 {
		for _, cm := range bs[0].Comments {
			p.Review = append(p.Review, runs.ReviewComment{ID: cm.ID, ThreadID: cm.ThreadID, Author: cm.Author,
				Body: cm.Body, Path: cm.Path, Line: cm.Line})
		}
	}
	x.result(runs.Event{Type: runs.EvPRPolled, GitHub: &runs.GitHubData{Poll: &p}})
	return nil
}

// checksSummary is one line: how many checks are in each state.
func checksSummary(cs github.Checks) string {
	if len(cs.Checks) == 0 {
		return "no checks reported yet"
	}
	n := map[string]int{}
	var order []string
	for _, c := range cs.Checks {
		k := c.Conclusion
		if c.Status != "completed" {
			k = "pending"
		}
		if k == "" {
			k = "completed"
		}
		if n[k] == 0 {
			order = append(order, k)
		}
		n[k]++
	}
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = fmt.Sprintf("%d %s", n[k], k)
	}
	s := fmt.Sprintf("%d checks: %s", len(cs.Checks), strings.Join(parts, ", "))
	for _, c := range cs.Checks {
		if c.Conclusion == "action_required" && c.URL != "" {
			s += "; approve at " + c.URL
			break
		}
	}
	return s
}

// replyMarker marks apserver's answer to one comment, so that an answer
// asked again after a restart is not written twice.
func replyMarker(id int64) string { return fmt.Sprintf("<!-- apserver-reply: %d -->", id) }

// reply answers each comment naming the fix commit and resolves its
// thread; comments answered before (the marker) are not answered again.
func (x *run) reply(ctx context.Context, cfg runs.Config, e runs.ReplyAndResolve) error {
	c, err := x.client(cfg)
	if err != nil {
		return err
	}
	threads, err := c.ReviewThreads(ctx, e.PR.Number)
	if err != nil {
		return err
	}
	byID := map[string]github.Thread{}
	for _, t := range threads {
		byID[t.ID] = t
	}
	var ids []int64
	for _, cm := range e.Comments {
		t := byID[cm.ThreadID]
		answered := false
		for _, o := range t.Comments {
			if strings.Contains(o.Body, replyMarker(cm.ID)) {
				answered = true
			}
		}
		if !answered {
			text := fmt.Sprintf("Addressed in %s (task %s of apserver run `%s`).\n%s", e.Commit, e.TaskID, cfg.ID, replyMarker(cm.ID))
			if err := c.Reply(ctx, e.PR.Number, cm.ID, text); err != nil {
				return err
			}
		}
		if !t.Resolved && cm.ThreadID != "" {
			if err := c.Resolve(ctx, cm.ThreadID); err != nil {
				return err
			}
			t.Resolved = true
			byID[cm.ThreadID] = t
		}
		ids = append(ids, cm.ID)
	}
	x.result(runs.Event{Type: runs.EvReplied, GitHub: &runs.GitHubData{IDs: ids}})
	return nil
}

// mergePR merges the pull request at the SHA that was validated (or
// enables auto-merge), then deletes the branch when configured.
func (x *run) mergePR(ctx context.Context, cfg runs.Config, e runs.MergePR) error {
	c, err := x.client(cfg)
	if err != nil {
		return err
	}
	method := github.MergeMethod(e.Method)
	if e.Auto {
		pr, err := c.GetPR(ctx, e.PR.Number)
		if err != nil {
			return err
		}
		if !pr.Merged {
			if err := c.EnableAutoMerge(ctx, pr, method, e.SHA); err != nil {
				return err
			}
			if pr, err = c.GetPR(ctx, e.PR.Number); err != nil {
				return err
			}
		}
		if !pr.Merged {
			x.result(runs.Event{Type: runs.EvPRMerged, OK: false})
			return nil
		}
		if e.DeleteBranch {
			x.deleteBranch(ctx, c, cfg)
		}
		x.result(runs.Event{Type: runs.EvPRMerged, OK: true, Commit: pr.MergeCommit})
		return nil
	}
	title := fmt.Sprintf("%s (#%d)", github.Title(cfg.Request), e.PR.Number)
	sha, err := c.Merge(ctx, e.PR.Number, e.SHA, method, title)
	if err != nil {
		// Merged already (a restart after the merge): take it.
		if pr, gerr := c.GetPR(ctx, e.PR.Number); gerr == nil && pr.Merged {
			sha, err = pr.MergeCommit, nil
		}
	}
	if err != nil {
		return err
	}
	if e.DeleteBranch {
		x.deleteBranch(ctx, c, cfg)
	}
	x.result(runs.Event{Type: runs.EvPRMerged, OK: true, Commit: sha})
	return nil
}

func (x *run) deleteBranch(ctx context.Context, c *github.Client, cfg runs.Config) {
	if err := c.DeleteBranch(ctx, cfg.Branch); err != nil && ctx.Err() == nil {
		x.rn.log.Warn("run: deleting the merged branch on GitHub", "run", x.id, "branch", cfg.Branch, "err", err)
	}
}
