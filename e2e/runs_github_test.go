package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/internal/githubfake"
	"github.com/apserver/apserver/model/scripted"
)

// Runs that end on GitHub (docs/github.md), against githubfake with a
// local bare repository as origin: the run pushes with the git CLI, the
// fake reads the branch heads from that repository.

const ghToken = "test-token-not-a-secret"

type ghEnv struct {
	fake *githubfake.Server
	repo *githubfake.Repo
	dir  string // the user's repository
	bare string // its origin
}

// ghSetup makes a repository whose origin is a bare repository the fake
// serves as acme/greet.
func ghSetup(t *testing.T) *ghEnv {
	t.Helper()
	dir := shoutRepo(t)
	bare := filepath.Join(t.TempDir(), "origin.git")
	git(t, filepath.Dir(bare), "init", "-q", "--bare", bare)
	git(t, dir, "remote", "add", "origin", bare)
	git(t, dir, "push", "-q", "origin", "main")
	fake := githubfake.New()
	t.Cleanup(fake.Close)
	fake.Token = ghToken
	r := fake.AddRepo("acme", "greet")
	fake.Do(func() { r.GitDir = bare })
	return &ghEnv{fake: fake, repo: r, dir: dir, bare: bare}
}

func (g *ghEnv) config(extra string) string {
	return fmt.Sprintf(`[github]
api_url = %q
repository = "acme/greet"
poll_interval_ms = 20
poll_max_ms = 200
reviewers = ["alice"]
labels = ["apserver"]
merge_method = "squash"
%s`, g.fake.URL, extra)
}

func (g *ghEnv) pr(t *testing.T) githubfake.PR {
	t.Helper()
	var out githubfake.PR
	g.fake.Do(func() {
		if len(g.repo.PRs) != 1 {
			t.Fatalf("the fake has %d pull requests, want 1", len(g.repo.PRs))
		}
		out = *g.repo.PRs[0]
	})
	return out
}

func green(string, int) []githubfake.CheckRun {
	return []githubfake.CheckRun{{Name: "test", Conclusion: "success"}}
}

var ghTask = planTask{ID: "g1", Title: "G1 create hello.txt", Description: "Create hello.txt.", Kind: "file_create",
	Dependencies: []string{}, Risk: "low", Acceptance: accept("test -f hello.txt"), Estimate: "1m"}

func ghRules(t *testing.T, more ...scripted.Rule) []scripted.Rule {
	return append([]scripted.Rule{
		reviewRule,
		{Match: "Plan this request", Steps: []scripted.Step{{Text: planJSON(t, ghTask)}}},
		taskRule("G1 create hello.txt", `echo hello > hello.txt`),
		taskRule("Address the review", `echo reviewed >> hello.txt`),
		taskRule("Fix the failing checks", `echo fixed >> hello.txt`),
	}, more...)
}

func (g *ghEnv) start(c *client, trust map[string]any) (id, branch string) {
	c.t.Helper()
	if trust == nil {
		trust = map[string]any{"planning": "auto"}
	}
	m := c.call("run/start", map[string]any{"cwd": g.dir, "request": "make a hello file", "baseBranch": "main", "trust": trust})
	return m.str("run.id"), m.str("run.branch")
}

