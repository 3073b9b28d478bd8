package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
)

// after returns the events of log from index i on that match method and
// thread.
func after(log []event, i int, method, thread string) []event {
	if i > len(log) {
		i = len(log)
	}
	return filter(log[i:], method, thread)
}

// waitNote waits for a notification of method on thread, from log index
// from on, that satisfies ok (nil: any), and returns its index.
func waitNote(t *testing.T, h *harness, method, thread string, from int, ok func(json.RawMessage) bool) int {
	t.Helper()
	var at int
	h.c.waitFor(t, method, func(log []event) bool {
		for i := from; i < len(log); i++ {
			e := log[i]
			if e.Kind == "notify" && e.Method == method && (thread == "" || threadOf(e) == thread) && (ok == nil || ok(e.Params)) {
				at = i
				return true
			}
		}
		return false
	})
	return at
}

func hasState(state protocol.FullAutoState) func(json.RawMessage) bool {
	return func(b json.RawMessage) bool {
		var n protocol.FullAutoStatusChangedNotification
		return json.Unmarshal(b, &n) == nil && n.State == state
	}
}

func threadParams(cwd *string, policy protocol.ApprovalPolicy) protocol.ThreadStartParams {
	var p protocol.ThreadStartParams
	p.Cwd = cwd
	p.ApprovalPolicy = &protocol.AskForApproval{Mode: policy}
	return p
}

func wantErr(t *testing.T, label string, err error, kind error, text string) {
	t.Helper()
	if !errors.Is(err, kind) || !strings.Contains(err.Error(), text) {
		t.Errorf("%s: error %v, want %v containing %q", label, err, kind, text)
	}
}

