package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
