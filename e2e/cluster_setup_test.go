package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/internal/pgtest"
	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
)

// migratedPG is a throwaway PostgreSQL with the cluster's tables
// (apserver cluster migrate, as an operator runs it).
func migratedPG(t testing.TB) *pgtest.Server {
	t.Helper()
	pg := pgtest.Start(t)
	if out, err := exec.Command(binPath, "cluster", "migrate", "--database-url", pg.URL).CombinedOutput(); err != nil {
		t.Fatalf("apserver cluster migrate: %v\n%s", err, out)
	}
	return pg
}

// clusterProject is newManagerEnv's project (a blueprint ingested) whose
// repository has an origin, a bare clone, for workers to fetch from and
// push to; it returns the remote's path and the blueprint's id.
func clusterProject(t *testing.T) (*managerEnv, string, string) {
	t.Helper()
	e := newManagerEnv(t, "")
	remote := filepath.Join(t.TempDir(), "remote.git")
	git(t, e.repo, "clone", "-q", "--bare", e.repo, remote)
	git(t, e.repo, "remote", "add", "origin", remote)
	out, err := e.cli("blueprint", "list").Output()
	bp := strings.Fields(string(out))
	if err != nil || len(bp) == 0 || !strings.HasPrefix(bp[0], "bp_") {
		t.Fatalf("blueprint list: %v\n%s", err, out)
	}
	return e, remote, bp[0]
}

// hereRunInT2 starts the shout run on apserver a of two with [cluster]
// execute = "here" on one database, and returns once a's t2 works: the
// first t2 says so, then sleeps until its apserver is killed. b follows
// the run (and waits up to three minutes for its end).
func hereRunInT2(t *testing.T) (pg *pgtest.Server, repo string, a, b *client, id string) {
	t.Helper()
	pg = migratedPG(t)
	mark := t.TempDir()
	model := startModel(t, sleepingT2Rules(t, mark)...)
	repo = shoutRepo(t)
	cfg := "[cluster]\ndatabase_url = \"" + pg.URL + "\"\nexecute = \"here\"\n[sandbox_settings]\nwritable_roots = [\"" + mark + "\"]\n"
	a = newRunsClient(t, model, faOptions{config: cfg})
	b = newRunsClient(t, model, faOptions{config: cfg})
	b.wait = 3 * time.Minute

	id = a.startRun(map[string]any{"cwd": repo, "request": "add a shout option to greet.sh", "baseBranch": "main",
		"trust": map[string]any{"planning": "auto"}})
	readWhenThere(t, filepath.Join(mark, "where"), func() {
		t.Logf("run/read %s = %s", id, b.call("run/read", map[string]any{"runId": id}).Raw)
	})
	return pg, repo, a, b, id
}

// sleepingT2Rules are shoutRules whose first t2, wherever it runs, writes
// its directory to mark/where and then sleeps until its process is killed;
// later t2s do the task. mark must be writable from the sandbox.
func sleepingT2Rules(t *testing.T, mark string) []scripted.Rule {
	t.Helper()
	rules := shoutRules(t)
	for i, r := range rules {
		if r.Match == "S2 add test_greet.sh" {
			rules[i] = taskRule(r.Match, `if mkdir `+mark+`/once 2>/dev/null; then pwd > `+mark+`/where.tmp && mv `+mark+`/where.tmp `+mark+`/where; sleep 120; fi; `+
				`printf '%s\n' 'set -e' 'sh greet.sh bob | grep -q "Hello, bob"' 'sh greet.sh --shout bob | grep -q "HELLO, BOB"' > test_greet.sh`)
		}
	}
	return rules
}

// waitRunsCommittedOnce waits (three minutes at most) until every run of
// ids is over, then holds each to what a cluster owes it: completed with
// its three tasks, its branch on its remote (remotes[i]), and each task
// committed exactly once on the remote's main.
func waitRunsCommittedOnce(t *testing.T, a *client, ids, remotes []string) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		over := 0
		for _, id := range ids {
			if st := protocol.RunStatus(a.call("run/read", map[string]any{"runId": id}).str("run.status")); st.Final() {
				over++
			}
		}
		if over == len(ids) {
			break
		}
		if time.Now().After(deadline) {
			for _, id := range ids {
				t.Logf("run/read %s = %.1500s", id, a.call("run/read", map[string]any{"runId": id}).Raw)
			}
			t.Fatalf("%d of %d runs are over", over, len(ids))
		}
	}
	for _, id := range ids {
		if end := a.runEnd(id); end.str("run.status") != "completed" || end.get("run.counts.completed") != 3.0 {
			t.Fatalf("run %s ended %s", id, end.Raw)
		}
	}
	for i, id := range ids {
		remote := remotes[i]
		r := a.call("run/read", map[string]any{"runId": id})
		if out, err := exec.Command("git", "-C", remote, "rev-parse", "--verify", "-q", "refs/heads/"+r.str("run.branch")).Output(); err != nil || len(out) == 0 {
			t.Errorf("run %s: its branch %s is not on the remote", id, r.str("run.branch"))
		}
		for _, task := range []string{"t1", "t2", "t3"} {
			got := strings.Fields(gitOut(t, remote, "log", "main", "--format=%H", "--all-match", "--grep", "Apserver-Run: "+id, "--grep", "Apserver-Task: "+task))
			if len(got) != 1 {
				t.Errorf("run %s: %d commits of %s on the remote's main, want 1; the run's reason: %s; its branch:\n%s", id, len(got), task,
					r.str("run.reason"), gitOut(t, remote, "log", "--format=%h %s%n%b", r.str("run.branch")))
			}
		}
	}
}