// TestFullAutoControl drives a run through fullAuto/* in process: errors,
// start, pause (attention, status), resume, stop.
func TestFullAutoControl(t *testing.T) {
	var rules []scripted.Rule
	for n := 8; n >= 2; n-- {
		rules = append(rules, scripted.Rule{Match: fmt.Sprintf(`turn="%d"`, n), Steps: []scripted.Step{
			{Text: fmt.Sprintf("Step %d.", n), ToolCalls: []scripted.ToolCall{{Command: "echo x >> log.txt"}}},
			{Text: fmt.Sprintf("Step %d done; more to do.", n)},
		}})
	}
	rules = append(rules, scripted.Rule{Match: "S-control", Steps: []scripted.Step{{Text: "Step 1 done; more to do."}}})
	h := newHarness(t, scripted.Script{Rules: rules}, false)
	id := h.startThread(t, threadParams(nil, "never")).Thread.ID
	ctx := context.Background()
	run := func(label string, do func(Reply)) (protocol.FullAutoRunResult, error) {
		return call[protocol.FullAutoRunResult](t, h, label, do)
	}
	tp := protocol.FullAutoThreadParams{ThreadID: id}

	_, err := run("pause", func(r Reply) { h.m.PauseFullAuto(ctx, tp, r) })
	wantErr(t, "fullAuto/pause without a run", err, protocol.ErrInvalidRequest, "no full-auto run")
	_, err = run("start", func(r Reply) { h.m.StartFullAuto(ctx, protocol.FullAutoStartParams{ThreadID: id}, r) })
	wantErr(t, "fullAuto/start with no objective on an empty thread", err, protocol.ErrInvalidParams, "objective")
	_, err = run("start", func(r Reply) { h.m.StartFullAuto(ctx, protocol.FullAutoStartParams{ThreadID: "nope"}, r) })
	wantErr(t, "fullAuto/start on an unknown thread", err, protocol.ErrInvalidRequest, "thread not found")

	res, err := run("start", func(r Reply) {
		h.m.StartFullAuto(ctx, protocol.FullAutoStartParams{ThreadID: id, Objective: ptr("S-control: do the steps"),
			Budgets: &protocol.FullAutoBudgets{Turns: ptr(8), Tokens: ptr(int64(10_000_000))}}, r)
	})
	if err != nil || res.Run.State != protocol.FullAutoRunning || *res.Run.Budgets.Turns != 8 || res.Run.Budgets.TimeMs != nil {
		t.Fatalf("fullAuto/start = %+v, %v", res.Run, err)
	}
	_, err = run("start", func(r Reply) {
		h.m.StartFullAuto(ctx, protocol.FullAutoStartParams{ThreadID: id, Objective: ptr("again")}, r)
	})
	wantErr(t, "second fullAuto/start", err, protocol.ErrInvalidRequest, "already running")

	dec := waitNote(t, h, protocol.NotifyFullAutoDecision, id, 0, nil)
	var d protocol.FullAutoDecisionNotification
	_ = json.Unmarshal(h.c.snapshot()[dec].Params, &d)
	if d.Receipt.Action != "continue" || d.Receipt.Source != "policy" || !d.Receipt.Executed || d.Receipt.Seq != 1 {
		t.Errorf("first decision = %+v", d.Receipt)
	}
	p, err := run("pause", func(r Reply) { h.m.PauseFullAuto(ctx, tp, r) })
	if err != nil || p.Run.State != protocol.FullAutoPaused || *p.Run.Reason != "paused by the user" {
		t.Errorf("fullAuto/pause = %+v, %v", p.Run, err)
	}
	paused := waitNote(t, h, protocol.NotifyFullAutoStatusChanged, id, dec, hasState(protocol.FullAutoPaused))
	replied := find(h.c.snapshot(), dec, "pause", "")
	if replied < 0 || replied > paused {
		t.Errorf("fullAuto/pause: the statusChanged (#%d) came before the reply (#%d)", paused, replied)
	}
	waitNote(t, h, protocol.NotifyAttention, "", dec, func(b json.RawMessage) bool {
		var n protocol.AttentionNotification
		return json.Unmarshal(b, &n) == nil && n.Count == 1 && n.Items[0].Kind == protocol.AttentionPaused && n.Items[0].ThreadID == id
	})
	st := mustCall[protocol.FullAutoStatusResult](t, h, "status", func(r Reply) {
		h.m.FullAutoStatus(ctx, protocol.FullAutoStatusParams{ThreadID: &id}, r)
	})
	if len(st.Runs) != 1 || st.Runs[0].State != protocol.FullAutoPaused || st.Attention.Count != 1 {
		t.Errorf("fullAuto/status = %+v", st)
	}
	all := mustCall[protocol.FullAutoStatusResult](t, h, "status", func(r Reply) { h.m.FullAutoStatus(ctx, protocol.FullAutoStatusParams{}, r) })
	if len(all.Runs) != 1 {
		t.Errorf("fullAuto/status {} = %+v, want one run", all.Runs)
	}

	mark := len(h.c.snapshot())
	res, err = run("resume", func(r Reply) { h.m.ResumeFullAuto(ctx, tp, r) })
	if err != nil || res.Run.State != protocol.FullAutoRunning {
		t.Errorf("fullAuto/resume = %+v, %v", res.Run, err)
	}
	waitNote(t, h, protocol.NotifyAttention, "", mark, func(b json.RawMessage) bool {
		var n protocol.AttentionNotification
		return json.Unmarshal(b, &n) == nil && n.Count == 0 && n.OldestSinceMs == nil
	})
	waitNote(t, h, protocol.NotifyTurnStarted, id, mark, nil)
	mark = len(h.c.snapshot())
	res, err = run("stop", func(r Reply) { h.m.StopFullAuto(ctx, tp, r) })
	if err != nil || res.Run.State != protocol.FullAutoStopped || *res.Run.StopCondition != "userStop" || res.Run.LastDecision.Rule != "userStop" {
		t.Errorf("fullAuto/stop = %+v, %v", res.Run, err)
	}
	waitNote(t, h, protocol.NotifyFullAutoStatusChanged, id, mark, hasState(protocol.FullAutoStopped))
	waitNote(t, h, protocol.NotifyTurnCompleted, id, mark, func(b json.RawMessage) bool {
		var n protocol.TurnNotification
		return json.Unmarshal(b, &n) == nil && n.Turn.Status == protocol.TurnInterrupted
	})
	_, err = run("resume", func(r Reply) { h.m.ResumeFullAuto(ctx, tp, r) })
	wantErr(t, "resume a stopped run", err, protocol.ErrInvalidRequest, "stopped")
	// A barrier through the thread: nothing started after the stop.
	mustCall[protocol.FullAutoStatusResult](t, h, "status", func(r Reply) { h.m.FullAutoStatus(ctx, protocol.FullAutoStatusParams{ThreadID: &id}, r) })
	if got := after(h.c.snapshot(), mark, protocol.NotifyTurnStarted, id); len(got) != 0 {
		t.Errorf("a turn started after the stop")
	}
	db, _ := h.m.store()
	rs, _ := db.Receipts(ctx, id)
	replayReceipts(t, rs)

	// Another Manager on the same store lists the run from the store.
	_ = h.m.Close()
	h.open(t, false)
	all = mustCall[protocol.FullAutoStatusResult](t, h, "status", func(r Reply) { h.m.FullAutoStatus(ctx, protocol.FullAutoStatusParams{}, r) })
	if len(all.Runs) != 1 || all.Runs[0].ThreadID != id || all.Runs[0].State != protocol.FullAutoStopped {
		t.Errorf("fullAuto/status {} from the store = %+v", all.Runs)
	}
}

