package e2e

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// relayRules: a plan of one task whose implementer writes approved.txt
// with a command; under autonomy "suggest" the command asks a human.
func relayRules(t *testing.T) []scripted.Rule {
	return []scripted.Rule{
		reviewRule,
		{Match: "Plan this request", Steps: []scripted.Step{{Text: planJSON(t, planTask{ID: "r1", Title: "R1 write approved.txt",
			Description: "Write approved.txt.", Kind: "file_edit", Dependencies: []string{}, Risk: "low",
			Acceptance: accept("grep -q yes approved.txt"), Estimate: "1m"})}}},
		taskRule("R1 write approved.txt", "echo yes > approved.txt"),
	}
}

// relayedItems are the items of an attention notification relayed from a
// worker for run id.
func relayedItems(t *testing.T, m *message, id string) []map[string]any {
	t.Helper()
	var p struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		t.Fatalf("attention params %s: %v", m.Params, err)
	}
	var out []map[string]any
	for _, it := range p.Items {
		if it["runId"] == id && strings.Contains(it["reason"].(string), "item/commandExecution/requestApproval") {
			out = append(out, it)
		}
	}
	return out
}

// runItems counts the items of an attention notification about run id.
func runItems(t *testing.T, m *message, id string) int {
	t.Helper()
	var p struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		t.Fatalf("attention params %s: %v", m.Params, err)
	}
	n := 0
	for _, it := range p.Items {
		if it["runId"] == id {
			n++
		}
	}
	return n
}

// A run executed on a worker whose task thread needs an approval (autonomy
// "suggest": every command asks): the request reaches both editor-side
// apservers as the same item/commandExecution/requestApproval, and is in
// their attention summary; the second editor approves it, the request
// leaves the first's attention, the command runs on the worker, and the
// run completes with approved.txt in the commit pushed to the remote.
func TestClusterRelayApproval(t *testing.T) {
	t.Parallel()
	pg := migratedPG(t)
	model := startModel(t, relayRules(t)...)
	repo, remote := clusterRemote(t)
	cfg := "[cluster]\ndatabase_url = \"" + pg.URL + "\"\nexecute = \"workers\"\n"
	a := newRunsClient(t, model, faOptions{config: cfg})
	b := newRunsClient(t, model, faOptions{config: cfg})
	startWorker(t, model, pg.URL, "w1", "")

	id := a.startRun(map[string]any{"cwd": repo, "request": "write approved.txt", "baseBranch": "main",
		"trust": map[string]any{"planning": "auto", "implementation": "auto"}, "autonomy": "suggest"})

	isOurs := func(m *message) bool { return strings.Contains(m.str("command"), "approved.txt") }
	reqA := a.waitFor("item/commandExecution/requestApproval", isOurs)
	reqB := b.waitFor("item/commandExecution/requestApproval", isOurs)
	if string(reqA.Params) != string(reqB.Params) {
		t.Errorf("the two editors got different params:\n%s\n%s", reqA.Params, reqB.Params)
	}
	a.runWaiting(nil, id, "taskThread")
	shown := a.waitFor("attention", func(m *message) bool { return len(relayedItems(t, m, id)) == 1 })
	if it := relayedItems(t, shown, id)[0]; it["threadId"] != reqA.str("threadId") || it["kind"] != "approval" {
		t.Errorf("the relayed attention item = %v; want the task thread %s, kind approval", it, reqA.str("threadId"))
	}
	if out, err := exec.Command("git", "-C", remote, "log", "--all", "--format=%H", "--", "approved.txt").Output(); err != nil || len(out) != 0 {
		t.Fatalf("approved.txt is on the remote before the approval: %v %s", err, out)
	}

	b.answer(reqB, map[string]any{"decision": "accept"})
	// Answered on the second editor: gone from the first's attention.
	a.waitAfter(shown, "attention", func(m *message) bool { return len(relayedItems(t, m, id)) == 0 })

	if end := a.runEnd(id); end.str("run.status") != "completed" || end.get("run.counts.completed") != 1.0 {
		t.Fatalf("run end = %s", end.Raw)
	}
	// As on one machine, the wait is one item: the thread's own (the
	// request), which stands for the run's (waiting on its task thread).
	for _, m := range a.find("attention", nil) {
		if n := runItems(t, m, id); n > 1 {
			t.Errorf("attention #%d has %d items of the run, want at most one: %s", m.Seq, n, m.Params)
		}
	}
	if got := strings.TrimSpace(gitOut(t, remote, "show", "main:approved.txt")); got != "yes" {
		t.Errorf("approved.txt on the remote's main = %q, want yes", got)
	}
	if n := len(strings.Fields(gitOut(t, remote, "log", "main", "--format=%H", "--grep", "Apserver-Task: r1"))); n != 1 {
		t.Errorf("%d commits of r1 on the remote's main, want 1", n)
	}
}