// A run whose origin is the fake, under auto trust: the branch pushed, a
// draft PR with the generated body, marked ready after validation, checks
// polled, merged with the head SHA, the branch deleted.
func TestRunGitHubAutoMerge(t *testing.T) {
	t.Parallel()
	g := ghSetup(t)
	g.fake.Do(func() { g.repo.AutoChecks = green })
	model := startModel(t, ghRules(t)...)
	c := newRunsClient(t, model, faOptions{config: g.config(""), env: []string{"GITHUB_TOKEN=" + ghToken}})
	id, branch := g.start(c, nil)
	end := c.runEnd(id)
	if end.str("run.status") != "completed" || end.str("run.pullRequest.state") != "merged" || end.get("run.pullRequest.number") != 1.0 {
		t.Fatalf("run/completed = %s", end.Raw)
	}
	pr := g.pr(t)
	if !pr.OpenedDraft || pr.Draft || !pr.Merged || pr.MergeMethod != "squash" || pr.Base != "main" || pr.Head != branch {
		t.Errorf("PR %+v", pr)
	}
	if !strings.Contains(pr.Body, "<!-- apserver-run: "+id+" -->") || !strings.Contains(pr.Body, "G1 create hello.txt") ||
		!strings.Contains(pr.Body, "> make a hello file") {
		t.Errorf("PR body:\n%s", pr.Body)
	}
	if strings.Contains(pr.Body, ghToken) {
		t.Error("the token is in the PR body")
	}
	if strings.Join(pr.Reviewers, ",") != "alice" || strings.Join(pr.Labels, ",") != "apserver" {
		t.Errorf("reviewers %v labels %v", pr.Reviewers, pr.Labels)
	}
	// What was pushed and validated is what merged; main on the remote has it.
	if got := gitOut(t, g.bare, "rev-parse", "refs/heads/main"); got != pr.MergedHead || end.str("run.mergeCommit") != pr.MergeSHA {
		t.Errorf("remote main %s, merged head %s, run's merge commit %s (PR %s)", got, pr.MergedHead, end.str("run.mergeCommit"), pr.MergeSHA)
	}
	if gitOut(t, g.bare, "show", "main:hello.txt") != "hello" {
		t.Error("hello.txt is not on the remote's main")
	}
	g.fake.Do(func() {
		if strings.Join(g.repo.Deleted, ",") != branch {
			t.Errorf("deleted branches %v, want %s", g.repo.Deleted, branch)
		}
	})
	reqs := strings.Join(g.fake.Requests(), "\n")
	for _, want := range []string{"POST /api/v3/repos/acme/greet/pulls", "POST /api/graphql", "/check-runs", "PUT /api/v3/repos/acme/greet/pulls/1/merge"} {
		if !strings.Contains(reqs, want) {
			t.Errorf("no request %q among:\n%s", want, reqs)
		}
	}
	// The user's local main is untouched: the merge happened on GitHub.
	if n := len(strings.Fields(gitOut(t, g.dir, "log", "main", "--format=%H", "--grep", "Apserver-Task: g1"))); n != 0 {
		t.Errorf("the local main has the task's commit: merged locally too")
	}
	read := c.call("run/read", map[string]any{"runId": id})
	if read.str("run.pullRequest.url") == "" || read.str("run.pullRequest.checks.state") != "passed" {
		t.Errorf("run/read = %s", read.Raw)
	}
}