// TestGoalsInProcess: thread/goal/* (CORE.md §7) in process: creation
// with a continuation turn that has no userMessage item, errors, status
// changes, an interrupted goal turn (goalInterrupted: active, no
// continuation), the sync on thread/resume, and clearing.
func TestGoalsInProcess(t *testing.T) {
	h := newHarness(t, scripted.Script{Rules: []scripted.Rule{
		{Match: "slow goal", Steps: []scripted.Step{{Text: "Thinking hard.", Hang: true}}},
		{Match: "write the book", Steps: []scripted.Step{{Text: "Chapter written; more to come.", Usage: &scripted.Usage{Input: 300, Cached: 100, Output: 20}}}},
	}}, false)
	ctx := context.Background()
	id := h.startThread(t, threadParams(nil, "never")).Thread.ID
	set := func(p protocol.ThreadGoalSetParams) (protocol.ThreadGoalSetResult, error) {
		return call[protocol.ThreadGoalSetResult](t, h, "goal/set", func(r Reply) { h.m.SetGoal(ctx, p, r) })
	}
	get := func(id string) protocol.ThreadGoalGetResult {
		return mustCall[protocol.ThreadGoalGetResult](t, h, "goal/get", func(r Reply) { h.m.GetGoal(ctx, protocol.ThreadIDParams{ThreadID: id}, r) })
	}

	_, err := set(protocol.ThreadGoalSetParams{ThreadID: id, TokenBudget: protocol.Optional[int64]{Present: true, Value: ptr(int64(10))}})
	wantErr(t, "goal/set without a goal", err, protocol.ErrInvalidRequest, "no goal exists")
	if g := get(id); g.Goal != nil {
		t.Errorf("goal/get without a goal = %+v", g.Goal)
	}
	res, err := set(protocol.ThreadGoalSetParams{ThreadID: id, Objective: ptr("write the book"), TokenBudget: protocol.Optional[int64]{Present: true, Value: ptr(int64(100_000))}})
	if err != nil || res.Goal.Status != protocol.GoalActive || *res.Goal.TokenBudget != 100_000 {
		t.Fatalf("goal/set = %+v, %v", res, err)
	}
	started := waitNote(t, h, protocol.NotifyTurnStarted, id, 0, nil)
	waitNote(t, h, protocol.NotifyFullAutoDecision, id, started, nil)
	log := h.c.snapshot()
	if n := len(after(log, started, protocol.NotifyItemStarted, id)); n == 0 {
		t.Fatal("no items in the goal's turn")
	}
	for _, e := range after(log, started, protocol.NotifyItemStarted, id) {
		if strings.Contains(string(e.Params), `"type":"userMessage"`) {
			t.Errorf("the goal's continuation turn has a userMessage item")
		}
	}
	reqs := h.srv.Requests()
	if last := reqs[len(reqs)-1].LastUserText; !strings.Contains(last, "Continue working toward the active thread goal.") {
		t.Errorf("the goal turn's input = %q", last)
	}
	// Progress after each response carries the turn id.
	var withTurn bool
	for _, e := range filter(log, protocol.NotifyThreadGoalUpdated, id) {
		var n protocol.ThreadGoalUpdatedNotification
		_ = json.Unmarshal(e.Params, &n)
		withTurn = withTurn || (n.TurnID != nil && n.Goal.TokensUsed > 0)
	}
	if !withTurn {
		t.Errorf("no thread/goal/updated with the turn's id and tokens used")
	}
	res, _ = set(protocol.ThreadGoalSetParams{ThreadID: id, Status: ptr(protocol.GoalPaused)})
	if res.Goal.Status != protocol.GoalPaused {
		t.Errorf("paused goal = %+v", res.Goal)
	}
	res, _ = set(protocol.ThreadGoalSetParams{ThreadID: id, Status: ptr(protocol.GoalComplete)})
	if g := get(id); g.Goal == nil || g.Goal.Status != protocol.GoalComplete || res.Goal.Status != protocol.GoalComplete {
		t.Errorf("completed goal = %+v", g.Goal)
	}
	mark := len(h.c.snapshot())
	cl := mustCall[protocol.ThreadGoalClearResult](t, h, "goal/clear", func(r Reply) { h.m.ClearGoal(ctx, protocol.ThreadGoalClearParams{ThreadID: id}, r) })
	if !cl.Cleared {
		t.Errorf("goal/clear = false")
	}
	waitNote(t, h, protocol.NotifyThreadGoalCleared, id, mark, nil)
	cl = mustCall[protocol.ThreadGoalClearResult](t, h, "goal/clear", func(r Reply) { h.m.ClearGoal(ctx, protocol.ThreadGoalClearParams{ThreadID: id}, r) })
	if cl.Cleared {
		t.Errorf("goal/clear twice = true")
	}
	eph := h.startThread(t, protocol.ThreadStartParams{Ephemeral: ptr(true)}).Thread.ID
	_, err = set(protocol.ThreadGoalSetParams{ThreadID: eph, Objective: ptr("x")})
	wantErr(t, "goal on an ephemeral thread", err, protocol.ErrInvalidRequest, "ephemeral thread does not support goals")

	// An interrupted goal turn leaves the goal active, with no continuation.
	slow := h.startThread(t, threadParams(nil, "never")).Thread.ID
	mark = len(h.c.snapshot())
	if _, err := set(protocol.ThreadGoalSetParams{ThreadID: slow, Objective: ptr("slow goal")}); err != nil {
		t.Fatal(err)
	}
	i := waitNote(t, h, protocol.NotifyTurnStarted, slow, mark, nil)
	var tn protocol.TurnNotification
	_ = json.Unmarshal(h.c.snapshot()[i].Params, &tn)
	mustCall[protocol.Empty](t, h, "interrupt", func(r Reply) {
		h.m.InterruptTurn(ctx, protocol.TurnInterruptParams{ThreadID: slow, TurnID: tn.Turn.ID}, r)
	})
	di := waitNote(t, h, protocol.NotifyFullAutoDecision, slow, i, nil)
	var dn protocol.FullAutoDecisionNotification
	_ = json.Unmarshal(h.c.snapshot()[di].Params, &dn)
	if dn.Receipt.Rule != "waiting.interrupted" || dn.Receipt.Executed {
		t.Errorf("decision after the interrupt = %+v", dn.Receipt)
	}
	// goal/get goes through the thread: everything the decision caused
	// has been sent.
	if g := get(slow); g.Goal == nil || g.Goal.Status != protocol.GoalActive {
		t.Errorf("goal after the interrupt = %+v, want active", g.Goal)
	}
	if got := after(h.c.snapshot(), di, protocol.NotifyTurnStarted, slow); len(got) != 0 {
		t.Errorf("a continuation started after the interrupt")
	}
	mark = len(h.c.snapshot())
	mustCall[protocol.ThreadResumeResult](t, h, "resume", func(r Reply) { h.m.ResumeThread(ctx, protocol.ThreadResumeParams{ThreadID: slow}, r) })
	u := waitNote(t, h, protocol.NotifyThreadGoalUpdated, slow, mark, nil)
	var un protocol.ThreadGoalUpdatedNotification
	_ = json.Unmarshal(h.c.snapshot()[u].Params, &un)
	if un.Goal.Status != protocol.GoalActive || un.TurnID != nil {
		t.Errorf("thread/goal/updated after resume = %+v", un)
	}
	mustCall[protocol.ThreadResumeResult](t, h, "resume", func(r Reply) { h.m.ResumeThread(ctx, protocol.ThreadResumeParams{ThreadID: id}, r) })
	waitNote(t, h, protocol.NotifyThreadGoalCleared, id, mark, nil)
	db, _ := h.m.store()
	rs, _ := db.Receipts(ctx, slow)
	if len(rs) != 1 || rs[0].Override != "goalInterrupted" {
		t.Errorf("receipts of the interrupted goal = %+v", rs)
	}
	replayReceipts(t, rs)
}