// declineAll declines every command approval c is asked until run id
// stops (paused, failed or over); it returns the run's last run/updated
// and how many requests it declined.
func declineAll(c *client, id string) (*message, int) {
	c.t.Helper()
	n, from := 0, 0
	for {
		m := c.waitMsg("an approval or the run stopping", from, func(m *message) bool {
			if m.Method == "item/commandExecution/requestApproval" {
				return true
			}
			st := m.str("status")
			return m.Method == "run/updated" && m.str("runId") == id && st != "running" && st != "waiting" && st != "queued"
		})
		from = m.Seq + 1
		if m.Method == "run/updated" {
			return m, n
		}
		n++
		c.answer(m, map[string]any{"decision": "decline"})
	}
}

// Declining a worker's task thread's approval leads where it leads on one
// machine: the command does not run, the task's checks fail, each fix
// attempt asks again, and after the last one the run pauses for a repair
// with the same reason, having asked the editor as many times.
func TestClusterRelayDecline(t *testing.T) {
	t.Parallel()
	pg := migratedPG(t)
	model := startModel(t, relayRules(t)...)
	params := func(repo string) map[string]any {
		return map[string]any{"cwd": repo, "request": "write approved.txt", "baseBranch": "main",
			"trust": map[string]any{"planning": "auto", "implementation": "auto"}, "autonomy": "suggest"}
	}

	// One machine.
	one := newRunsClient(t, model, faOptions{})
	oneID := one.startRun(params(shoutRepo(t)))
	oneEnd, oneN := declineAll(one, oneID)

	// The cluster: one editor, one worker.
	repo, remote := clusterRemote(t)
	a := newRunsClient(t, model, faOptions{config: "[cluster]\ndatabase_url = \"" + pg.URL + "\"\nexecute = \"workers\"\n"})
	startWorker(t, model, pg.URL, "w1", "")
	id := a.startRun(params(repo))
	end, n := declineAll(a, id)

	if oneN == 0 || n != oneN {
		t.Errorf("the cluster's editor declined %d requests, one machine's %d", n, oneN)
	}
	for _, k := range []string{"status", "stage", "waitingFor", "reason"} {
		if end.str(k) != oneEnd.str(k) {
			t.Errorf("the run stopped with %s %q on the cluster, %q on one machine", k, end.str(k), oneEnd.str(k))
		}
	}
	if end.str("status") != "paused" || end.str("waitingFor") != "repair" {
		t.Errorf("the run stopped as %s", end.Raw)
	}
	if out, err := exec.Command("git", "-C", remote, "log", "--all", "--format=%H", "--", "approved.txt").Output(); err != nil || len(out) != 0 {
		t.Errorf("approved.txt reached the remote though every approval was declined: %v %s", err, out)
	}
}

// A run cancelled on the editor while its worker's task thread waits for
// a relayed approval: the worker gives the request up, and the editor's
// client is told it is resolved and no longer sees it in attention.
func TestClusterRelayCancel(t *testing.T) {
	t.Parallel()
	pg := migratedPG(t)
	model := startModel(t, relayRules(t)...)
	repo, _ := clusterRemote(t)
	a := newRunsClient(t, model, faOptions{config: "[cluster]\ndatabase_url = \"" + pg.URL + "\"\nexecute = \"workers\"\n"})
	startWorker(t, model, pg.URL, "w1", "")
	id := a.startRun(map[string]any{"cwd": repo, "request": "write approved.txt", "baseBranch": "main",
		"trust": map[string]any{"planning": "auto", "implementation": "auto"}, "autonomy": "suggest"})
	req := a.waitFor("item/commandExecution/requestApproval", nil)
	shown := a.waitFor("attention", func(m *message) bool { return len(relayedItems(t, m, id)) == 1 })

	a.call("run/cancel", map[string]any{"runId": id})
	if end := a.runEnd(id); end.str("run.status") != "cancelled" {
		t.Fatalf("run end = %s", end.Raw)
	}
	var reqID int64
	if err := json.Unmarshal(req.ID, &reqID); err != nil {
		t.Fatal(err)
	}
	a.waitFor("serverRequest/resolved", func(m *message) bool { return m.get("requestId") == float64(reqID) })
	a.waitAfter(shown, "attention", func(m *message) bool { return len(relayedItems(t, m, id)) == 0 })
}
