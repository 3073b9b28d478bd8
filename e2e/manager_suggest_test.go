package e2e

import (
	"strings"
	"testing"
)

// TestManagerSuggest: in suggest mode a tick proposes the run it would
// start instead of starting it: the proposal waits in attention, in the
// tick's answer, the status and manager/explain, and ticking again
// proposes the same; nothing is run or written (no run, no model request,
// no branch or commit) until manager/approve, whose tick starts the run
// (which then does its task and commits it once its plan is approved) and
// withdraws the attention item.
func TestManagerSuggest(t *testing.T) {
	t.Parallel()
	e := newManagerEnv(t, "")
	out, err := e.cli("blueprint", "list").Output()
	bp := strings.Fields(string(out))
	if err != nil || len(bp) == 0 || !strings.HasPrefix(bp[0], "bp_") {
		t.Fatalf("blueprint list: %v\n%s", err, out)
	}
	refs := gitOut(t, e.repo, "for-each-ref", "--format=%(refname) %(objectname)")
	requests := len(modelRequests(e.model))

	c := newRunsClient(t, e.model, faOptions{dataDir: e.dataDir})
	c.call("project/settings/update", map[string]any{"cwd": e.repo, "mode": "suggest", "blueprintId": bp[0], "maxParallelRuns": 2})
	tick := c.call("manager/tick", map[string]any{"cwd": e.repo})
	id := tick.str("proposalId")
	if tick.str("result") != "waiting_for_approval" || !strings.HasPrefix(id, "prop_") || tick.str("runId") != "" || !strings.Contains(tick.str("reason"), id) {
		t.Fatalf("manager/tick in suggest = %s", tick.Raw)
	}
	task := tick.str("taskIds.0")
	attn := c.waitFor("attention", func(m *message) bool { return m.str("items.0.proposalId") == id })
	if attn.str("items.0.kind") != "approval" || attn.str("items.0.cwd") != e.repo || attn.str("items.0.taskId") != task {
		t.Errorf("attention = %s", attn.Raw)
	}
	if again := c.call("manager/tick", map[string]any{"cwd": e.repo}); again.str("result") != "waiting_for_approval" || again.str("proposalId") != id {
		t.Errorf("a second tick = %s, want the same proposal %s", again.Raw, id)
	}
	if st := c.call("project/status", map[string]any{"cwd": e.repo}); st.str("lastTick.proposalId") != id || st.str("proposal.id") != id ||
		st.str("proposal.taskIds.0") != task || len(st.get("runs").(map[string]any)) != 0 {
		t.Errorf("project/status = %s", st.Raw)
	}
	if ex := c.call("manager/explain", map[string]any{"cwd": e.repo}); !strings.Contains(ex.str("summary"), id) {
		t.Errorf("manager/explain = %s", ex.Raw)
	}
	// Nothing ran, nothing was written.
	if l := c.call("run/list", map[string]any{"cwd": e.repo}); len(l.get("runs").([]any)) != 0 {
		t.Errorf("runs before the approval: %s", l.Raw)
	}
	if n := len(modelRequests(e.model)); n != requests {
		t.Errorf("%d model requests before the approval", n-requests)
	}
	if now := gitOut(t, e.repo, "for-each-ref", "--format=%(refname) %(objectname)"); now != refs {
		t.Errorf("refs changed before the approval:\n%s\nwas\n%s", now, refs)
	}

	c.callErr("manager/approve", map[string]any{"cwd": e.repo}, -32602, "proposalId")
	c.callErr("manager/approve", map[string]any{"cwd": e.repo, "proposalId": "prop_000000000000"}, -32602, "proposalId")
	ok := c.call("manager/approve", map[string]any{"cwd": e.repo, "proposalId": id})
	run := ok.str("runId")
	if ok.str("result") != "started_run" || run == "" || ok.str("taskIds.0") != task {
		t.Fatalf("manager/approve = %s", ok.Raw)
	}
	// The run is the user's to steer as any run: suggest approves no
	// plan either; once the plan is approved the task is done and
	// committed.
	c.runWaiting(nil, run, "planApproval")
	c.call("run/plan/approve", map[string]any{"runId": run})
	if end := c.runEnd(run); end.str("run.status") != "completed" {
		t.Fatalf("run/completed = %s", end.Raw)
	}
	if len(modelRequests(e.model)) == requests {
		t.Error("the approved run's implementer asked the model nothing")
	}
	if log := gitOut(t, e.repo, "log", "--all", "--format=%s", "--grep", "S1 make greet.sh"); !strings.Contains(log, "S1 make greet.sh") {
		t.Errorf("no commit of the approved task: %q", log)
	}
	c.waitFor("attention", func(m *message) bool {
		for _, it := range m.get("items").([]any) {
			if it.(map[string]any)["proposalId"] == id {
				return false
			}
		}
		return true
	})
	if st := c.call("project/status", map[string]any{"cwd": e.repo}); st.get("proposal") != nil && st.str("proposal.id") == id {
		t.Errorf("project/status after the approval still proposes %s: %s", id, st.Raw)
	}
	// The approval is used once: the next tick proposes the next task (or
	// nothing), never the started one again.
	if next := c.call("manager/tick", map[string]any{"cwd": e.repo}); next.str("proposalId") == id || next.str("result") == "started_run" {
		t.Errorf("the tick after the approved run = %s", next.Raw)
	}
}
