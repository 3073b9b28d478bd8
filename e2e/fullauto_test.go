package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apserver/apserver/model/scripted"
)

// TestFullAutoRestartResendsApproval kills apserver with SIGKILL while a
// full-auto run waits for an approval, restarts it on the same data dir,
// and checks that the same request (same id, same params) is sent again
// and that answering it carries the run on to its end.
func TestFullAutoRestartResendsApproval(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "S-restart", Steps: []scripted.Step{
		{Text: "Creating the marker.", ToolCalls: []scripted.ToolCall{{Command: "touch marker.txt"}}},
		{Text: "The task is complete."},
	}})
	dataDir := t.TempDir()
	c := newFAClient(t, model, faOptions{dataDir: dataDir})
	threadID, cwd := c.startThread("untrusted")
	c.startFullAuto(threadID, map[string]any{"objective": "S-restart: create marker.txt", "approvals": "ask"})
	req := c.waitFor("item/commandExecution/requestApproval", nil)
	c.waitFor("fullAuto/statusChanged", func(m *message) bool { return m.str("state") == "waiting" })
	if got := c.waitFor("attention", nil); got.get("count") != 1.0 || got.str("items.0.kind") != "approval" {
		t.Errorf("attention while waiting = %s, want one approval item", got.Raw)
	}
	c.kill()

	c2 := newFAClient(t, model, faOptions{dataDir: dataDir})
	again := c2.waitFor("item/commandExecution/requestApproval", nil)
	if string(again.ID) != string(req.ID) {
		t.Errorf("re-sent request id = %s, want %s", again.ID, req.ID)
	}
	if string(again.Params) != string(req.Params) {
		t.Errorf("re-sent params differ:\n got %s\nwant %s", again.Params, req.Params)
	}
	if _, err := os.Stat(filepath.Join(cwd, "marker.txt")); err == nil {
		t.Fatal("marker.txt exists before the approval")
	}
	c2.answer(again, map[string]any{"decision": "accept"})
	end := c2.runEnded(threadID)
	if got := end.str("run.stopCondition"); got != "completed" {
		t.Errorf("run stopped with %q, want completed: %s", got, end.Raw)
	}
	if _, err := os.Stat(filepath.Join(cwd, "marker.txt")); err != nil {
		t.Errorf("marker.txt after the approval: %v", err)
	}
	resolved := c2.find("serverRequest/resolved", nil)
	if len(resolved) != 1 || fmt.Sprint(resolved[0].get("requestId")) != string(req.ID) {
		t.Errorf("serverRequest/resolved after the restart = %d notifications, want one for %s", len(resolved), req.ID)
	}
	// The resumed turn shows the approved command, completed, with no
	// userMessage item.
	turnID := c2.waitFor("turn/started", nil).str("turn.id")
	cmd := c2.waitFor("item/completed", itemOfType(turnID, "commandExecution"))
	if cmd.str("item.status") != "completed" || cmd.str("item.id") != req.str("itemId") {
		t.Errorf("resumed command item = %s, want completed with id %s", cmd.Raw, req.str("itemId"))
	}
	if ms := c2.find("item/started", itemOfType(turnID, "userMessage")); len(ms) != 0 {
		t.Errorf("the resumed turn has a userMessage item: %s", ms[0].Raw)
	}
	// The model saw the command's result as the answer to its call.
	reqs := modelRequests(model)
	if last := reqs[len(reqs)-1]; last.ToolOutputs != 1 {
		t.Errorf("last model request has %d tool outputs after the user message, want 1", last.ToolOutputs)
	}
}