// idClient is a fakeClient that re-sends a request under its old id, as
// server's client does.
type idClient struct{ *fakeClient }

func (c idClient) CallWithID(id int64, method string, params any) ClientCall {
	c.mu.Lock()
	next := c.nextID
	c.nextID = id
	c.mu.Unlock()
	call := c.Call(method, params)
	c.mu.Lock()
	c.nextID = max(next, id+1)
	c.mu.Unlock()
	return call
}

// TestFullAutoRestartInProcess: a run waiting on an approval when its
// Manager closes resends the request (same id, same params) from the next
// one; answering it runs the command and carries the run on in a new turn
// that starts with the command's item. A run closed mid-turn goes on with
// the restart text, or waits paused, as full_auto.on_restart says.
func TestFullAutoRestartInProcess(t *testing.T) {
	t.Run("approval", func(t *testing.T) {
		for _, withID := range []bool{true, false} {
			h := newHarness(t, scripted.Script{Rules: []scripted.Rule{{Match: "S-restart", Steps: []scripted.Step{
				{Text: "Creating the marker.", ToolCalls: []scripted.ToolCall{{Command: "touch marker.txt"}}},
				{Text: "The task is complete."},
			}}}}, false)
			cwd := t.TempDir()
			id := h.startThread(t, threadParams(&cwd, "untrusted")).Thread.ID
			mustCall[protocol.FullAutoRunResult](t, h, "start", func(r Reply) {
				h.m.StartFullAuto(context.Background(), protocol.FullAutoStartParams{ThreadID: id, Objective: ptr("S-restart: create marker.txt"), Approvals: ptr(protocol.FullAutoApproveAsk)}, r)
			})
			first := <-h.c.calls
			waitNote(t, h, protocol.NotifyFullAutoStatusChanged, id, 0, hasState(protocol.FullAutoWaiting))
			_ = h.m.Close()

			h.open(t, false)
			if withID {
				h.m.opts.Client, h.m.client = idClient{h.c}, idClient{h.c}
			}
			h.m.RestoreFullAuto()
			again := <-h.c.calls
			if string(again.params) != string(first.params) || (withID && again.id != first.id) {
				t.Errorf("re-sent request %d %s, want %d %s", again.id, again.params, first.id, first.params)
			}
			if _, err := os.Stat(filepath.Join(cwd, "marker.txt")); err == nil {
				t.Fatal("marker.txt exists before the approval")
			}
			again.answer <- callAnswer{raw: json.RawMessage(`{"decision":"accept"}`)}
			end := waitNote(t, h, protocol.NotifyFullAutoStatusChanged, id, 0, hasState(protocol.FullAutoStopped))
			var n protocol.FullAutoStatusChangedNotification
			_ = json.Unmarshal(h.c.snapshot()[end].Params, &n)
			if *n.Run.StopCondition != "completed" {
				t.Errorf("run stopped with %s", *n.Run.StopCondition)
			}
			if _, err := os.Stat(filepath.Join(cwd, "marker.txt")); err != nil {
				t.Errorf("marker.txt after the approval: %v", err)
			}
			var cmdDone bool
			for _, e := range filter(h.c.snapshot(), protocol.NotifyItemCompleted, id) {
				ps := string(e.Params)
				cmdDone = cmdDone || (strings.Contains(ps, `"type":"commandExecution"`) && strings.Contains(ps, `"status":"completed"`))
			}
			if !cmdDone {
				t.Errorf("no completed commandExecution item in the resumed turn")
			}
		}
	})

	// The other outcomes of a request resent after a restart: a declined
	// command, and a question, whose answers reach the model in the turn
	// that carries the run on.
	for _, tc := range []struct {
		name, answer, modelSees string
		call                    scripted.ToolCall
	}{
		{"declined", `{"decision":"decline"}`, "The user declined to run this command.", scripted.ToolCall{Command: "touch marker.txt"}},
		{"question", `{"answers":{"lang":{"answers":["French"]}}}`, "French", scripted.ToolCall{Name: "request_user_input",
			Arguments: `{"questions":[{"id":"lang","header":"Language","question":"Which language?","options":[{"label":"English"},{"label":"French"}]}]}`}},
		{"fileChange", `{"decision":"accept"}`, "apserver restarted while your file change waited for approval", scripted.ToolCall{Name: "apply_patch",
			Input: "*** Begin Patch\n*** Add File: notes.txt\n+hello\n*** End Patch\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, scripted.Script{Rules: []scripted.Rule{{Match: "S-restart", Steps: []scripted.Step{
				{Text: "First this.", ToolCalls: []scripted.ToolCall{tc.call}},
				{Text: "The task is complete."},
			}}}}, false)
			cwd := t.TempDir()
			id := h.startThread(t, threadParams(&cwd, "untrusted")).Thread.ID
			mustCall[protocol.FullAutoRunResult](t, h, "start", func(r Reply) {
				h.m.StartFullAuto(context.Background(), protocol.FullAutoStartParams{ThreadID: id, Objective: ptr("S-restart: go"), Approvals: ptr(protocol.FullAutoApproveAsk)}, r)
			})
			<-h.c.calls
			waitNote(t, h, protocol.NotifyFullAutoStatusChanged, id, 0, hasState(protocol.FullAutoWaiting))
			_ = h.m.Close()
			h.open(t, false)
			h.m.RestoreFullAuto()
			// The resent request, and any the model makes again (a file
			// change is made anew after a restart), get the answer.
			done := make(chan struct{})
			defer close(done)
			go func() {
				for {
					select {
					case fc := <-h.c.calls:
						fc.answer <- callAnswer{raw: json.RawMessage(tc.answer)}
					case <-done:
						return
					}
				}
			}()
			waitNote(t, h, protocol.NotifyFullAutoStatusChanged, id, 0, hasState(protocol.FullAutoStopped))
			var saw bool
			for _, rq := range h.srv.Requests() {
				saw = saw || strings.Contains(string(rq.Body), tc.modelSees)
			}
			if !saw {
				t.Errorf("the model never saw %q after the restart", tc.modelSees)
			}
			if _, err := os.Stat(filepath.Join(cwd, "marker.txt")); err == nil {
				t.Errorf("marker.txt exists: a declined command ran")
			}
		})
	}

	for _, mode := range []string{"running", "paused"} {
		t.Run("midturn-"+mode, func(t *testing.T) {
			h := newHarness(t, scripted.Script{Rules: []scripted.Rule{
				{Match: "apserver restarted", Steps: []scripted.Step{{Text: "Checked the workspace. The task is complete."}}},
				{Match: "Continue working toward the objective", Steps: []scripted.Step{{Text: "Resumed. The task is complete."}}},
				{Match: "S-midturn", Steps: []scripted.Step{{Deltas: 10, DeltaText: "partial ", StallAfter: 2}}},
			}}, false)
			id := h.startThread(t, threadParams(nil, "never")).Thread.ID
			mustCall[protocol.FullAutoRunResult](t, h, "start", func(r Reply) {
				h.m.StartFullAuto(context.Background(), protocol.FullAutoStartParams{ThreadID: id, Objective: ptr("S-midturn: finish the job")}, r)
			})
			waitNote(t, h, protocol.NotifyAgentMessageDelta, id, 0, nil)
			_ = h.m.Close()
			cfg := h.m.opts.Config
			cfg.FullAuto.OnRestart = mode
			h.c = newFakeClient()
			h.m = NewManager(Options{OpenStore: h.m.opts.OpenStore, Config: cfg, Client: h.c, Logger: h.m.log})
			t.Cleanup(func() { _ = h.m.Close() })
			h.m.RestoreFullAuto()
			if mode == "paused" {
				p := waitNote(t, h, protocol.NotifyFullAutoStatusChanged, id, 0, hasState(protocol.FullAutoPaused))
				if !strings.Contains(string(h.c.snapshot()[p].Params), `"reason":"apserver restarted"`) {
					t.Errorf("after the restart: %s", h.c.snapshot()[p].Params)
				}
				mustCall[protocol.FullAutoRunResult](t, h, "resume", func(r Reply) {
					h.m.ResumeFullAuto(context.Background(), protocol.FullAutoThreadParams{ThreadID: id}, r)
				})
			}
			waitNote(t, h, protocol.NotifyFullAutoStatusChanged, id, 0, hasState(protocol.FullAutoStopped))
			want := map[string]string{"running": "apserver restarted", "paused": "Continue working toward the objective"}[mode]
			reqs := h.srv.Requests()
			if last := reqs[len(reqs)-1].LastUserText; !strings.Contains(last, want) {
				t.Errorf("the model's input after the restart = %q, want it to contain %q", last, want)
			}
		})
	}
}

