package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/internal/drive"
	"github.com/apserver/apserver/internal/githubfake"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runs"
	"github.com/apserver/apserver/tools/sandbox"
)

// A run's GitHub configuration from [github], origin and the environment:
// off, on, or on but unavailable with the reason a run shows.
func TestGitHubConfig(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	on, off := true, false
	rn := func(g config.GitHubConfig, env map[string]string) *Runner {
		c := config.Default()
		c.GitHub = g
		return &Runner{opts: Options{Config: c, Getenv: func(k string) string { return env[k] }}}
	}
	def := config.Default().GitHub
	tok := map[string]string{"GITHUB_TOKEN": "t"}
	with := func(f func(*config.GitHubConfig)) config.GitHubConfig { g := def; f(&g); return g }

	if g := rn(def, tok).githubConfig(ctx, dir); g != nil {
		t.Errorf("no origin, nothing configured: %+v, want GitHub off", g)
	}
	if g := rn(with(func(g *config.GitHubConfig) { g.Enabled = &on }), tok).githubConfig(ctx, dir); g == nil || !strings.Contains(g.Unavailable, "no remote origin") {
		t.Errorf("enabled without origin: %+v", g)
	}
	exec.Command("git", "-C", dir, "remote", "add", "origin", "/some/local/path.git").Run()
	if g := rn(def, tok).githubConfig(ctx, dir); g != nil {
		t.Errorf("a local origin, nothing configured: %+v, want off", g)
	}
	g := rn(with(func(g *config.GitHubConfig) { g.Repository = "acme/greet"; g.APIURL = "http://127.0.0.1:9/" }), tok).githubConfig(ctx, dir)
	if g == nil || g.Unavailable != "" || g.Owner != "acme" || g.Name != "greet" || g.REST != "http://127.0.0.1:9/api/v3/" || g.GraphQL != "http://127.0.0.1:9/api/graphql" {
		t.Errorf("repository and api_url: %+v", g)
	}
	exec.Command("git", "-C", dir, "remote", "set-url", "origin", "git@github.com:acme/greet.git").Run()
	if g := rn(def, nil).githubConfig(ctx, dir); g == nil || !strings.Contains(g.Unavailable, "no token") {
		t.Errorf("a GitHub origin without a token: %+v", g)
	}
	g = rn(def, tok).githubConfig(ctx, dir)
	if g == nil || g.Unavailable != "" || g.Owner != "acme" || g.REST != "https://api.github.com/" || !g.Draft || !g.DeleteBranch {
		t.Errorf("a GitHub origin with a token: %+v", g)
	}
	if g := rn(with(func(g *config.GitHubConfig) { g.Enabled = &off }), tok).githubConfig(ctx, dir); g != nil {
		t.Errorf("enabled = false: %+v", g)
	}
	if g := rn(with(func(g *config.GitHubConfig) { g.TokenEnv = "MY_GH" }), tok).githubConfig(ctx, dir); g == nil || !strings.Contains(g.Unavailable, "no token") {
		t.Errorf("token_env names an empty variable: %+v", g)
	}
	// Where the work is done by others (a cluster's workers take every
	// slow effect), the token is theirs: none is needed here.
	elsewhere := rn(def, nil)
	elsewhere.opts.Queue = takesAll{}
	if g := elsewhere.githubConfig(ctx, dir); g == nil || g.Unavailable != "" || g.Owner != "acme" {
		t.Errorf("a GitHub origin, no token here, the work done by workers: %+v", g)
	}
}

// takesAll is a WorkQueue that carries out every effect elsewhere.
type takesAll struct{}

func (takesAll) Takes(runs.Effect) bool { return true }

// token_env's variable is hidden from commands, whatever its name.
func TestGitHubTokenEnvHidden(t *testing.T) {
	// A name of its own each time: the sandbox never forgets a secret
	// name, so a second run (-count=2) must not reuse the first's.
	name := fmt.Sprintf("APSERVER_TEST_GH_CREDLESS_NAME_%d", credlessRuns.Add(1))
	if sandbox.SecretEnv(name) {
		t.Fatalf("%s already counts as secret; the test needs a name that does not", name)
	}
	c := config.Default()
	c.GitHub.TokenEnv = name
	rn := New(Options{Config: c})
	defer rn.Close()
	if !sandbox.SecretEnv(name) {
		t.Errorf("token_env %s reaches commands", name)
	}
}

// credlessRuns numbers TestGitHubTokenEnvHidden's runs.
var credlessRuns atomic.Int64

// Replies asked again (a restart between the reply and its event) are not
// written twice: each reply carries a marker naming the comment.
func TestReplyNotTwice(t *testing.T) {
	fake := githubfake.New()
	defer fake.Close()
	repo := fake.AddRepo("acme", "greet")
	fake.Do(func() {
		repo.Heads["b"] = "1111111111111111111111111111111111111111"
		repo.PRs = append(repo.PRs, &githubfake.PR{Number: 1, NodeID: "PR_1", Head: "b", Base: "main"})
		p := repo.PR(1)
		p.AddThread(1, "a.go", 1, githubfake.Comment{ID: 11, ReviewID: 5, Author: "carol", Association: "COLLABORATOR", Body: "one"})
		p.AddThread(2, "a.go", 2, githubfake.Comment{ID: 12, ReviewID: 5, Author: "carol", Association: "COLLABORATOR", Body: "two"})
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	x := &run{rn: &Runner{opts: Options{Getenv: func(string) string { return "tok" }}, log: slog.New(slog.NewTextHandler(io.Discard, nil))},
		id: "r1", owner: drive.NewOwner(ctx, 16), ctx: ctx}
	cfg := runs.Config{ID: "r1", GitHub: &runs.GitHubConfig{Owner: "acme", Name: "greet", REST: fake.APIURL(), GraphQL: fake.URL + "/api/graphql"}}
	e := runs.ReplyAndResolve{PR: protocol.RunPullRequest{Number: 1}, Commit: "abc123", TaskID: "review-1",
		Comments: []runs.ReviewComment{{ID: 11, ThreadID: "PRRT_1"}, {ID: 12, ThreadID: "PRRT_2"}}}
	for range 2 {
		if err := x.reply(ctx, cfg, e); err != nil {
			t.Fatal(err)
		}
	}
	fake.Do(func() {
		for _, th := range repo.PR(1).Threads {
			if len(th.Comments) != 2 || !th.Resolved || !strings.Contains(th.Comments[1].Body, "abc123") {
				t.Errorf("thread %s: resolved %v, %d comments: %+v", th.ID, th.Resolved, len(th.Comments), th.Comments[len(th.Comments)-1])
			}
		}
	})
	if x.owner.Queued() != 2 {
		t.Errorf("%d results posted, want 2 (one per call)", x.owner.Queued())
	}
}
