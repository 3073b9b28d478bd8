package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/internal/pgtest"
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
	rules := shoutRules(t)
	for i, r := range rules {
		if r.Match == "S2 add test_greet.sh" {
			// The first t2 says it runs, then sleeps until its apserver
			// is killed.
			rules[i] = taskRule(r.Match, `if mkdir `+mark+`/once 2>/dev/null; then pwd > `+mark+`/where.tmp && mv `+mark+`/where.tmp `+mark+`/where; sleep 120; fi; `+
				`printf '%s\n' 'set -e' 'sh greet.sh bob | grep -q "Hello, bob"' 'sh greet.sh --shout bob | grep -q "HELLO, BOB"' > test_greet.sh`)
		}
	}
	model := startModel(t, rules...)
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