// TestTimeBudgetOnFakeClock: a run's time budget runs out while its
// turn waits on a model that never answers; on the fake clock the turn is
// interrupted at the budget's end and the run stops with budgetTime.
func TestTimeBudgetOnFakeClock(t *testing.T) {
	r := startScenarioManager(t, scripted.Script{Rules: []scripted.Rule{{Match: "S-deadline", Steps: []scripted.Step{{Hang: true}}}}}, "")
	h := &harness{m: r.m, c: r.c, srv: r.srv}
	id := h.startThread(t, threadParams(nil, "never")).Thread.ID
	mustCall[protocol.FullAutoRunResult](t, h, "start", func(rp Reply) {
		r.m.StartFullAuto(context.Background(), protocol.FullAutoStartParams{ThreadID: id, Objective: ptr("S-deadline: wait"),
			Budgets: &protocol.FullAutoBudgets{TimeMs: ptr(int64(60_000))}}, rp)
	})
	waitNote(t, h, protocol.NotifyTurnStarted, id, 0, nil)
	start := r.clock.Now()
	r.clock.fireWithin(t, 61*time.Second) // not the turn's 2 h cap
	if got := r.clock.Now().Sub(start); got != 60_001*time.Millisecond {
		t.Errorf("the turn's deadline came after %v, want the budget (60 s) and 1 ms", got)
	}
	waitNote(t, h, protocol.NotifyTurnCompleted, id, 0, func(b json.RawMessage) bool {
		var n protocol.TurnNotification
		return json.Unmarshal(b, &n) == nil && n.Turn.Status == protocol.TurnInterrupted
	})
	end := waitNote(t, h, protocol.NotifyFullAutoStatusChanged, id, 0, hasState(protocol.FullAutoStopped))
	var n protocol.FullAutoStatusChangedNotification
	_ = json.Unmarshal(h.c.snapshot()[end].Params, &n)
	if *n.Run.StopCondition != "budgetTime" || n.Run.Spent.TimeMs < 60_000 {
		t.Errorf("run ended %s after %d ms, want budgetTime after the budget", *n.Run.StopCondition, n.Run.Spent.TimeMs)
	}
}