// TestFullAutoManyThreads runs 20 threads in full auto at once with a cap
// of 4 concurrent model calls: every run finishes, no more than 4 model
// requests are ever in flight, and no thread starves: while all runs are
// going, the most and the fewest turns any thread completed are within a
// factor of 1.2.
func TestFullAutoManyThreads(t *testing.T) {
	t.Parallel()
	// The model's delay makes the 4 model slots, not the CPU, what the
	// threads wait for, which is where the scheduler's fairness shows.
	const threads, turns, cap, modelDelay = 20, 12, 4, 50 * time.Millisecond
	var rules []scripted.Rule
	step := func(n int) []scripted.Step {
		return []scripted.Step{
			{Text: fmt.Sprintf("Part %d.", n), ToolCalls: []scripted.ToolCall{{Command: "echo x >> log.txt && wc -l < log.txt"}}, TTFT: modelDelay},
			{Text: fmt.Sprintf("Part %d is in; more to do.", n), TTFT: modelDelay},
		}
	}
	for n := turns; n >= 2; n-- {
		rules = append(rules, scripted.Rule{Match: fmt.Sprintf(`turn="%d"`, n), Steps: step(n)})
	}
	rules = append(rules, scripted.Rule{Match: "S-many", Steps: step(1)})
	model := startModel(t, rules...)

	// Count the model requests in flight through a proxy: from the
	// request's arrival to the moment the proxy passes on the response's
	// last event. apserver holds its slot longer than that (it takes the
	// slot before sending, frees it after reading the last event), so the
	// count never exceeds what apserver has in flight.
	var inFlight, peak atomic.Int64
	target, _ := url.Parse(model.URL())
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	proxy.FlushInterval = -1
	ps := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		cw := &completionWriter{ResponseWriter: w, done: func() { inFlight.Add(-1) }}
		defer cw.finish()
		proxy.ServeHTTP(cw, r)
	}))
	t.Cleanup(ps.Close)

	c := newFAClient(t, model, faOptions{
		config: fmt.Sprintf("max_concurrent_model_calls = %d\n", cap),
		args:   []string{"--base-url", ps.URL + "/v1"},
		env:    []string{"PATH=" + noGitPath(t)},
	})
	// 20 runs of 12 turns share 2 CPUs with the rest of `go test ./...`:
	// the first run ends long after a normal wait.
	c.wait = 2 * time.Minute
	ids := make([]string, threads)
	for i := range ids {
		// Full access: this measures the scheduler, so commands skip the
		// sandbox's namespace setup, which would dominate on 2 CPUs.
		r := c.call("thread/start", map[string]any{"cwd": t.TempDir(), "approvalPolicy": "never", "sandbox": "danger-full-access"})
		ids[i] = r.str("thread.id")
		c.waitAfter(r, "thread/started", func(m *message) bool { return m.str("thread.id") == ids[i] })
	}
	var started *message
	for _, id := range ids {
		started = c.startFullAuto(id, map[string]any{"objective": "S-many: write the parts", "budgets": map[string]any{"turns": turns}})
	}
	var once sync.Once
	var firstEnd *message
	for _, id := range ids {
		end := c.runEnded(id)
		once.Do(func() { firstEnd = end })
		if firstEnd.Seq > end.Seq {
			firstEnd = end
		}
		if got, n := end.str("run.stopCondition"), end.get("run.spent.turns"); got != "budgetTurns" || n != float64(turns) {
			t.Errorf("thread %s stopped with %s after %v turns, want budgetTurns after %d", id, got, n, turns)
		}
	}
	if p := peak.Load(); p > cap || p < 2 {
		t.Errorf("peak model requests in flight = %d, want between 2 and %d", p, cap)
	}
	// Turns per unit time of each thread while every run was going: the
	// completed turns between its first and its last completion in that
	// window, over the time between them.
	var first, last = map[string]int64{}, map[string]int64{}
	count := map[string]int{}
	for _, m := range c.snapshot() {
		if m.Seq <= started.Seq || m.Seq >= firstEnd.Seq || m.Method != "turn/completed" {
			continue
		}
		id, at := m.str("threadId"), emittedAt(m)
		if count[id] == 0 {
			first[id] = at
		}
		last[id] = at
		count[id]++
	}
	lo, hi := 1e9, 0.0
	for _, id := range ids {
		if count[id] < 3 {
			t.Fatalf("thread %s completed %d turns while all ran; the window is too short to measure", id, count[id])
		}
		rate := float64(count[id]-1) / float64(max(1, last[id]-first[id]))
		lo, hi = min(lo, rate), max(hi, rate)
	}
	if hi/lo > 1.2 {
		t.Errorf("turns per second while all ran: min %.3f, max %.3f (want max/min <= 1.2); turns: %v", lo*1000, hi*1000, count)
	}
	t.Logf("turns per second while all ran: min %.3f, max %.3f; peak model requests in flight %d", lo*1000, hi*1000, peak.Load())
}

