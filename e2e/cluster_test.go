package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

	// PostgreSQL goes down for a while: requests that need it fail with
	// the reason, and both apservers carry on once it is back (the first
	// one listens again to follow the run).
	pg.Stop()
	b.callErr("run/list", map[string]any{}, -32603, "")
	pg.Start()
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
	cache  string
	stderr *syncBuffer
}

// startWorker starts `apserver worker` on the database with the scripted
// model; it is killed when the test ends.
func startWorker(t *testing.T, model *scripted.Server, url, name, config string, env ...string) *worker {
	t.Helper()
	home := t.TempDir()
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(home, "cache")
	cmd := exec.Command(binPath, "worker", "--database-url", url, "--id", name, "--concurrency", "1",
		"--repo-cache", cache, "--data-dir", filepath.Join(home, "data"), "--heartbeat", "300ms",
		"--config", cfg, "--model", "scripted-model", "--log-level", "info")
	cmd.Env = append(serverEnv(t, home, model), env...)
	w := &worker{cmd: cmd, cache: cache, stderr: &syncBuffer{}}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		// With APSERVER_E2E_RACE the binary reports data races on stderr.
		if strings.Contains(w.stderr.String(), "DATA RACE") {
			t.Errorf("worker %s reported a data race", name)
		}
		if t.Failed() {
			t.Logf("worker %s stderr:\n%s", name, w.stderr.String())
		}
	})
	return w
}

// The cluster as a team uses it: one PostgreSQL, a project whose origin is
// a bare repository, two editor-side apservers with [cluster] execute =
// "workers" and three workers. Ten runs of three tasks each are started on
// the first editor; the worker that runs the first t2 is killed with -9
// in the middle of the task; one run waits for its plan's approval, which
// is answered on the second editor. Every run completes (the first
// editor's client follows them through PostgreSQL), each task of each run
// is committed exactly once on the remote, and each run's branch is
// pushed.
func TestClusterWorkers(t *testing.T) {
	t.Parallel()
	pg := migratedPG(t)
	mark := t.TempDir()
	const n = 10
	// The first t2 anywhere says where it runs, then sleeps until its
	// worker is killed.
	model := startModel(t, sleepingT2Rules(t, mark)...)
	// Ten projects: the runs of one project would conflict (each adds the
	// same line to README.md), which is not what this test is about.
	repos, remotes := make([]string, n), make([]string, n)
	for i := range repos {
		repos[i], remotes[i] = clusterRemote(t)
	}
	cfg := "[cluster]\ndatabase_url = \"" + pg.URL + "\"\nexecute = \"workers\"\n"
	a := newRunsClient(t, model, faOptions{config: cfg})
	a.wait = 3 * time.Minute
	b := newRunsClient(t, model, faOptions{config: cfg})
	workers := map[string]*worker{}
	for _, name := range []string{"w1", "w2", "w3"} {
		// The marks' directory is writable to the workers' task threads.
		workers[name] = startWorker(t, model, pg.URL, name, "[sandbox_settings]\nwritable_roots = [\""+mark+"\"]\n")
	}

	ids := make([]string, n)
	for i := range ids {
		p := map[string]any{"cwd": repos[i], "request": fmt.Sprintf("add a shout option to greet.sh (%d)", i), "baseBranch": "main"}
		if i != n-1 {
			p["trust"] = map[string]any{"planning": "auto"}
		}
		ids[i] = a.startRun(p)
	}

	// kill -9 the worker in the middle of the first t2.
	where := strings.TrimSpace(readWhenThere(t, filepath.Join(mark, "where"), func() {
		for _, id := range ids[:2] {
			t.Logf("run/read %s = %s", id, a.call("run/read", map[string]any{"runId": id}).Raw)
		}
	}))
	killed := ""
	for name, w := range workers {
		if strings.HasPrefix(where, w.cache+string(filepath.Separator)) {
			killed = name
			if err := w.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if killed == "" {
		t.Fatalf("t2 ran in %s, under no worker's cache", where)
	}

	// The plan of the last run is approved on the second editor.
	manual := ids[n-1]
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		r := b.call("run/read", map[string]any{"runId": manual})
		if r.str("run.waitingFor") == "planApproval" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s never waited for its plan's approval: %s", manual, r.Raw)
		}
	}
	b.call("run/plan/approve", map[string]any{"runId": manual})

	waitRunsCommittedOnce(t, a, ids, remotes)
	if n := len(strings.Fields(gitOut(t, repos[0], "log", "main", "--format=%H", "--grep", "Apserver-Task: t1"))); n != 0 {
		t.Errorf("the editor's own repository got %d task commits: the workers do the work", n)
	}
	t.Logf("killed %s in the middle of t2", killed)
}