// TestPauseDuringCooldown: a run paused while it waits out the cooldown
// after a failed turn starts no turn when the cooldown ends; resumed, it
// goes on at once.
func TestPauseDuringCooldown(t *testing.T) {
	r := startScenarioManager(t, scripted.Script{Rules: []scripted.Rule{{Match: "S-cool", Steps: []scripted.Step{
		{HTTPError: 503, FailTimes: 1, Text: "Working."},
	}}}}, "request_max_retries = 0\n[full_auto]\nerror_backoff_ms = 1000\n")
	h := &harness{m: r.m, c: r.c, srv: r.srv}
	id := h.startThread(t, threadParams(nil, "never")).Thread.ID
	ctx := context.Background()
	mustCall[protocol.FullAutoRunResult](t, h, "start", func(rp Reply) {
		r.m.StartFullAuto(ctx, protocol.FullAutoStartParams{ThreadID: id, Objective: ptr("S-cool: work")}, rp)
	})
	dec := waitNote(t, h, protocol.NotifyFullAutoDecision, id, 0, nil)
	var d protocol.FullAutoDecisionNotification
	_ = json.Unmarshal(h.c.snapshot()[dec].Params, &d)
	if d.Receipt.Rule != "retry" {
		t.Fatalf("decision after the failed turn = %+v, want a retry", d.Receipt)
	}
	tp := protocol.FullAutoThreadParams{ThreadID: id}
	mustCall[protocol.FullAutoRunResult](t, h, "pause", func(rp Reply) { r.m.PauseFullAuto(ctx, tp, rp) })
	at, ok, _ := r.clock.next()
	if !ok || at.Sub(r.clock.Now()) != time.Second {
		t.Fatalf("pending cooldown = %v (%t), want 1 s", at.Sub(r.clock.Now()), ok)
	}
	r.clock.fireWithin(t, time.Second)
	// The timer posted its event before fireNext returned; a call through
	// the thread's inbox comes after it.
	mustCall[protocol.FullAutoStatusResult](t, h, "status", func(rp Reply) {
		r.m.FullAutoStatus(ctx, protocol.FullAutoStatusParams{ThreadID: &id}, rp)
	})
	if got := after(h.c.snapshot(), dec, protocol.NotifyTurnStarted, id); len(got) != 0 {
		t.Fatalf("a paused run started a turn when the cooldown ended")
	}
	mark := len(h.c.snapshot())
	mustCall[protocol.FullAutoRunResult](t, h, "resume", func(rp Reply) { r.m.ResumeFullAuto(ctx, tp, rp) })
	waitNote(t, h, protocol.NotifyTurnStarted, id, mark, nil)
}