// emittedAt is a notification's emittedAtMs.
func emittedAt(m *message) int64 {
	var env struct {
		EmittedAtMs int64 `json:"emittedAtMs"`
	}
	_ = json.Unmarshal([]byte(m.Raw), &env)
	return env.EmittedAtMs
}

// TestFullAutoPauseResumeStop drives a run through the client methods and
// checks the notifications, fullAuto/status and the attention summary.
func TestFullAutoPauseResumeStop(t *testing.T) {
	t.Parallel()
	var rules []scripted.Rule
	for n := 8; n >= 2; n-- {
		rules = append(rules, scripted.Rule{Match: fmt.Sprintf(`turn="%d"`, n), Steps: []scripted.Step{
			{Text: fmt.Sprintf("Step %d.", n), ToolCalls: []scripted.ToolCall{{Command: "echo x >> log.txt && wc -l < log.txt"}}, TTFT: 100 * time.Millisecond},
			{Text: fmt.Sprintf("Step %d done; more to do.", n)},
		}})
	}
	rules = append(rules, scripted.Rule{Match: "S-control", Steps: []scripted.Step{{Text: "Step 1 done; more to do.", TTFT: 100 * time.Millisecond}}})
	model := startModel(t, rules...)
	c := newFAClient(t, model, faOptions{inProcess: true})
	threadID, _ := c.startThread("never")

	checkErr(t, "fullAuto/pause without a run", c.request("fullAuto/pause", map[string]any{"threadId": threadID}), -32600, "no full-auto run")
	checkErr(t, "fullAuto/start without threadId", c.request("fullAuto/start", map[string]any{}), -32602, "threadId")
	checkErr(t, "fullAuto/start with bad approvals", c.request("fullAuto/start", map[string]any{"threadId": threadID, "approvals": "sometimes"}), -32602, "approvals")
	checkErr(t, "fullAuto/start with bad onApprovalTimeout", c.request("fullAuto/start", map[string]any{"threadId": threadID, "objective": "o", "onApprovalTimeout": "retry"}), -32602, "onApprovalTimeout")
	checkErr(t, "fullAuto/start with no objective on an empty thread", c.request("fullAuto/start", map[string]any{"threadId": threadID}), -32602, "objective")

	r := c.startFullAuto(threadID, map[string]any{"objective": "S-control: do the steps", "budgets": map[string]any{"turns": 8, "tokens": 10000000}})
	if r.str("run.state") != "running" || r.get("run.budgets.turns") != 8.0 || r.get("run.budgets.timeMs") != nil {
		t.Errorf("fullAuto/start result = %s", r.Raw)
	}
	checkErr(t, "second fullAuto/start", c.request("fullAuto/start", map[string]any{"threadId": threadID, "objective": "again"}), -32600, "already running")
	// Let a decision happen, then pause.
	dec := c.waitFor("fullAuto/decision", nil)
	if dec.str("receipt.action") != "continue" || dec.str("receipt.source") != "policy" || dec.get("receipt.executed") != true {
		t.Errorf("first decision = %s", dec.Raw)
	}
	p := c.call("fullAuto/pause", map[string]any{"threadId": threadID})
	if p.str("run.state") != "paused" {
		t.Errorf("fullAuto/pause result = %s", p.Raw)
	}
	paused := c.runState(dec, threadID, "paused")
	att := c.waitAfter(dec, "attention", func(m *message) bool { return m.get("count") == 1.0 })
	if att.str("items.0.kind") != "paused" || att.str("items.0.threadId") != threadID {
		t.Errorf("attention after pause = %s", att.Raw)
	}
	// No new turn starts while paused. The turn running at the pause may
	// finish (a paused run decides nothing on it); then the thread is done.
	if tid := c.turnRunningAt(p); tid != "" {
		c.turnDone(tid)
	}
	c.sync(threadID)
	if got := c.after(p, "turn/started", nil); len(got) != 0 {
		t.Errorf("%d turns started while paused: %v", len(got), got)
	}
	st := c.call("fullAuto/status", map[string]any{"threadId": threadID})
	if st.str("runs.0.state") != "paused" || st.get("attention.count") != 1.0 {
		t.Errorf("fullAuto/status = %s", st.Raw)
	}
	all := c.call("fullAuto/status", map[string]any{})
	if runs, _ := all.get("runs").([]any); len(runs) != 1 {
		t.Errorf("fullAuto/status {} = %s, want one run", all.Raw)
	}

	res := c.call("fullAuto/resume", map[string]any{"threadId": threadID})
	if res.str("run.state") != "running" {
		t.Errorf("fullAuto/resume result = %s", res.Raw)
	}
	cleared := c.waitAfter(paused, "attention", func(m *message) bool { return m.get("count") == 0.0 })
	if cleared.get("oldestSinceMs") != nil {
		t.Errorf("cleared attention = %s, want oldestSinceMs null", cleared.Raw)
	}
	c.waitAfter(res, "turn/started", nil)
	stop := c.call("fullAuto/stop", map[string]any{"threadId": threadID})
	end := c.runEnded(threadID)
	if end.str("run.stopCondition") != "userStop" {
		t.Errorf("run ended with %s, want userStop: %s", end.str("run.stopCondition"), end.Raw)
	}
	if last := c.waitAfter(stop, "fullAuto/decision", nil); last.str("receipt.stopCondition") != "userStop" {
		t.Errorf("decision after stop = %s", last.Raw)
	}
	checkErr(t, "resume a stopped run", c.request("fullAuto/resume", map[string]any{"threadId": threadID}), -32600, "stopped")
	// The interrupted turn ended the run: nothing more starts.
	if tid := c.turnRunningAt(stop); tid != "" {
		c.turnDone(tid)
	}
	c.sync(threadID)
	if got := c.after(stop, "turn/started", nil); len(got) != 0 {
		t.Errorf("a turn started after the stop: %v", got)
	}
}