// Under manual trust the PR is left open with reviewers requested. A
// review with two comments from a collaborator and one from a bot becomes
// one fix task; both threads get a reply naming the fix commit and are
// resolved. After kill -9 and a restart nothing is answered twice; a
// human's merge on GitHub ends the run.
func TestRunGitHubReview(t *testing.T) {
	t.Parallel()
	g := ghSetup(t)
	g.fake.Do(func() { g.repo.AutoChecks = green })
	model := startModel(t, ghRules(t)...)
	dataDir := t.TempDir()
	opts := faOptions{dataDir: dataDir, config: g.config(""), env: []string{"GITHUB_TOKEN=" + ghToken}}
	c := newRunsClient(t, model, opts)
	id, _ := g.start(c, map[string]any{"planning": "auto", "implementation": "manual"})
	c.runWaiting(nil, id, "taskApproval")
	c.call("run/task/approve", map[string]any{"runId": id, "taskId": "g1"})
	w := c.runWaiting(nil, id, "review")
	if w.get("pullRequest.number") != 1.0 || w.str("pullRequest.state") != "open" {
		t.Errorf("run/updated = %s", w.Raw)
	}
	pr := g.pr(t)
	if pr.Merged || pr.Draft || strings.Join(pr.Reviewers, ",") != "alice" {
		t.Fatalf("PR under manual trust %+v", pr)
	}
	// A review: two comments by a collaborator, one by a bot.
	ids := []int64{g.fake.NewID(), g.fake.NewID(), g.fake.NewID()}
	g.fake.Do(func() {
		p := g.repo.PR(1)
		p.AddThread(ids[0], "hello.txt", 1, githubfake.Comment{ID: ids[0], ReviewID: 77, Author: "carol", Association: "COLLABORATOR", Body: "say reviewed too"})
		p.AddThread(ids[1], "hello.txt", 1, githubfake.Comment{ID: ids[1], ReviewID: 77, Author: "carol", Association: "COLLABORATOR", Body: "and keep hello"})
		p.AddThread(ids[2], "hello.txt", 1, githubfake.Comment{ID: ids[2], ReviewID: 77, Author: "lint[bot]", Bot: true, Association: "NONE", Body: "style nit"})
	})
	fix := c.waitFor("run/task/updated", func(m *message) bool {
		return m.str("runId") == id && m.str("task.status") == "completed" && strings.HasPrefix(m.str("task.id"), "review-")
	})
	commit := fix.str("task.commit")
	var replies func() []githubfake.Comment
	replies = func() []githubfake.Comment {
		var out []githubfake.Comment
		g.fake.Do(func() {
			for _, th := range g.repo.PR(1).Threads {
				for _, cm := range th.Comments {
					if cm.InReplyTo != 0 {
						out = append(out, *cm)
					}
				}
			}
		})
		return out
	}
	c.waitAfter(fix, "run/updated", func(m *message) bool {
		return m.str("runId") == id && m.str("waitingFor") == "review" && m.get("pullRequest.unresolvedComments") == 1.0
	})
	got := replies()
	if len(got) != 2 {
		t.Fatalf("replies %+v, want 2", got)
	}
	for _, r := range got {
		if !strings.Contains(r.Body, commit) || (r.InReplyTo != ids[0] && r.InReplyTo != ids[1]) {
			t.Errorf("reply %+v, want one naming %s to a collaborator's comment", r, commit)
		}
	}
	g.fake.Do(func() {
		th := g.repo.PR(1).Threads
		if !th[0].Resolved || !th[1].Resolved || th[2].Resolved {
			t.Errorf("resolved: %v %v %v, want true true false", th[0].Resolved, th[1].Resolved, th[2].Resolved)
		}
	})
	read := c.call("run/read", map[string]any{"runId": id})
	if n := len(read.get("run.plan.tasks").([]any)); n != 2 {
		t.Errorf("%d tasks, want g1 and one fix task for the review", n)
	}
	c.kill()

	// Restarted: it watches the PR again, answers nothing twice.
	before := len(g.fake.Requests())
	c2 := newRunsClient(t, model, opts)
	for deadline := time.Now().Add(time.Minute); ; {
		n := 0
		for _, r := range g.fake.Requests()[before:] {
			if strings.Contains(r, "/check-runs") {
				n++
			}
		}
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the restarted apserver does not watch the PR")
		}
		c2.call("run/read", map[string]any{"runId": id}) // a round trip, not a sleep
	}
	if got := replies(); len(got) != 2 {
		t.Errorf("after the restart %d replies, want still 2", len(got))
	}
	// A human merges it on GitHub: the run ends.
	g.fake.Do(func() {
		p := g.repo.PR(1)
		p.Merged, p.MergeSHA = true, g.repo.Head(p.Head)
	})
	end := c2.runEnd(id)
	if end.str("run.status") != "completed" || end.str("run.pullRequest.state") != "merged" {
		t.Errorf("run/completed = %s", end.Raw)
	}
}

func red(string, int) []githubfake.CheckRun {
	return []githubfake.CheckRun{{Name: "test", Conclusion: "failure", Summary: "1 test failed",
		Annotations: []githubfake.Annotation{{Path: "hello.txt", Line: 1, Level: "failure", Message: "expected the word fixed"}}}}
}