// TestDecisionModelFails: a decision model that answers nonsense leaves
// the decision to the policy, and an approval it was asked about goes to
// the editor after all; the receipts say so and replay.
func TestDecisionModelFails(t *testing.T) {
	sc := scripted.Script{Rules: []scripted.Rule{
		{Match: "policy proposal:", Steps: []scripted.Step{{Text: "not json"}}},
		{Match: "asks to run this shell command", Steps: []scripted.Step{{Text: "{\"decision\": \"maybe\", \"reason\": \"?\", \"confidence\": 1}"}}},
		{Match: "S-badmodel", Steps: []scripted.Step{
			{Text: "Creating the marker.", ToolCalls: []scripted.ToolCall{{Command: "touch marker.txt"}}},
			{Text: "The task is complete."},
		}},
	}}
	r := startScenarioManager(t, sc, "[roles.decision]\nmodel = \"scripted-decision\"\n")
	h := &harness{m: r.m, c: r.c, srv: r.srv}
	cwd := t.TempDir()
	tp := threadParams(&cwd, "untrusted")
	tp.Sandbox = ptr(protocol.SandboxDangerFullAccess) // unsandboxed: the policy passes the command on
	id := h.startThread(t, tp).Thread.ID
	mustCall[protocol.FullAutoRunResult](t, h, "start", func(rp Reply) {
		r.m.StartFullAuto(context.Background(), protocol.FullAutoStartParams{ThreadID: id, Objective: ptr("S-badmodel: create marker.txt")}, rp)
	})
	fc := <-h.c.calls // the model failed: the editor is asked
	fc.answer <- callAnswer{raw: json.RawMessage(`{"decision":"accept"}`)}
	end := waitNote(t, h, protocol.NotifyFullAutoStatusChanged, id, 0, hasState(protocol.FullAutoStopped))
	if !strings.Contains(string(h.c.snapshot()[end].Params), `"stopCondition":"completed"`) {
		t.Errorf("run ended %s, want completed by the policy", h.c.snapshot()[end].Params)
	}
	if _, err := os.Stat(filepath.Join(cwd, "marker.txt")); err != nil {
		t.Errorf("marker.txt: %v", err)
	}
	db, _ := r.m.store()
	rs, _ := db.Receipts(context.Background(), id)
	got := decisionScript(t, rs)
	for _, want := range []string{"-> forward rule=model.lowConfidence source=model", "-> stop rule=done stop=completed source=policy"} {
		if !strings.Contains(got, want) {
			t.Errorf("receipts lack %q:\n%s", want, got)
		}
	}
	replayReceipts(t, rs)
}