// TestGoals checks thread/goal/* against protocol/codex/CORE.md §7: creation, edits,
// errors, status changes, continuation turns without a userMessage item,
// budget limits and clearing. Every goal message is validated against
// Codex's schema by the harness.
func TestGoals(t *testing.T) {
	t.Parallel()
	var rules []scripted.Rule
	for n := 6; n >= 2; n-- {
		rules = append(rules, scripted.Rule{Match: fmt.Sprintf(`turn="%d"`, n), Steps: []scripted.Step{
			{Text: fmt.Sprintf("Chapter %d.", n), ToolCalls: []scripted.ToolCall{{Command: "echo x >> book.txt && wc -l < book.txt"}},
				Usage: &scripted.Usage{Input: 300, Cached: 100, Output: 20}},
			{Text: fmt.Sprintf("Chapter %d written; more to come.", n), Usage: &scripted.Usage{Input: 300, Cached: 100, Output: 20}},
		}})
	}
	rules = append(rules, scripted.Rule{Match: "write the book", Steps: []scripted.Step{
		{Text: "Chapter 1 written; more to come.", Usage: &scripted.Usage{Input: 300, Cached: 100, Output: 20}},
	}})
	model := startModel(t, rules...)
	c := newFAClient(t, model, faOptions{inProcess: true})
	threadID, _ := c.startThread("never")

	if g := c.call("thread/goal/get", map[string]any{"threadId": threadID}); g.get("goal") != nil {
		t.Errorf("thread/goal/get before a goal = %s, want null", g.Raw)
	}
	if r := c.call("thread/goal/clear", map[string]any{"threadId": threadID}); r.get("cleared") != false {
		t.Errorf("thread/goal/clear without a goal = %s", r.Raw)
	}
	checkErr(t, "set without objective", c.request("thread/goal/set", map[string]any{"threadId": threadID, "status": "paused"}), -32600,
		"cannot update goal for thread "+threadID+": no goal exists")
	checkErr(t, "blank objective", c.request("thread/goal/set", map[string]any{"threadId": threadID, "objective": "  "}), -32600, "goal objective must not be empty")
	checkErr(t, "zero budget", c.request("thread/goal/set", map[string]any{"threadId": threadID, "objective": "x", "tokenBudget": 0}), -32600,
		"goal budgets must be positive when provided")
	eph := c.call("thread/start", map[string]any{"ephemeral": true}).str("thread.id")
	checkErr(t, "ephemeral", c.request("thread/goal/set", map[string]any{"threadId": eph, "objective": "x"}), -32600, "ephemeral thread does not support goals: "+eph)

	// A goal with a token budget of 1000: each response counts 200+20.
	set := c.call("thread/goal/set", map[string]any{"threadId": threadID, "objective": "write the book", "tokenBudget": 1000})
	if set.str("goal.status") != "active" || set.get("goal.tokenBudget") != 1000.0 || set.get("goal.tokensUsed") != 0.0 {
		t.Errorf("thread/goal/set = %s", set.Raw)
	}
	upd := c.waitAfter(set, "thread/goal/updated", func(m *message) bool { return m.get("turnId") == nil })
	if upd.str("goal.objective") != "write the book" {
		t.Errorf("thread/goal/updated = %s", upd.Raw)
	}
	limited := c.waitFor("thread/goal/updated", func(m *message) bool { return m.str("goal.status") == "budgetLimited" })
	if used := limited.get("goal.tokensUsed").(float64); used < 1000 {
		t.Errorf("budgetLimited with tokensUsed %v < 1000", used)
	}
	// Continuation turns start without a userMessage item.
	started := c.find("turn/started", nil)
	if len(started) < 2 {
		t.Fatalf("%d turns, want continuation turns", len(started))
	}
	for _, s := range started {
		id := s.str("turn.id")
		if ms := c.find("item/started", itemOfType(id, "userMessage")); len(ms) != 0 {
			t.Errorf("goal turn %s has a userMessage item", id)
		}
	}
	// Paused is ignored on a budget-limited goal; removing the budget and
	// setting active resumes it.
	if r := c.call("thread/goal/set", map[string]any{"threadId": threadID, "status": "paused"}); r.str("goal.status") != "budgetLimited" {
		t.Errorf("pause of a budget-limited goal = %s, want budgetLimited", r.Raw)
	}
	if r := c.call("thread/goal/set", map[string]any{"threadId": threadID, "tokenBudget": nil}); r.get("goal.tokenBudget") != nil || r.str("goal.status") != "budgetLimited" {
		t.Errorf("removing the budget = %s, want tokenBudget null, status kept", r.Raw)
	}
	n := len(c.find("turn/started", nil))
	act := c.call("thread/goal/set", map[string]any{"threadId": threadID, "status": "active"})
	if act.str("goal.status") != "active" {
		t.Errorf("set active = %s", act.Raw)
	}
	c.waitAfter(act, "turn/started", nil)
	// Editing the objective keeps status and usage.
	used := act.get("goal.tokensUsed")
	edit := c.call("thread/goal/set", map[string]any{"threadId": threadID, "objective": "write the book, now with pictures"})
	if edit.str("goal.status") != "active" || edit.get("goal.tokensUsed").(float64) < used.(float64) || edit.get("goal.createdAt") != set.get("goal.createdAt") {
		t.Errorf("objective edit = %s", edit.Raw)
	}
	pause := c.call("thread/goal/set", map[string]any{"threadId": threadID, "status": "paused"})
	if pause.str("goal.status") != "paused" {
		t.Errorf("pause = %s", pause.Raw)
	}
	if len(c.find("turn/started", nil)) <= n {
		t.Errorf("no turn started after status active")
	}
	g := c.call("thread/goal/get", map[string]any{"threadId": threadID})
	if g.str("goal.status") != "paused" || !strings.Contains(g.str("goal.objective"), "pictures") {
		t.Errorf("thread/goal/get = %s", g.Raw)
	}
	cl := c.call("thread/goal/clear", map[string]any{"threadId": threadID})
	if cl.get("cleared") != true {
		t.Errorf("clear = %s", cl.Raw)
	}
	c.waitAfter(cl, "thread/goal/cleared", func(m *message) bool { return m.str("threadId") == threadID })
	if g := c.call("thread/goal/get", map[string]any{"threadId": threadID}); g.get("goal") != nil {
		t.Errorf("thread/goal/get after clear = %s", g.Raw)
	}
}