// A red check makes a fix task with the annotation in its objective, and
// the run goes on: pushed again, green, merged.
func TestRunGitHubRedCheck(t *testing.T) {
	t.Parallel()
	g := ghSetup(t)
	g.fake.Do(func() {
		g.repo.AutoChecks = func(sha string, n int) []githubfake.CheckRun {
			if n == 1 {
				return red(sha, n)
			}
			return green(sha, n)
		}
	})
	model := startModel(t, ghRules(t)...)
	c := newRunsClient(t, model, faOptions{config: g.config(""), env: []string{"GITHUB_TOKEN=" + ghToken}})
	id, _ := g.start(c, nil)
	end := c.runEnd(id)
	if end.str("run.status") != "completed" || end.str("run.pullRequest.state") != "merged" || end.get("run.counts.completed") != 2.0 {
		t.Fatalf("run/completed = %s", end.Raw)
	}
	fix := end.get("run.plan.tasks.1").(map[string]any)
	if fix["id"] != "ci-fix-1" || !strings.Contains(fix["description"].(string), "hello.txt:1 failure: expected the word fixed") {
		t.Errorf("fix task %v", fix)
	}
	if n := stepRequests(t, model, "expected the word fixed"); n == 0 {
		t.Error("the fix task's thread never saw the annotation")
	}
	if got := gitOut(t, g.bare, "show", "main:hello.txt"); got != "hello\nfixed" {
		t.Errorf("remote main:hello.txt = %q", got)
	}
}

// Three red check rounds in a row block the run with a repair proposal.
func TestRunGitHubThreeRedChecks(t *testing.T) {
	t.Parallel()
	g := ghSetup(t)
	g.fake.Do(func() { g.repo.AutoChecks = red })
	model := startModel(t, ghRules(t)...)
	c := newRunsClient(t, model, faOptions{config: g.config(""), env: []string{"GITHUB_TOKEN=" + ghToken}})
	id, _ := g.start(c, nil)
	w := c.runWaiting(nil, id, "repair")
	if w.str("status") != "paused" || !strings.Contains(w.str("reason"), "failed 3 times in a row") {
		t.Errorf("run/updated = %s", w.Raw)
	}
	read := c.call("run/read", map[string]any{"runId": id})
	if !strings.Contains(read.str("run.repairProposal.failure"), "expected the word fixed") || read.str("run.repairProposal.taskId") != "ci-fix-3" ||
		read.get("run.counts.completed") != 3.0 || read.get("run.counts.blocked") != 1.0 {
		t.Errorf("run/read = %s", read.Raw)
	}
	if g.pr(t).Merged {
		t.Error("merged with red checks")
	}
}

// Workflows waiting for approval: the run waits and says so in attention;
// once a human approved them and they passed, it merges.
func TestRunGitHubActionRequired(t *testing.T) {
	t.Parallel()
	g := ghSetup(t)
	g.fake.Do(func() {
		g.repo.AutoChecks = func(string, int) []githubfake.CheckRun {
			return []githubfake.CheckRun{{Name: "ci", Conclusion: "action_required"}}
		}
	})
	model := startModel(t, ghRules(t)...)
	c := newRunsClient(t, model, faOptions{config: g.config(""), env: []string{"GITHUB_TOKEN=" + ghToken}})
	id, _ := g.start(c, nil)
	c.runWaiting(nil, id, "checks")
	attn := c.waitFor("attention", func(m *message) bool {
		return m.str("items.0.runId") == id && strings.Contains(m.str("items.0.reason"), "approve")
	})
	_ = attn
	if g.pr(t).Merged {
		t.Fatal("merged while the workflows wait for approval")
	}
	g.fake.Do(func() {
		for _, cs := range g.repo.Checks {
			for _, c := range cs {
				c.Conclusion = "success"
			}
		}
	})
	if end := c.runEnd(id); end.str("run.pullRequest.state") != "merged" {
		t.Errorf("run/completed = %s", end.Raw)
	}
}

