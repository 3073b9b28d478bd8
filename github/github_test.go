package github_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/github"
	"github.com/apserver/apserver/internal/githubfake"
)

const token = "ghp_secret-token-value"

// setup starts a fake with one repository, acme/app, whose branch
// "run/1" is at headSHA, and a client for it.
func setup(t *testing.T) (*githubfake.Server, *githubfake.Repo, *github.Client) {
	t.Helper()
	fake := githubfake.New()
	t.Cleanup(fake.Close)
	fake.Token = token
	repo := fake.AddRepo("acme", "app")
	fake.Do(func() { repo.Heads["run/1"] = headSHA; repo.Heads["main"] = baseSHA })
	r, err := github.ParseRemote("https://github.example.com/acme/app.git", fake.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	c, err := github.New(r, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fake, repo, c
}

const (
	headSHA = "1111111111111111111111111111111111111111"
	baseSHA = "0000000000000000000000000000000000000000"
)

func TestParseRemote(t *testing.T) {
	for _, tc := range []struct {
		remote, api                  string
		host, owner, name, rest, gql string
		err                          bool
	}{
		{remote: "https://github.com/acme/app.git", host: "github.com", owner: "acme", name: "app", rest: "https://api.github.com/", gql: "https://api.github.com/graphql"},
		{remote: "git@github.com:acme/app.git", host: "github.com", owner: "acme", name: "app", rest: "https://api.github.com/", gql: "https://api.github.com/graphql"},
		{remote: "ssh://git@github.com/acme/app", host: "github.com", owner: "acme", name: "app", rest: "https://api.github.com/", gql: "https://api.github.com/graphql"},
		{remote: "https://x-access-token:abc@GitHub.com/acme/app/", host: "github.com", owner: "acme", name: "app", rest: "https://api.github.com/", gql: "https://api.github.com/graphql"},
		{remote: "https://ghe.corp.example/team/svc.git", host: "ghe.corp.example", owner: "team", name: "svc", rest: "https://ghe.corp.example/api/v3/", gql: "https://ghe.corp.example/api/graphql"},
		{remote: "git@ghe.corp.example:team/svc.git", host: "ghe.corp.example", owner: "team", name: "svc", rest: "https://ghe.corp.example/api/v3/", gql: "https://ghe.corp.example/api/graphql"},
		{remote: "https://github.com/acme/app.git", api: "http://127.0.0.1:8080/api/v3/", host: "github.com", owner: "acme", name: "app", rest: "http://127.0.0.1:8080/api/v3/", gql: "http://127.0.0.1:8080/api/graphql"},
		{remote: "https://github.com/acme/app.git", api: "http://127.0.0.1:8080", host: "github.com", owner: "acme", name: "app", rest: "http://127.0.0.1:8080/api/v3/", gql: "http://127.0.0.1:8080/api/graphql"},
		{remote: "/srv/git/app.git", err: true},
		{remote: "../app.git", err: true},
		{remote: "file:///srv/git/app.git", err: true},
		{remote: "https://github.com/acme", err: true},
		{remote: "", err: true},
	} {
		r, err := github.ParseRemote(tc.remote, tc.api)
		if tc.err {
			if !errors.Is(err, github.ErrNotGitHub) {
				t.Errorf("ParseRemote(%q) = %+v, %v; want ErrNotGitHub", tc.remote, r, err)
			}
			if err != nil && strings.Contains(err.Error(), "abc") {
				t.Errorf("ParseRemote(%q): the error shows the credentials: %v", tc.remote, err)
			}
			continue
		}
		if err != nil || r.Host != tc.host || r.Owner != tc.owner || r.Name != tc.name || r.REST != tc.rest || r.GraphQL != tc.gql {
			t.Errorf("ParseRemote(%q, %q) = %+v, %v", tc.remote, tc.api, r, err)
		}
	}
}

func TestToken(t *testing.T) {
	env := map[string]string{"GITHUB_TOKEN": "a", "GH_TOKEN": "b", "MINE": "c"}
	get := func(k string) string { return env[k] }
	if tok, from := github.Token(get, ""); tok != "a" || from != "GITHUB_TOKEN" {
		t.Errorf("Token = %q from %q", tok, from)
	}
	if tok, from := github.Token(get, "MINE"); tok != "c" || from != "MINE" {
		t.Errorf("Token(MINE) = %q from %q", tok, from)
	}
	delete(env, "GITHUB_TOKEN")
	if tok, from := github.Token(get, ""); tok != "b" || from != "GH_TOKEN" {
		t.Errorf("Token without GITHUB_TOKEN = %q from %q", tok, from)
	}
	if tok, _ := github.Token(func(string) string { return "" }, ""); tok != "" {
		t.Errorf("Token with none = %q", tok)
	}
	_, err := github.New(github.Repo{REST: "http://127.0.0.1/api/v3/"}, "", nil)
	if !github.IsKind(err, github.Unauthorized) || !strings.Contains(err.Error(), "GITHUB_TOKEN") {
		t.Errorf("New without a token = %v; want Unauthorized naming GITHUB_TOKEN", err)
	}
}

// TestDraftPRLifecycle: a draft is opened once — a second EnsurePR (a
// restart) reuses it — its body is kept current, it is marked ready,
// reviewers and labels are set, and it merges only at the validated SHA.
func TestDraftPRLifecycle(t *testing.T) {
	fake, repo, c := setup(t)
	ctx := context.Background()
	body := github.Body(github.RunInfo{RunID: "run-7", Request: "Add a shout function", Branch: "run/1", Base: "main",
		Tasks: []github.TaskInfo{{ID: "t1", Title: "Write shout", Status: "done", Commit: headSHA, Evidence: "go test ./... passed"}}})
	pr, created, err := c.EnsurePR(ctx, github.NewPR{Head: "run/1", Base: "main", Title: github.Title("Add a shout function"), Body: body, Draft: true})
	if err != nil || !created || !pr.Draft || pr.Number != 1 || pr.HeadSHA != headSHA {
		t.Fatalf("EnsurePR = %+v, created %v, %v", pr, created, err)
	}
	again, created, err := c.EnsurePR(ctx, github.NewPR{Head: "run/1", Base: "main", Title: "x", Body: body, Draft: true})
	if err != nil || created || again.Number != pr.Number {
		t.Fatalf("second EnsurePR = %+v, created %v, %v; want the same PR", again, created, err)
	}
	fake.Do(func() {
		if len(repo.PRs) != 1 {
			t.Errorf("%d PRs, want 1", len(repo.PRs))
		}
		if github.RunIDFromBody(repo.PRs[0].Body) != "run-7" {
			t.Errorf("the body does not name the run:\n%s", repo.PRs[0].Body)
		}
	})
	if err := c.SetBody(ctx, pr.Number, body+"more"); err != nil {
		t.Fatal(err)
	}
	if err := c.RequestReviewers(ctx, pr.Number, []string{"alice"}, []string{"core"}); err != nil {
		t.Fatal(err)
	}
	if err := c.AddLabels(ctx, pr.Number, []string{"apserver"}); err != nil {
		t.Fatal(err)
	}
	// A draft does not merge.
	if _, err := c.Merge(ctx, pr.Number, headSHA, github.MergeSquash, "t"); !github.IsKind(err, github.MergeRefused) {
		t.Errorf("Merge of a draft = %v, want MergeRefused", err)
	}
	if err := c.MarkReady(ctx, pr); err != nil {
		t.Fatal(err)
	}
	// Someone pushed after validation: the guard refuses.
	fake.Do(func() { repo.Heads["run/1"] = "2222222222222222222222222222222222222222" })
	if _, err := c.Merge(ctx, pr.Number, headSHA, github.MergeSquash, "t"); !github.IsKind(err, github.Conflict) {
		t.Errorf("Merge after the head moved = %v, want Conflict", err)
	}
	if _, err := c.Merge(ctx, pr.Number, "", github.MergeSquash, "t"); err == nil {
		t.Error("Merge without a SHA succeeded")
	}
	fake.Do(func() { repo.Heads["run/1"] = headSHA })
	sha, err := c.Merge(ctx, pr.Number, headSHA, github.MergeSquash, "t")
	if err != nil || sha == "" {
		t.Fatalf("Merge = %q, %v", sha, err)
	}
	if got, err := c.GetPR(ctx, pr.Number); err != nil || !got.Merged || got.MergeCommit != sha {
		t.Errorf("GetPR after the merge = %+v, %v; want merged as %s", got, err, sha)
	}
	if err := c.DeleteBranch(ctx, "run/1"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteBranch(ctx, "run/1"); err != nil {
		t.Errorf("deleting a deleted branch = %v, want nil", err)
	}
	fake.Do(func() {
		p := repo.PRs[0]
		if p.Draft || !p.Merged || p.MergedHead != headSHA || p.MergeMethod != "squash" || p.Edits != 1 ||
			strings.Join(p.Reviewers, ",") != "alice" || strings.Join(p.Teams, ",") != "core" || strings.Join(p.Labels, ",") != "apserver" {
			t.Errorf("PR state %+v", *p)
		}
		if strings.Join(repo.Deleted, ",") != "run/1" {
			t.Errorf("deleted %v", repo.Deleted)
		}
	})
}

// TestMergeRefusals: branch protection is MergeRefused with GitHub's
// reason; a repository that wants auto-merge gets it, guarded by the SHA.
func TestMergeRefusals(t *testing.T) {
	fake, repo, c := setup(t)
	ctx := context.Background()
	pr, _, err := c.EnsurePR(ctx, github.NewPR{Head: "run/1", Base: "main", Title: "t", Body: "b"})
	if err != nil {
		t.Fatal(err)
	}
	fake.Do(func() {
		repo.Protected, repo.ProtectedReason = true, "At least 1 approving review is required by reviewers with write access."
	})
	_, err = c.Merge(ctx, pr.Number, headSHA, github.MergeCommit, "")
	if !github.IsKind(err, github.MergeRefused) || !strings.Contains(err.Error(), "approving review is required") {
		t.Errorf("Merge on a protected branch = %v", err)
	}
	fake.Do(func() { repo.Protected, repo.RequireAutoMerge = false, true })
	if _, err := c.Merge(ctx, pr.Number, headSHA, github.MergeCommit, ""); !github.IsKind(err, github.MergeRefused) {
		t.Errorf("direct Merge where auto-merge is required = %v", err)
	}
	if err := c.EnableAutoMerge(ctx, pr, github.MergeSquash, "3333333333333333333333333333333333333333"); !github.IsKind(err, github.GraphQL) {
		t.Errorf("EnableAutoMerge at a stale SHA = %v, want a GraphQL error", err)
	}
	if err := c.EnableAutoMerge(ctx, pr, github.MergeSquash, headSHA); err != nil {
		t.Fatal(err)
	}
	fake.Do(func() {
		if p := repo.PRs[0]; !p.Merged || p.AutoMerge != "squash" {
			t.Errorf("after auto-merge: %+v", *p)
		}
	})
}

// TestChecks: pending, passed, failed with annotations and the job log's
// tail, and action_required (a workflow waiting for approval) — from
// check runs and commit statuses together.
func TestChecks(t *testing.T) {
	fake, repo, c := setup(t)
	ctx := context.Background()
	get := func() github.Checks {
		t.Helper()
		cs, err := c.Checks(ctx, headSHA)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	if s := get().State; s != github.ChecksPending {
		t.Errorf("no checks yet: %s, want pending", s)
	}
	id1, id2 := fake.NewID(), fake.NewID()
	var lint *githubfake.CheckRun
	fake.Do(func() {
		repo.AddCheck(id1, headSHA, githubfake.CheckRun{Name: "test", Status: "in_progress", App: "github-actions"})
		lint = repo.AddCheck(id2, headSHA, githubfake.CheckRun{Name: "lint", Conclusion: "success"})
		repo.Statuses[headSHA] = []githubfake.Status{{Context: "ci/legacy", State: "success"}}
	})
	if s := get().State; s != github.ChecksPending {
		t.Errorf("one in progress: %s, want pending", s)
	}
	log := strings.Repeat("noise line\n", 5000) + "--- FAIL: TestShout (0.00s)\n    shout_test.go:9: got \"hi\", want \"HI\"\n"
	fake.Do(func() {
		cr := repo.Checks[headSHA][0]
		cr.Status, cr.Conclusion = "completed", "failure"
		cr.Annotations = []githubfake.Annotation{{Path: "shout_test.go", Line: 9, Level: "failure", Message: `got "hi", want "HI"`}}
		repo.Logs[id1] = log
	})
	cs := get()
	failed := cs.Failed()
	if cs.State != github.ChecksFailed || len(failed) != 1 || failed[0].Name != "test" {
		t.Fatalf("a failed check: %+v", cs)
	}
	f := failed[0]
	if len(f.Annotations) != 1 || f.Annotations[0].Path != "shout_test.go" || f.Annotations[0].Line != 9 {
		t.Errorf("annotations %+v", f.Annotations)
	}
	if !strings.Contains(f.LogTail, "--- FAIL: TestShout") || len(f.LogTail) > github.LogTailBytes+100 || !strings.Contains(f.LogTail, "earlier bytes of the log cut") {
		t.Errorf("log tail (%d bytes) %q…", len(f.LogTail), f.LogTail[:min(200, len(f.LogTail))])
	}
	d := f.Describe()
	if !strings.Contains(d, `shout_test.go:9 failure: got "hi", want "HI"`) || !strings.Contains(d, "--- FAIL: TestShout") {
		t.Errorf("Describe:\n%s", d)
	}
	fake.Do(func() { lint.Conclusion = "action_required" })
	if s := get().State; s != github.ChecksActionRequired {
		t.Errorf("a workflow waiting for approval: %s, want actionRequired", s)
	}
	fake.Do(func() {
		lint.Conclusion = "success"
		repo.Checks[headSHA][0].Conclusion = "success"
		repo.Statuses[headSHA] = append(repo.Statuses[headSHA], githubfake.Status{Context: "ci/other", State: "pending"})
	})
	if s := get().State; s != github.ChecksPending {
		t.Errorf("a pending status: %s, want pending", s)
	}
	fake.Do(func() { repo.Statuses[headSHA][1].State = "success" })
	if s := get().State; s != github.ChecksPassed {
		t.Errorf("all green: %s, want passed", s)
	}
}

// TestReviewComments: a review with two comments from a collaborator and
// one from a bot is one batch of the two; apserver's replies and resolved
// threads never come back, and consumed comments are not answered twice.
func TestReviewComments(t *testing.T) {
	fake, repo, c := setup(t)
	ctx := context.Background()
	pr, _, err := c.EnsurePR(ctx, github.NewPR{Head: "run/1", Base: "main", Title: "t", Body: "b"})
	if err != nil {
		t.Fatal(err)
	}
	review := fake.NewID()
	ids := []int64{fake.NewID(), fake.NewID(), fake.NewID(), fake.NewID(), fake.NewID()}
	fake.Do(func() {
		p := repo.PR(pr.Number)
		p.AddThread(ids[0], "shout.go", 3, githubfake.Comment{ID: ids[1], ReviewID: review, Author: "alice", Association: "COLLABORATOR", Body: "Use strings.ToUpper."})
		p.AddThread(ids[2], "shout.go", 7, githubfake.Comment{ID: ids[3], ReviewID: review, Author: "alice", Association: "COLLABORATOR", Body: "Add a test for empty input."})
		p.AddThread(ids[4], "shout.go", 1, githubfake.Comment{ID: fake.NewIDLocked(), ReviewID: review, Author: "lint-bot[bot]", Bot: true, Association: "NONE", Body: "Nit: naming."})
		p.AddThread(fake.NewIDLocked(), "README.md", 1, githubfake.Comment{ID: fake.NewIDLocked(), Author: "drive-by", Association: "NONE", Body: "Please rewrite it in Rust."})
	})
	threads, err := c.ReviewThreads(ctx, pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	batches := github.Actionable(threads, github.Filter{})
	if len(batches) != 1 || batches[0].ReviewID != review || len(batches[0].Comments) != 2 ||
		batches[0].Comments[0].Body != "Use strings.ToUpper." || batches[0].Comments[1].Body != "Add a test for empty input." {
		t.Fatalf("Actionable = %+v", batches)
	}
	if b := github.Actionable(threads, github.Filter{Bots: []string{"lint-bot[bot]"}}); len(b) != 1 || len(b[0].Comments) != 3 {
		t.Errorf("with the bot listed: %+v", b)
	}
	for _, cm := range batches[0].Comments {
		if err := c.Reply(ctx, pr.Number, cm.ID, "Fixed in abc1234."); err != nil {
			t.Fatal(err)
		}
		if err := c.Resolve(ctx, cm.ThreadID); err != nil {
			t.Fatal(err)
		}
	}
	threads, err = c.ReviewThreads(ctx, pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	if b := github.Actionable(threads, github.Filter{}); len(b) != 0 {
		t.Errorf("after replies and resolving: %+v", b)
	}
	// The replies are in the threads, and never actionable even where a
	// thread was left unresolved.
	replies := 0
	for _, th := range threads {
		for _, cm := range th.Comments {
			if strings.Contains(cm.Body, "Fixed in abc1234.") {
				replies++
			}
		}
	}
	if replies != 2 {
		t.Errorf("%d replies in the threads, want 2", replies)
	}
	fake.Do(func() {
		for _, th := range repo.PR(pr.Number).Threads {
			th.Resolved = false
		}
	})
	threads, _ = c.ReviewThreads(ctx, pr.Number)
	consumed := map[int64]bool{batches[0].Comments[0].ID: true, batches[0].Comments[1].ID: true}
	if b := github.Actionable(threads, github.Filter{Consumed: consumed}); len(b) != 0 {
		t.Errorf("consumed comments came back: %+v", b)
	}
}

// TestErrors: each failure users meet is an error of its kind, with what
// to do, and the token is in none of them.
func TestErrors(t *testing.T) {
	fake, _, c := setup(t)
	ctx := context.Background()
	findPR := func(c *github.Client) error { _, _, err := c.FindPR(ctx, "run/1"); return err }
	now := time.Now()
	check := func(name string, err error, kind github.Kind, want string) {
		t.Helper()
		if !github.IsKind(err, kind) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %s containing %q", name, err, kind, want)
		}
		if err != nil && strings.Contains(err.Error(), token) {
			t.Errorf("%s: the error shows the token: %v", name, err)
		}
	}

	fake.Fail(githubfake.Failure{Match: "GET .*/pulls$", Kind: "primary", Reset: now.Add(30 * time.Minute)})
	_, _, err := c.FindPR(ctx, "run/1")
	check("primary rate limit", err, github.RateLimited, "rate limit resets at")
	if w := github.Wait(err, now); w < 29*time.Minute || w > 31*time.Minute {
		t.Errorf("Wait = %s, want about 30m", w)
	}
	// A reset in the past: no wait.
	if w := github.Wait(err, now.Add(time.Hour)); w != 0 {
		t.Errorf("Wait after the reset = %s, want 0", w)
	}

	fake2, _, c2 := setup(t)
	fake2.Fail(githubfake.Failure{Match: "GET .*/pulls$", Kind: "primary", Reset: now.Add(-time.Minute)})
	_, _, err = c2.FindPR(ctx, "run/1")
	check("primary rate limit, reset past", err, github.RateLimited, "rate limit")
	if w := github.Wait(err, now); w != 0 {
		t.Errorf("Wait with the reset in the past = %s, want 0", w)
	}
	if _, _, err := c2.FindPR(ctx, "run/1"); err != nil {
		t.Errorf("after a reset in the past the next call fails: %v", err)
	}

	// go-github remembers a rate limit and refuses further calls until it
	// ends, as it should: each case below gets a client of its own.
	for _, tc := range []struct {
		name string
		f    githubfake.Failure
		call func(*github.Client) error
		kind github.Kind
		want string
		wait time.Duration
	}{
		{"secondary rate limit", githubfake.Failure{Kind: "secondary", RetryAfter: 90 * time.Second}, findPR, github.RateLimited, "retry after 1m30s", 90 * time.Second},
		{"bad token", githubfake.Failure{Kind: "badToken"}, findPR, github.Unauthorized, "Bad credentials", 0},
		{"under-scoped token", githubfake.Failure{Kind: "scopes"}, findPR, github.Unauthorized, "read:org", 0},
		{"server error", githubfake.Failure{Kind: "server"}, findPR, github.Network, "502", 0},
		{"GraphQL error in a 200", githubfake.Failure{Match: "POST /api/graphql", Kind: "graphqlError"},
			func(c *github.Client) error { return c.MarkReady(ctx, github.PR{Number: 1, NodeID: "PR_x"}) }, github.GraphQL, "Something went wrong", 0},
		{"GraphQL rate limit", githubfake.Failure{Match: "POST /api/graphql", Kind: "secondary", RetryAfter: time.Minute},
			func(c *github.Client) error { return c.Resolve(ctx, "PRRT_1") }, github.RateLimited, "secondary rate limit", time.Minute},
	} {
		f, _, c := setup(t)
		f.Fail(tc.f)
		err := tc.call(c)
		check(tc.name, err, tc.kind, tc.want)
		if w := github.Wait(err, now); w != tc.wait {
			t.Errorf("%s: Wait = %s, want %s", tc.name, w, tc.wait)
		}
	}

	f3, _, c3 := setup(t)
	f3.Close()
	check("network", findPR(c3), github.Network, "")

	_, _, c4 := setup(t)
	_, err = c4.GetPR(ctx, 99)
	check("no such PR", err, github.NotFound, "Not Found")
}
