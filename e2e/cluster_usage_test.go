package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/cluster"
)

// TestClusterUsageCountsAgainstBudget: the manager of an editor-side
// apserver with [cluster] execute = "workers" starts a blueprint's task as
// a run, which a worker carries out (its task and reviewer threads answer
// on the worker). The worker records the tokens of those responses with
// the run in PostgreSQL, so the editor side's project/status counts them
// and a token budget smaller than them stops the next tick with
// budget_exhausted. (Before, the worker recorded them in its own SQLite:
// the editor side counted 0 tokens and started the next run.)
func TestClusterUsageCountsAgainstBudget(t *testing.T) {
	t.Parallel()
	pg := migratedPG(t)
	e, remote, bp := clusterProject(t)

	w := startWorker(t, e.model, pg.URL, "w1", "")
	cfg := "[cluster]\ndatabase_url = \"" + pg.URL + "\"\nexecute = \"workers\"\n"
	c := newRunsClient(t, e.model, faOptions{dataDir: e.dataDir, config: cfg})
	c.wait = 3 * time.Minute
	const budget = 50
	if up := c.call("project/settings/update", map[string]any{"cwd": e.repo, "mode": "full_auto", "blueprintId": bp, "maxParallelRuns": 1,
		"budget": map[string]any{"tokensPerDay": budget}}); up.str("settings.mode") != "full_auto" {
		t.Fatalf("project/settings/update = %s", up.Raw)
	}
	c.call("manager/tick", map[string]any{"cwd": e.repo})
	id := c.waitFor("run/started", nil).str("run.id")
	if end := c.runEnd(id); end.str("run.status") != "completed" {
		t.Fatalf("the run on the worker ended %s", end.Raw)
	}
	// The work was the worker's: the run's commit is in its clone, and
	// the run's branch is on the remote.
	// (The worktree itself may already be gone: a finished run's
	// worktree is removed. The worker's clone keeps the run's commit.)
	var committed bool
	clones, _ := filepath.Glob(filepath.Join(w.cache, "repos", "*"))
	for _, clone := range clones {
		if strings.TrimSpace(gitOut(t, clone, "log", "--all", "--format=%H", "--grep", "Apserver-Run: "+id)) != "" {
			committed = true
		}
	}
	if !committed {
		t.Errorf("no commit of run %s in the worker's clones %v (cache %s)", id, clones, w.cache)
	}
	if refs := gitOut(t, remote, "for-each-ref", "--format=%(refname)"); !strings.Contains(refs, "refs/heads/apserver/"+id[:8]) {
		t.Errorf("the run's branch is not on the remote:\n%s", refs)
	}

	st := c.call("project/status", map[string]any{"cwd": e.repo})
	tokens, _ := st.get("spend.tokens").(float64)
	// The task's implementer (two responses) and reviewer: each reports
	// at least 100 input tokens.
	if tokens < 300 || !strings.HasPrefix(st.str("spend.exhausted"), "tokens today: ") {
		t.Errorf("project/status after the worker's run = %s; want its tokens counted and the budget of %d exhausted", st.Raw, budget)
	}
	if n := len(c.find("run/started", nil)); n != 1 {
		t.Errorf("%d runs started, want 1 (the worker's tokens spent the budget)", n)
	}
}

// TestClusterUsageHereTakeUp: with execute = "here" a run taken up by
// another apserver (its first one killed -9 in the middle of t2) keeps
// its usage in one place, PostgreSQL: the planner's responses, answered
// on the first apserver, and t3's, answered on the second, are both
// there. (Before, each process recorded into its own SQLite, and the
// first one's was lost with it.)
func TestClusterUsageHereTakeUp(t *testing.T) {
	t.Parallel()
	pg, _, a, b, id := hereRunInT2(t)
	a.kill()
	if end := b.runEnd(id); end.str("run.status") != "completed" {
		t.Fatalf("run end on the apserver that took it up = %s", end.Raw)
	}

	ctx := context.Background()
	pool, err := cluster.Connect(ctx, pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	rows, err := pool.Query(ctx, `SELECT DISTINCT stage || ':' || task_id FROM apserver_run_usage WHERE run_id = $1 AND input_tokens > 0 ORDER BY 1`, id)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// planning: on the first apserver only; t3 and its review: on the
	// second only.
	for _, want := range []string{"planning:", "task:t1", "task:t2", "task:t3", "review:t3"} {
		if !slices.Contains(got, want) {
			t.Errorf("the run's usage in PostgreSQL has %v, no %s", got, want)
		}
	}
	s, err := cluster.NewStore(pool)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := s.RunsUsage(ctx, []string{id}, 0)
	if err != nil || len(sum) == 0 {
		t.Errorf("RunsUsage(%s) = %+v, %v; want the run's usage", id, sum, err)
	}
}