// A primary rate limit whose reset is in the future: the run says so and
// waits; one whose reset has passed: it tries again at once. Neither
// fails the run.
func TestRunGitHubRateLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		reset time.Duration
	}{{"past", -time.Hour}, {"future", 3 * time.Second}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := ghSetup(t)
			g.fake.Do(func() {
				g.repo.AutoChecks = func(string, int) []githubfake.CheckRun {
					return []githubfake.CheckRun{{Name: "test", Status: "in_progress"}}
				}
			})
			model := startModel(t, ghRules(t)...)
			c := newRunsClient(t, model, faOptions{config: g.config(""), env: []string{"GITHUB_TOKEN=" + ghToken}})
			id, _ := g.start(c, nil)
			// While the checks run, the next look at them is refused; then they pass.
			c.waitFor("run/updated", func(m *message) bool { return m.str("runId") == id && m.str("pullRequest.checks.state") == "pending" })
			g.fake.Fail(githubfake.Failure{Match: "check-runs", Kind: "primary", Reset: time.Now().Add(tc.reset)})
			g.fake.Do(func() {
				for _, cs := range g.repo.Checks {
					for _, c := range cs {
						c.Status, c.Conclusion = "completed", "success"
					}
				}
			})
			limited := c.waitFor("run/updated", func(m *message) bool {
				return m.str("runId") == id && strings.Contains(m.str("reason"), "GitHub rate limit")
			})
			if tc.reset > 0 && !strings.Contains(limited.str("reason"), "tries again in") {
				t.Errorf("reason %q, want the wait", limited.str("reason"))
			}
			if tc.reset < 0 && !strings.Contains(limited.str("reason"), "has reset") {
				t.Errorf("reason %q, want a retry now", limited.str("reason"))
			}
			if limited.str("status") != "running" {
				t.Errorf("status %s while rate limited, want running", limited.str("status"))
			}
			if end := c.runEnd(id); end.str("run.status") != "completed" || end.str("run.pullRequest.state") != "merged" || end.get("run.reason") != nil {
				t.Errorf("run/completed = %s", end.Raw)
			}
		})
	}
}

// A PR already open for the branch (GitHub answers 422 to another) is
// reused, never duplicated.
func TestRunGitHubExistingPR(t *testing.T) {
	t.Parallel()
	g := ghSetup(t)
	g.fake.Do(func() { g.repo.AutoChecks = green })
	model := startModel(t, ghRules(t)...)
	c := newRunsClient(t, model, faOptions{config: g.config(""), env: []string{"GITHUB_TOKEN=" + ghToken}})
	id, branch := g.start(c, nil)
	g.fake.Do(func() {
		g.repo.PRs = append(g.repo.PRs, &githubfake.PR{Number: 1, NodeID: "PR_greet_1", Head: branch, Base: "main", Draft: true, Title: "opened before"})
	})
	if end := c.runEnd(id); end.str("run.pullRequest.state") != "merged" || end.get("run.pullRequest.number") != 1.0 {
		t.Errorf("run/completed = %s", end.Raw)
	}
	if pr := g.pr(t); !pr.Merged || pr.Title != "opened before" {
		t.Errorf("PR %+v", pr)
	}
}

// Branch protection refusing the merge: the run waits for a human with
// GitHub's reason; once the rule is met, run/resume merges.
func TestRunGitHubProtectedBranch(t *testing.T) {
	t.Parallel()
	g := ghSetup(t)
	g.fake.Do(func() {
		g.repo.AutoChecks = green
		g.repo.Protected, g.repo.ProtectedReason = true, "At least 1 approving review is required by reviewers with write access."
	})
	model := startModel(t, ghRules(t)...)
	c := newRunsClient(t, model, faOptions{config: g.config(""), env: []string{"GITHUB_TOKEN=" + ghToken}})
	id, _ := g.start(c, nil)
	w := c.runWaiting(nil, id, "github")
	if w.str("status") != "waiting" || !strings.Contains(w.str("reason"), "approving review is required") {
		t.Errorf("run/updated = %s", w.Raw)
	}
	c.waitFor("attention", func(m *message) bool {
		return m.str("items.0.runId") == id && strings.Contains(m.str("items.0.reason"), "approving review is required")
	})
	g.fake.Do(func() { g.repo.Protected = false })
	c.call("run/resume", map[string]any{"runId": id})
	if end := c.runEnd(id); end.str("run.pullRequest.state") != "merged" {
		t.Errorf("run/completed = %s", end.Raw)
	}
}

