package e2e

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/apserver/apserver/internal/pgtest"
)

// Two editors on two apservers pointed at one PostgreSQL database
// ([cluster] database_url) see the same run: the run started on the
// first waits for its plan's approval, the second lists it and approves
// it; the run then completes, each task committed exactly once, and the
// first apserver's client sees the run end too, told by NOTIFY. The
// cluster's status counts the completed run.
func TestClusterTwoEditorsOneRun(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	if out, err := exec.Command(binPath, "cluster", "migrate", "--database-url", pg.URL).CombinedOutput(); err != nil ||
		!strings.Contains(string(out), "migrated") {
		t.Fatalf("apserver cluster migrate: %v\n%s", err, out)
	}
	model := startModel(t, shoutRules(t)...)
	repo := shoutRepo(t)
	cfg := "[cluster]\ndatabase_url = \"" + pg.URL + "\"\n"
	a := newRunsClient(t, model, faOptions{config: cfg})
	b := newRunsClient(t, model, faOptions{config: cfg})

	id := a.startRun(map[string]any{"cwd": repo, "request": "add a shout option to greet.sh", "baseBranch": "main"})
	a.runWaiting(nil, id, "planApproval")

	list := b.call("run/list", map[string]any{})
	if list.str("runs.0.id") != id || list.str("runs.0.waitingFor") != "planApproval" {
		t.Fatalf("run/list on the second apserver = %s; want the first's run, waiting for its plan's approval", list.Raw)
	}
	b.call("run/plan/approve", map[string]any{"runId": id})
	if end := b.runEnd(id); end.str("run.status") != "completed" || end.get("run.counts.completed") != 3.0 {
		t.Fatalf("run end on the approving apserver = %s", end.Raw)
	}
	if end := a.runEnd(id); end.str("run.status") != "completed" {
		t.Fatalf("run end on the starting apserver = %s", end.Raw)
	}
	for _, task := range []string{"t1", "t2", "t3"} {
		if n := len(strings.Fields(gitOut(t, repo, "log", "main", "--format=%H", "--grep", "Apserver-Task: "+task))); n != 1 {
			t.Errorf("%d commits of %s, want 1", n, task)
		}
	}
	if r := a.call("run/read", map[string]any{"runId": id}); r.str("run.status") != "completed" {
		t.Errorf("run/read on the first apserver = %s", r.Raw)
	}
	out, err := exec.Command(binPath, "cluster", "status", "--database-url", pg.URL).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "runs: 1 completed") || !strings.Contains(string(out), "jobs: 0 queued") {
		t.Errorf("apserver cluster status: %v\n%s", err, out)
	}
}
