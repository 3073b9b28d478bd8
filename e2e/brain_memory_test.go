package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/model/scripted"
)

// TestBrainRunSectionSurvivesKill (docs/brain.md): in a project that keeps
// decisions, a run's section of .apserver/memory.md is stored before it
// is projected. The first apserver holds its projections (the test hook
// APSERVER_TEST_HOLD_PROJECTIONS: nothing is written, as if it were
// killed before each rewrite); it is killed with SIGKILL once the run has
// ended. The next process, once initialized, writes memory.md from the
// store: the decision and the run's section.
func TestBrainRunSectionSurvivesKill(t *testing.T) {
	t.Parallel()
	tasks := []planTask{{ID: "t1", Title: "K9 write the file", Description: "Write k9.txt.", Kind: "file_create",
		Dependencies: []string{}, Risk: "low", Acceptance: accept("test -f k9.txt"), Estimate: "1m"}}
	model := startModel(t, reviewRule,
		scripted.Rule{Match: "graph of small tasks: K9", Steps: []scripted.Step{{Text: planJSON(t, tasks...)}}},
		taskRule("K9 write", "echo k9 > k9.txt"))
	repo := t.TempDir()
	gitRepo(t, repo, map[string]string{"README.md": "# k9\n"})
	git(t, repo, "config", "user.name", "Test User")
	git(t, repo, "config", "user.email", "test@example.com")
	dataDir := t.TempDir()
	c := newRunsClient(t, model, faOptions{dataDir: dataDir, env: []string{"APSERVER_TEST_HOLD_PROJECTIONS=1"}})
	c.call("project/decision/add", map[string]any{"cwd": repo, "title": "Use PostgreSQL", "text": "All data in PostgreSQL."})
	id := c.startRun(map[string]any{"cwd": repo, "request": "K9 write a file", "baseBranch": "main", "trust": map[string]any{"planning": "auto"}})
	if end := c.runEnd(id); end.str("run.status") != "completed" || end.str("run.mergeCommit") == "" {
		t.Fatalf("the run did not merge: %s", end.Raw)
	}
	memPath := filepath.Join(repo, ".apserver", "memory.md")
	if mem, err := os.ReadFile(memPath); err == nil {
		t.Fatalf("memory.md written while projections were held:\n%s", mem)
	}
	c.kill()

	c2 := newRunsClient(t, model, faOptions{dataDir: dataDir})
	c2.call("project/decision/list", map[string]any{"cwd": repo}) // initialized has been sent
	deadline := time.Now().Add(c2.wait)
	for {
		mem, _ := os.ReadFile(memPath)
		if strings.Contains(string(mem), "Use PostgreSQL") && strings.Contains(string(mem), "\n## Run "+id+" (completed): K9 write a file") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart, memory.md lacks the decision or the run's section:\n%s", mem)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if tracked := gitOut(t, repo, "ls-files", ".apserver/memory.md"); tracked != "" {
		t.Errorf("the run committed memory.md")
	}
}