// No token: the run says so and ends as a local branch, never pushed,
// never failed; GitHub is not asked anything.
func TestRunGitHubMissingToken(t *testing.T) {
	t.Parallel()
	g := ghSetup(t)
	model := startModel(t, ghRules(t)...)
	c := newRunsClient(t, model, faOptions{config: g.config(""), env: []string{"GITHUB_TOKEN=", "GH_TOKEN="}})
	id, branch := g.start(c, nil)
	end := c.runEnd(id)
	if end.str("run.status") != "completed" || !strings.Contains(end.str("run.reason"), "no token") ||
		!strings.Contains(end.str("run.reason"), "local branch") || end.get("run.pullRequest") != nil {
		t.Fatalf("run/completed = %s", end.Raw)
	}
	gitOut(t, g.dir, "rev-parse", "--verify", branch)
	if out := gitOut(t, g.bare, "branch", "--list", "apserver/*"); out != "" {
		t.Errorf("pushed without a token: %s", out)
	}
	if reqs := g.fake.Requests(); len(reqs) != 0 {
		t.Errorf("GitHub was asked %v", reqs)
	}
}

// `apserver run` prints the pull request's URL.
func TestRunGitHubHeadless(t *testing.T) {
	t.Parallel()
	g := ghSetup(t)
	g.fake.Do(func() { g.repo.AutoChecks = green })
	model := startModel(t, ghRules(t)...)
	home := t.TempDir()
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte(g.config("")), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, "run", "--config", cfg, "--data-dir", t.TempDir(), "--model", "scripted-model",
		"--base-url", model.URL(), "--base", "main", "--trust-planning", "auto", "make a hello file")
	cmd.Dir = g.dir
	cmd.Env = []string{"HOME=" + home, "OPENAI_API_KEY=test", "PATH=" + os.Getenv("PATH"), "GITHUB_TOKEN=" + ghToken}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("apserver run: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	want := fmt.Sprintf("pull request #1 %s/acme/greet/pull/1 (merged)\n", g.fake.URL)
	if !strings.Contains(out.String(), want) {
		t.Errorf("stdout:\n%s\nwant a line %q", out.String(), want)
	}
	if strings.Contains(out.String()+errb.String(), ghToken) {
		t.Error("the token is in apserver run's output")
	}
}

// Someone else pushes to the run's branch while its checks run: the run
// stops and asks, and never pushes over that commit.
func TestRunGitHubHumanMovedHead(t *testing.T) {
	t.Parallel()
	g := ghSetup(t)
	g.fake.Do(func() {
		g.repo.AutoChecks = func(string, int) []githubfake.CheckRun {
			return []githubfake.CheckRun{{Name: "test", Status: "in_progress"}}
		}
	})
	model := startModel(t, ghRules(t)...)
	c := newRunsClient(t, model, faOptions{config: g.config(""), env: []string{"GITHUB_TOKEN=" + ghToken}})
	id, branch := g.start(c, nil)
	c.waitFor("run/updated", func(m *message) bool { return m.str("runId") == id && m.str("pullRequest.checks.state") == "pending" })
	other := filepath.Join(t.TempDir(), "other")
	git(t, filepath.Dir(other), "clone", "-q", "-b", branch, g.bare, other)
	git(t, other, "-c", "user.name=h", "-c", "user.email=h@x", "commit", "-q", "--allow-empty", "-m", "a human's commit")
	git(t, other, "push", "-q", "origin", branch)
	human := gitOut(t, g.bare, "rev-parse", "refs/heads/"+branch)
	w := c.runWaiting(nil, id, "github")
	if !strings.Contains(w.str("reason"), "did not push") {
		t.Errorf("run/updated = %s", w.Raw)
	}
	if got := gitOut(t, g.bare, "rev-parse", "refs/heads/"+branch); got != human || g.pr(t).Merged {
		t.Errorf("the branch is at %s (the human's commit %s), merged %v", got, human, g.pr(t).Merged)
	}
}

