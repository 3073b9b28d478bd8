package e2e

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// TestManagerOverhead50 measures what the manager adds per task
// (docs/benchmarks.md, "The manager: overhead per task"): the same phase
// of 50 independent tasks, against the scripted model over the real
// binary, built twice on fresh projects: once by the manager (full_auto,
// one run at a time, the heartbeat woken by each run's change, its
// interval 1 s), once as plain runs the test starts itself one after the
// other (run/start of each task, its plan approved, waiting for
// run/completed). The difference of the wall
// times over 50 is the manager's overhead per task: its ticks (state read,
// decision, receipt) and the heartbeat's wait for the next one. It only
// reports (target ≤ 50 ms per task); set APSERVER_BENCH_MANAGER=1 to run it.
func TestManagerOverhead50(t *testing.T) {
	if os.Getenv("APSERVER_BENCH_MANAGER") == "" {
		t.Skip("a measurement: set APSERVER_BENCH_MANAGER=1")
	}
	var tasks []phaseTask
	for i := 1; i <= 50; i++ {
		tasks = append(tasks, phaseTask{title: fmt.Sprintf("B%02d write k%d.txt", i, i), risk: "low"})
	}
	config := "[manager]\nheartbeat_interval_ms = 1000\nheartbeat_max_ms = 1000\n"

	// Plain runs, started and approved by the test.
	p := newPhaseProject(t, tasks, config)
	c := p.server(t)
	start := time.Now()
	for id := range p.titles {
		run := c.startRun(map[string]any{"cwd": p.repo, "blueprint": map[string]any{"blueprintId": p.blueprint, "taskIds": []string{id}}})
		c.runWaiting(nil, run, "planApproval")
		c.call("run/plan/approve", map[string]any{"runId": run})
		if end := c.runEnd(run); end.str("run.status") != "completed" {
			t.Fatalf("run/completed = %s", end.Raw)
		}
	}
	plain := time.Since(start)
	c.close()

	// The manager.
	p = newPhaseProject(t, tasks, config)
	c = p.server(t)
	start = time.Now()
	after := c.call("project/settings/update", map[string]any{"cwd": p.repo, "mode": "full_auto", "blueprintId": p.blueprint, "maxParallelRuns": 1})
	st := p.status(c, &after, func(st *message) bool { return st.get("phaseDone") == true })
	managed := time.Since(start)
	if st.get("tasks.done") != 50.0 || st.get("runs.completed") != 50.0 {
		t.Fatalf("project/status = %s", st.Raw)
	}
	c.close()
	per := (managed - plain) / 50
	t.Logf("50 tasks: plain runs %v (%v a task), the manager %v (%v a task): the manager adds %v a task",
		plain.Round(time.Millisecond), (plain / 50).Round(time.Millisecond), managed.Round(time.Millisecond), (managed / 50).Round(time.Millisecond), per.Round(time.Millisecond))
}
