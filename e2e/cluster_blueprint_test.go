package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestClusterWorkerBlueprintEvidence: with [cluster] execute = "workers"
// the manager starts a blueprint's first task as a run that a worker
// carries out. The worker keeps no blueprints, so the editor side, which
// follows the run's log, records the task's evidence (the commit, fetched
// from the remote the worker pushed to): the task is done in the editor's
// blueprint, and the next tick starts the task that depended on it.
// (Before, the evidence was dropped on the worker: the task stayed
// in_progress and the manager had nothing to do.)
func TestClusterWorkerBlueprintEvidence(t *testing.T) {
	t.Parallel()
	pg := migratedPG(t)
	e, _, bp := clusterProject(t)

	startWorker(t, e.model, pg.URL, "w1", "")
	cfg := "[cluster]\ndatabase_url = \"" + pg.URL + "\"\nexecute = \"workers\"\n"
	c := newRunsClient(t, e.model, faOptions{dataDir: e.dataDir, config: cfg})
	c.wait = 3 * time.Minute
	if up := c.call("project/settings/update", map[string]any{"cwd": e.repo, "mode": "full_auto", "blueprintId": bp, "maxParallelRuns": 1}); up.str("settings.mode") != "full_auto" {
		t.Fatalf("project/settings/update = %s", up.Raw)
	}
	c.call("manager/tick", map[string]any{"cwd": e.repo})
	first := c.waitFor("run/started", nil)
	id := first.str("run.id")
	if end := c.runEnd(id); end.str("run.status") != "completed" {
		t.Fatalf("the run on the worker ended %s", end.Raw)
	}
	done := c.waitFor("blueprint/updated", func(m *message) bool { return m.str("node.kind") == "task" && m.str("node.status") == "done" })
	if done.str("blueprintId") != bp {
		t.Errorf("a task of another blueprint was marked done: %s", done.Raw)
	}
	if out, err := e.cli("blueprint", "tasks", e.features[0]).CombinedOutput(); err != nil || strings.Count(string(out), "\tdone\t") != 1 {
		t.Errorf("tasks of %s after the worker's run: %v\n%s", e.features[0], err, out)
	}

	c.call("manager/tick", map[string]any{"cwd": e.repo})
	second := c.waitAfter(first, "run/started", nil)
	if second.str("run.id") == id {
		t.Fatalf("the second tick started the same run: %s", second.Raw)
	}
}