// A token GitHub refuses: the run waits with GitHub's answer, and
// run/resume goes on once the token is good.
func TestRunGitHubBadToken(t *testing.T) {
	t.Parallel()
	g := ghSetup(t)
	g.fake.Do(func() { g.repo.AutoChecks = green })
	g.fake.Fail(githubfake.Failure{Match: "pulls$", Kind: "badToken"})
	model := startModel(t, ghRules(t)...)
	c := newRunsClient(t, model, faOptions{config: g.config(""), env: []string{"GITHUB_TOKEN=" + ghToken}})
	id, _ := g.start(c, nil)
	w := c.runWaiting(nil, id, "github")
	if !strings.Contains(w.str("reason"), "refused the token") || !strings.Contains(w.str("reason"), "Bad credentials") || strings.Contains(w.Raw, ghToken) {
		t.Errorf("run/updated = %s", w.Raw)
	}
	c.call("run/resume", map[string]any{"runId": id})
	if end := c.runEnd(id); end.str("run.pullRequest.state") != "merged" {
		t.Errorf("run/completed = %s", end.Raw)
	}
}

// push = "after_plan": the draft is open before the first task's commit,
// its body follows the run, and it is marked ready at the end.
func TestRunGitHubPushAfterPlan(t *testing.T) {
	t.Parallel()
	g := ghSetup(t)
	g.fake.Do(func() { g.repo.AutoChecks = green })
	model := startModel(t, ghRules(t)...)
	c := newRunsClient(t, model, faOptions{config: g.config(`push = "after_plan"`), env: []string{"GITHUB_TOKEN=" + ghToken}})
	id, _ := g.start(c, nil)
	opened := c.waitFor("run/updated", func(m *message) bool { return m.str("runId") == id && m.str("pullRequest.state") == "draft" })
	committed := c.waitFor("run/task/updated", func(m *message) bool { return m.str("task.id") == "g1" && m.str("task.status") == "completed" })
	if opened.Seq > committed.Seq {
		t.Errorf("the draft opened after the task's commit")
	}
	if end := c.runEnd(id); end.str("run.pullRequest.state") != "merged" {
		t.Fatalf("run/completed = %s", end.Raw)
	}
	if pr := g.pr(t); !pr.OpenedDraft || pr.Draft || pr.Edits == 0 || !strings.Contains(pr.Body, "| completed |") {
		t.Errorf("PR %+v", pr)
	}
}

// A run merged on GitHub is undone by a revert pull request: a branch off
// the remote base whose files are what the base had before the run.
func TestRunGitHubRevert(t *testing.T) {
	t.Parallel()
	g := ghSetup(t)
	g.fake.Do(func() { g.repo.AutoChecks = green })
	before := gitOut(t, g.bare, "rev-parse", "main^{tree}")
	model := startModel(t, ghRules(t)...)
	c := newRunsClient(t, model, faOptions{config: g.config(""), env: []string{"GITHUB_TOKEN=" + ghToken}})
	id, _ := g.start(c, nil)
	if end := c.runEnd(id); end.str("run.pullRequest.state") != "merged" {
		t.Fatalf("run/completed = %s", end.Raw)
	}
	rv := c.call("run/revert", map[string]any{"runId": id})
	branch := "apserver/revert-" + id
	if rv.str("revert.kind") != "pullRequest" || rv.str("revert.branch") != branch || rv.get("revert.pullRequest.number") != 2.0 {
		t.Fatalf("run/revert = %s", rv.Raw)
	}
	if got := gitOut(t, g.bare, "rev-parse", branch+"^{tree}"); got != before {
		t.Errorf("the revert branch's files differ from main's before the run:\n%s", gitOut(t, g.bare, "diff", "--stat", before, branch))
	}
	g.fake.Do(func() {
		p := g.repo.PR(2)
		if p == nil || p.Head != branch || p.Base != "main" || !strings.Contains(p.Body, "Reverts #1") {
			t.Errorf("revert PR %+v", p)
		}
	})
	if r := c.call("run/read", map[string]any{"runId": id}); r.str("run.reverts.0.pullRequest.url") == "" {
		t.Errorf("run/read = %s", r.Raw)
	}
}