// readWhenThere waits for a file to exist and returns its content.
func readWhenThere(t *testing.T, path string, explain func()) string {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil {
			return string(b)
		}
		if time.Now().After(deadline) {
			explain()
			t.Fatalf("%s never appeared", path)
		}
	}
}

// Runs of editor-side apservers that do their work themselves
// ([cluster] execute = "here", the default) outlive their process: the
// apserver that drives a run is killed with -9 in the middle of its
// second task; a second apserver on the same database, which was only
// following, takes the run up by itself (the dead process's lease on the
// run went with its connection) without anyone asking, and the run
// completes with each task committed exactly once.
func TestClusterHereTakeUp(t *testing.T) {
	t.Parallel()
	_, repo, a, b, id := hereRunInT2(t)
	if r := b.call("run/read", map[string]any{"runId": id}); r.str("run.status") != "running" {
		t.Fatalf("run/read on the second apserver while t2 works = %s", r.Raw)
	}
	a.kill()

	if end := b.runEnd(id); end.str("run.status") != "completed" || end.get("run.counts.completed") != 3.0 {
		t.Fatalf("run end on the apserver that took it up = %s", end.Raw)
	}
	for _, task := range []string{"t1", "t2", "t3"} {
		if n := len(strings.Fields(gitOut(t, repo, "log", "main", "--format=%H", "--all-match", "--grep", "Apserver-Run: "+id, "--grep", "Apserver-Task: "+task))); n != 1 {
			t.Errorf("%d commits of %s on main, want 1:\n%s", n, task, gitOut(t, repo, "log", "--all", "--format=%h %s%n%b"))
		}
	}
}

// blockPush installs a hook (pre-receive or post-receive) in the bare
// repository remote: the first push of a branch whose tip is the commit of
// task t2 writes the pusher's HOME (which names the worker) and the
// commit to mark/<name>, then waits until mark/<name>.release exists, and
// is refused (pre-receive) or lets the push end (post-receive).
func blockPush(t *testing.T, remote, hook, mark, name string) {
	t.Helper()
	script := `#!/bin/sh
while read old new ref; do
  case "$ref" in refs/heads/main) continue ;; esac
  if git log -1 --format=%B "$new" | grep -q "Apserver-Task: t2" && mkdir ` + mark + `/` + name + `.once 2>/dev/null; then
    printf '%s %s\n' "$HOME" "$new" > ` + mark + `/` + name + `.tmp && mv ` + mark + `/` + name + `.tmp ` + mark + `/` + name + `
    while [ ! -e ` + mark + `/` + name + `.release ]; do sleep 0.05; done
    [ ` + hook + ` = post-receive ]; exit $?
  fi
done
exit 0
`
	if err := os.WriteFile(filepath.Join(remote, "hooks", hook), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.WriteFile(filepath.Join(mark, name+".release"), nil, 0o644) })
}