// noGitPath is a PATH with the few programs the scripted commands use and
// no git, so that apserver takes no per-turn checkpoints: on a small
// machine 20 threads snapshotting their workspaces with git make the CPU,
// not the model calls, what the threads wait for.
func noGitPath(t *testing.T) string {
	dir := t.TempDir()
	for _, prog := range []string{"wc", "cat", "ls", "touch", "sh", "bash", "env"} {
		for _, d := range []string{"/usr/bin", "/bin"} {
			if _, err := os.Stat(filepath.Join(d, prog)); err == nil {
				_ = os.Symlink(filepath.Join(d, prog), filepath.Join(dir, prog))
				break
			}
		}
	}
	return dir
}

// completionWriter calls done once: when the response's last event (a
// Responses "response.completed") has been written, or when the response
// ends.
type completionWriter struct {
	http.ResponseWriter
	done func()
	once sync.Once
}

func (w *completionWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	if bytes.Contains(b, []byte("response.completed")) {
		w.finish()
	}
	return n, err
}

func (w *completionWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *completionWriter) finish() { w.once.Do(w.done) }

// TestFullAutoRestartMidTurn kills apserver in the middle of a full-auto
// turn and restarts it: with full_auto.on_restart = "running" the run goes
// on by itself with a new turn; with "paused" it waits for fullAuto/resume.
func TestFullAutoRestartMidTurn(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"running", "paused"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			model := startModel(t,
				scripted.Rule{Match: "apserver restarted", Steps: []scripted.Step{{Text: "Checked the workspace. The task is complete."}}},
				scripted.Rule{Match: "Continue working toward the objective", Steps: []scripted.Step{{Text: "Resumed. The task is complete."}}},
				scripted.Rule{Match: "S-midturn", Steps: []scripted.Step{{Deltas: 10, DeltaText: "partial ", StallAfter: 2}}},
			)
			dataDir := t.TempDir()
			cfg := "[full_auto]\non_restart = \"" + mode + "\"\n"
			c := newFAClient(t, model, faOptions{dataDir: dataDir, config: cfg})
			threadID, _ := c.startThread("never")
			c.startFullAuto(threadID, map[string]any{"objective": "S-midturn: finish the job"})
			c.waitFor("item/agentMessage/delta", nil)
			c.kill()

			c2 := newFAClient(t, model, faOptions{dataDir: dataDir, config: cfg})
			if mode == "paused" {
				p := c2.runState(nil, threadID, "paused")
				if p.str("reason") != "apserver restarted" {
					t.Errorf("after the restart: %s", p.Raw)
				}
				if a := c2.waitFor("attention", nil); a.str("items.0.kind") != "paused" {
					t.Errorf("attention after the restart = %s", a.Raw)
				}
				c2.sync(threadID)
				if got := c2.find("turn/started", nil); len(got) != 0 {
					t.Fatalf("a paused run started a turn")
				}
				c2.call("thread/resume", map[string]any{"threadId": threadID})
				c2.call("fullAuto/resume", map[string]any{"threadId": threadID})
			}
			end := c2.runEnded(threadID)
			if end.str("run.stopCondition") != "completed" {
				t.Errorf("run ended %s", end.Raw)
			}
			turn := c2.waitFor("turn/started", nil).str("turn.id")
			if ms := c2.find("item/started", itemOfType(turn, "userMessage")); len(ms) != 0 {
				t.Errorf("the turn after the restart has a userMessage item")
			}
			want := map[string]string{"running": "apserver restarted", "paused": "Continue working toward the objective"}[mode]
			reqs := modelRequests(model)
			if last := reqs[len(reqs)-1].LastUserText; !strings.Contains(last, want) {
				t.Errorf("the model's input after the restart = %q, want it to contain %q", last, want)
			}
			// The history before the restart is still there: the first
			// user message and the partial turn's hidden input.
			if first := reqs[len(reqs)-1].Body; !bytes.Contains(first, []byte("S-midturn: finish the job")) {
				t.Errorf("the model's input after the restart lost the objective message")
			}
		})
	}
}
