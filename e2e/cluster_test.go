package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/internal/pgtest"
	"github.com/apserver/apserver/model/scripted"
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

// clusterRemote makes a shout repository whose origin is a bare
// repository (the project's remote, where workers fetch and push).
func clusterRemote(t *testing.T) (repo, remote string) {
	t.Helper()
	repo = shoutRepo(t)
	remote = filepath.Join(t.TempDir(), "remote.git")
	git(t, repo, "clone", "-q", "--bare", repo, remote)
	git(t, repo, "remote", "add", "origin", remote)
	return repo, remote
}

// worker is an `apserver worker` process.
type worker struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
}

// startWorker starts `apserver worker` on the database with the scripted
// model; it is killed when the test ends.
func startWorker(t *testing.T, model *scripted.Server, url, name string) *worker {
	t.Helper()
	home := t.TempDir()
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, "worker", "--database-url", url, "--id", name, "--concurrency", "1",
		"--repo-cache", filepath.Join(home, "cache"), "--data-dir", filepath.Join(home, "data"),
		"--config", cfg, "--model", "scripted-model", "--log-level", "info")
	cmd.Env = serverEnv(t, home, model)
	w := &worker{cmd: cmd, stderr: &syncBuffer{}}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("worker %s stderr:\n%s", name, w.stderr.String())
		}
	})
	return w
}

// With [cluster] execute = "workers", the editor's apserver only appends
// and enqueues: a run is driven by apserver workers, which fetch the
// project from its remote, commit each task once and push; the editor's
// client follows the run to its end through PostgreSQL.
func TestClusterWorkers(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	if out, err := exec.Command(binPath, "cluster", "migrate", "--database-url", pg.URL).CombinedOutput(); err != nil {
		t.Fatalf("apserver cluster migrate: %v\n%s", err, out)
	}
	model := startModel(t, shoutRules(t)...)
	repo, remote := clusterRemote(t)
	cfg := "[cluster]\ndatabase_url = \"" + pg.URL + "\"\nexecute = \"workers\"\n"
	ed := newRunsClient(t, model, faOptions{config: cfg})
	for _, name := range []string{"w1", "w2", "w3"} {
		startWorker(t, model, pg.URL, name)
	}
	id := ed.startRun(map[string]any{"cwd": repo, "request": "add a shout option to greet.sh", "baseBranch": "main",
		"trust": map[string]any{"planning": "auto"}})
	if end := ed.runEnd(id); end.str("run.status") != "completed" || end.get("run.counts.completed") != 3.0 {
		t.Fatalf("run end = %s", end.Raw)
	}
	for _, task := range []string{"t1", "t2", "t3"} {
		if n := len(strings.Fields(gitOut(t, remote, "log", "main", "--format=%H", "--grep", "Apserver-Task: "+task))); n != 1 {
			t.Errorf("%d commits of %s on the remote's main, want 1", n, task)
		}
	}
	if n := len(strings.Fields(gitOut(t, repo, "log", "main", "--format=%H", "--grep", "Apserver-Task: t1"))); n != 0 {
		t.Errorf("the editor's own repository got %d commits: the workers should have done the work", n)
	}
}