// A worker killed with -9 in the middle of a commit: for one run, after
// the commit of t2 and before the remote has it (its push is held by the
// remote's pre-receive hook, then refused); for another, after the remote
// has it and before the worker records it (held by the post-receive
// hook). The kill points are the hooks' marks, not times. Both runs
// complete on the other workers; each task is committed exactly once on
// the remote; the commit pushed before the kill is the one kept.
func TestClusterWorkerKilledMidCommit(t *testing.T) {
	t.Parallel()
	pg := migratedPG(t)
	mark := t.TempDir()
	model := startModel(t, shoutRules(t)...)
	hooks := []string{"pre-receive", "post-receive"}
	repos, remotes := make([]string, len(hooks)), make([]string, len(hooks))
	for i, hook := range hooks {
		repos[i], remotes[i] = clusterRemote(t)
		blockPush(t, remotes[i], hook, mark, hook)
	}
	cfg := "[cluster]\ndatabase_url = \"" + pg.URL + "\"\nexecute = \"workers\"\n"
	a := newRunsClient(t, model, faOptions{config: cfg})
	a.wait = 3 * time.Minute
	workers := map[string]*worker{}
	for _, name := range []string{"w1", "w2", "w3"} {
		workers[name] = startWorker(t, model, pg.URL, name, "")
	}
	ids := make([]string, len(hooks))
	for i := range ids {
		ids[i] = a.startRun(map[string]any{"cwd": repos[i], "request": fmt.Sprintf("add a shout option to greet.sh (%s)", hooks[i]),
			"baseBranch": "main", "trust": map[string]any{"planning": "auto"}})
	}
	pushed := map[string]string{}
	for _, hook := range hooks {
		f := strings.Fields(readWhenThere(t, filepath.Join(mark, hook), func() {
			for _, id := range ids {
				t.Logf("run/read %s = %s", id, a.call("run/read", map[string]any{"runId": id}).Raw)
			}
		}))
		if len(f) != 2 {
			t.Fatalf("mark of %s = %q", hook, f)
		}
		killed := ""
		for name, w := range workers {
			if filepath.Dir(w.cache) == f[0] {
				killed = name
				if err := w.cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				_ = w.cmd.Wait()
			}
		}
		if killed == "" {
			t.Fatalf("the push held by %s came from %s, no worker's home", hook, f[0])
		}
		pushed[hook] = f[1]
		t.Logf("killed %s in the middle of a commit (%s held its push of %s)", killed, hook, f[1])
		// The push goes on without its worker: refused before the remote
		// has the commit, or ended after.
		if err := os.WriteFile(filepath.Join(mark, hook+".release"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	for i, id := range ids {
		if end := a.runEnd(id); end.str("run.status") != "completed" || end.get("run.counts.completed") != 3.0 {
			t.Fatalf("run %s (%s) ended %s", id, hooks[i], end.Raw)
		}
	}
	for i, id := range ids {
		remote := remotes[i]
		for _, task := range []string{"t1", "t2", "t3"} {
			got := strings.Fields(gitOut(t, remote, "log", "main", "--format=%H", "--all-match", "--grep", "Apserver-Run: "+id, "--grep", "Apserver-Task: "+task))
			if len(got) != 1 {
				t.Fatalf("run %s (%s): %d commits of %s on the remote's main, want 1:\n%s", id, hooks[i], len(got), task,
					gitOut(t, remote, "log", "--all", "--format=%h %s%n%b"))
			}
			if task != "t2" {
				continue
			}
			// Kept after the push went through; made again after it was
			// refused.
			if kept := got[0] == pushed[hooks[i]]; kept != (hooks[i] == "post-receive") {
				t.Errorf("run %s (%s): t2's commit on main is %s, the one pushed before the kill %s", id, hooks[i], got[0], pushed[hooks[i]])
			}
		}
	}
}

// run/cancel answered on an editor-side apserver stops the task's turn on
// the worker that holds its thread, at once: the worker follows the log
// (NOTIFY), and the cancellation's interruption is carried out where the
// thread is. The command the task was running (a sleep of two minutes)
// is killed, and the worker's job ends.
func TestClusterCancelInterruptsWorker(t *testing.T) {
	t.Parallel()
	pg := migratedPG(t)
	mark := t.TempDir()
	// Two minutes, told from any other sleep by its fraction.
	nap := fmt.Sprintf("119.%d", time.Now().UnixNano()%1000000)
	rules := shoutRules(t)
	for i, r := range rules {
		if r.Match == "S2 add test_greet.sh" {
			rules[i] = taskRule(r.Match, `touch `+mark+`/started && exec sleep `+nap)
		}
	}
	model := startModel(t, rules...)
	repo, _ := clusterRemote(t)
	cfg := "[cluster]\ndatabase_url = \"" + pg.URL + "\"\nexecute = \"workers\"\n"
	a := newRunsClient(t, model, faOptions{config: cfg})
	startWorker(t, model, pg.URL, "w1", "[sandbox_settings]\nwritable_roots = [\""+mark+"\"]\n")
	id := a.startRun(map[string]any{"cwd": repo, "request": "add a shout option to greet.sh", "baseBranch": "main",
		"trust": map[string]any{"planning": "auto"}})
	readWhenThere(t, filepath.Join(mark, "started"), func() {
		t.Logf("run/read %s = %s", id, a.call("run/read", map[string]any{"runId": id}).Raw)
	})
	for deadline := time.Now().Add(time.Minute); !sleeping(nap); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the task's sleep never showed in /proc")
		}
	}
	if r := a.call("run/cancel", map[string]any{"runId": id}); r.str("run.status") != "cancelled" {
		t.Fatalf("run/cancel = %s", r.Raw)
	}
	// The sleep is killed with the turn, well before its two minutes.
	for deadline := time.Now().Add(time.Minute); sleeping(nap); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the task's command still runs a minute after run/cancel")
		}
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		out, err := exec.Command(binPath, "cluster", "status", "--database-url", pg.URL).CombinedOutput()
		if err == nil && strings.Contains(string(out), " 0 running") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker's job still runs a minute after run/cancel:\n%s", out)
		}
	}
	if r := a.call("run/read", map[string]any{"runId": id}); r.str("run.status") != "cancelled" {
		t.Fatalf("run/read after the cancel = %s", r.Raw)
	}
}

// sleeping reports whether a process runs `sleep arg` (the sandbox's pid
// namespace hides the pid a command sees from the test).
func sleeping(arg string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && strings.HasSuffix(string(b), "sleep\x00"+arg+"\x00") {
			return true
		}
	}
	return false
}

// PostgreSQL goes down for ten seconds while workers run tasks (the
// issue's acceptance criterion: a real outage, not a fake clock). The
// first t2 anywhere holds its task until the database is back, so the
// outage falls while a task is in flight; the other runs' steps end, or
// try to record, while it is down. Workers and the editor side
// reconnect, every run completes, each task is committed exactly once on
// its remote and nothing recorded is lost.
func TestClusterDatabaseOutage(t *testing.T) {
	t.Parallel()
	pg := migratedPG(t)
	mark := t.TempDir()
	const n = 3
	rules := shoutRules(t)
	for i, r := range rules {
		if r.Match == "S2 add test_greet.sh" {
			rules[i] = taskRule(r.Match, `if mkdir `+mark+`/once 2>/dev/null; then touch `+mark+`/held; while [ ! -e `+mark+`/release ]; do sleep 0.05; done; fi; `+
				`printf '%s\n' 'set -e' 'sh greet.sh bob | grep -q "Hello, bob"' 'sh greet.sh --shout bob | grep -q "HELLO, BOB"' > test_greet.sh`)
		}
	}
	model := startModel(t, rules...)
	repos, remotes := make([]string, n), make([]string, n)
	for i := range repos {
		repos[i], remotes[i] = clusterRemote(t)
	}
	cfg := "[cluster]\ndatabase_url = \"" + pg.URL + "\"\nexecute = \"workers\"\n"
	a := newRunsClient(t, model, faOptions{config: cfg})
	a.wait = 3 * time.Minute
	for _, name := range []string{"w1", "w2", "w3"} {
		startWorker(t, model, pg.URL, name, "[sandbox_settings]\nwritable_roots = [\""+mark+"\"]\n")
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = a.startRun(map[string]any{"cwd": repos[i], "request": fmt.Sprintf("add a shout option to greet.sh (%d)", i),
			"baseBranch": "main", "trust": map[string]any{"planning": "auto"}})
	}
	readWhenThere(t, filepath.Join(mark, "held"), func() {
		for _, id := range ids {
			t.Logf("run/read %s = %s", id, a.call("run/read", map[string]any{"runId": id}).Raw)
		}
	})
	pg.Stop()
	a.callErr("run/list", map[string]any{}, -32603, "")
	time.Sleep(10 * time.Second) // the outage itself: what is tested is ten seconds without the database
	pg.Start()
	if err := os.WriteFile(filepath.Join(mark, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	waitRunsCommittedOnce(t, a, ids, remotes)
	out, err := exec.Command(binPath, "cluster", "status", "--database-url", pg.URL).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "runs: 3 completed") {
		t.Errorf("apserver cluster status after the outage: %v\n%s", err, out)
	}
}

// The GitHub stage of a run executed by a worker: the editor side only
// appends and enqueues; the worker pushes the branch, opens the draft pull
// request on the (fake) GitHub, marks it ready, polls its checks and
// merges it, as one apserver does (TestRunGitHubAutoMerge).
func TestClusterWorkerGitHub(t *testing.T) {
	t.Parallel()
	pg := migratedPG(t)
	g := ghSetup(t)
	g.fake.Do(func() { g.repo.AutoChecks = green })
	model := startModel(t, ghRules(t)...)
	cfg := "[cluster]\ndatabase_url = \"" + pg.URL + "\"\nexecute = \"workers\"\n" + g.config("")
	// Only the worker has the token: every GitHub step is its.
	a := newRunsClient(t, model, faOptions{config: cfg})
	a.wait = 2 * time.Minute
	startWorker(t, model, pg.URL, "w1", g.config(""), "GITHUB_TOKEN="+ghToken)
	id, branch := g.start(a, nil)
	end := a.runEnd(id)
	if end.str("run.status") != "completed" || end.str("run.pullRequest.state") != "merged" || end.get("run.pullRequest.number") != 1.0 {
		t.Fatalf("run/completed = %s", end.Raw)
	}
	pr := g.pr(t)
	if !pr.OpenedDraft || pr.Draft || !pr.Merged || pr.Head != branch {
		t.Errorf("PR %+v", pr)
	}
	if got := gitOut(t, g.bare, "rev-parse", "refs/heads/main"); got != pr.MergedHead {
		t.Errorf("remote main %s, merged head %s", got, pr.MergedHead)
	}
	if gitOut(t, g.bare, "show", "main:hello.txt") != "hello" {
		t.Error("hello.txt is not on the remote's main")
	}
	// The work was the worker's: the editor's repository has no task
	// commit, and its worktree was never made.
	if n := len(strings.Fields(gitOut(t, g.dir, "log", "--all", "--format=%H", "--grep", "Apserver-Task: g1"))); n != 0 {
		t.Errorf("the editor's repository has %d commits of the task: the worker does the work", n)
	}
}

// run/pause answered on an editor while a worker runs a task: as on one
// machine the run is pausing until the step ends, then paused, and the
// worker's job ends; run/resume on the editor enqueues the rest, a worker
// takes the run up again from its log and it completes, each task
// committed exactly once.
func TestClusterPauseResumeOnWorker(t *testing.T) {
	t.Parallel()
	pg := migratedPG(t)
	mark := t.TempDir()
	rules := shoutRules(t)
	for i, r := range rules {
		if r.Match == "S2 add test_greet.sh" {
			rules[i] = taskRule(r.Match, `if mkdir `+mark+`/once 2>/dev/null; then touch `+mark+`/held; while [ ! -e `+mark+`/release ]; do sleep 0.05; done; fi; `+
				`printf '%s\n' 'set -e' 'sh greet.sh bob | grep -q "Hello, bob"' 'sh greet.sh --shout bob | grep -q "HELLO, BOB"' > test_greet.sh`)
		}
	}
	model := startModel(t, rules...)
	repo, remote := clusterRemote(t)
	cfg := "[cluster]\ndatabase_url = \"" + pg.URL + "\"\nexecute = \"workers\"\n"
	a := newRunsClient(t, model, faOptions{config: cfg})
	for _, name := range []string{"w1", "w2"} {
		startWorker(t, model, pg.URL, name, "[sandbox_settings]\nwritable_roots = [\""+mark+"\"]\n")
	}
	id := a.startRun(map[string]any{"cwd": repo, "request": "add a shout option to greet.sh", "baseBranch": "main",
		"trust": map[string]any{"planning": "auto"}})
	readWhenThere(t, filepath.Join(mark, "held"), func() {
		t.Logf("run/read %s = %s", id, a.call("run/read", map[string]any{"runId": id}).Raw)
	})
	if r := a.call("run/pause", map[string]any{"runId": id}); r.str("run.status") != "pausing" {
		t.Fatalf("run/pause while t2 works = %s", r.Raw)
	}
	if err := os.WriteFile(filepath.Join(mark, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	paused := a.waitFor("run/updated", func(m *message) bool { return m.str("runId") == id && m.str("status") == "paused" })
	if r := a.call("run/read", map[string]any{"runId": id}); r.str("run.status") != "paused" {
		t.Fatalf("run/read after the step ended = %s (run/updated: %s)", r.Raw, paused.Raw)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		out, err := exec.Command(binPath, "cluster", "status", "--database-url", pg.URL).CombinedOutput()
		if err == nil && strings.Contains(string(out), "jobs: 0 queued, 0 running") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a job still holds the paused run:\n%s", out)
		}
	}
	if r := a.call("run/resume", map[string]any{"runId": id}); r.str("run.status") == "paused" {
		t.Fatalf("run/resume = %s", r.Raw)
	}
	if end := a.runEnd(id); end.str("run.status") != "completed" || end.get("run.counts.completed") != 3.0 {
		t.Fatalf("run end after the resume = %s", end.Raw)
	}
	for _, task := range []string{"t1", "t2", "t3"} {
		got := strings.Fields(gitOut(t, remote, "log", "main", "--format=%H", "--all-match", "--grep", "Apserver-Run: "+id, "--grep", "Apserver-Task: "+task))
		if len(got) != 1 {
			t.Errorf("%d commits of %s on the remote's main, want 1", len(got), task)
		}
	}
}
