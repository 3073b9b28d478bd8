package fullauto

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/protocol"
)

// newDriver starts a drive on an idle thread and returns the driver, with
// the first turn's StartTurn recorded.
func newDriver(t *testing.T, opts Options, p protocol.FullAutoStartParams) *driver {
	t.Helper()
	if opts.ThreadID == "" {
		opts.ThreadID = "th"
	}
	m := New(opts)
	d := &driver{t: t, m: m, now: 1_000_000}
	if p.Objective == nil {
		p.Objective = ptr("make it work")
	}
	effs, err := m.Start(d.now, p, "")
	if err != nil {
		t.Fatal(err)
	}
	d.apply(effs)
	return d
}

// turn plays one turn of the drive (the one it last started) that ends with
// summary s, and returns the decision's receipt.
func (d *driver) turn(id string, s controller.TurnSummary) StoreReceipt {
	d.t.Helper()
	kind := ""
	if len(d.starts) > 0 {
		kind = d.starts[len(d.starts)-1].Kind
	}
	d.starts = nil
	d.m.TurnStarted(d.now, id, kind)
	return d.end(id, s)
}

// end ends the running turn id with summary s and decides.
func (d *driver) end(id string, s controller.TurnSummary) StoreReceipt {
	d.t.Helper()
	d.now += 1000
	s.TurnID = id
	if s.Status == "" {
		s.Status = controller.StatusCompleted
	}
	d.decided, d.fp, d.asked = nil, nil, nil
	d.apply(d.m.TurnEnded(d.now, TurnEnd{Summary: s}))
	if d.fp == nil {
		d.t.Fatalf("turn %s: no decision under way", id)
	}
	d.apply(d.m.Fingerprinted(d.now, d.fp.Token, "fp-"+id))
	if d.asked != nil {
		return StoreReceipt{}
	}
	if len(d.decided) != 1 {
		d.t.Fatalf("turn %s: %d decisions, want 1", id, len(d.decided))
	}
	return d.decided[0]
}

func (d *driver) noteMethods() []string {
	var out []string
	for _, n := range d.notes {
		out = append(out, n.Method)
	}
	return out
}

func mustReplay(t *testing.T, rec StoreReceipt) {
	t.Helper()
	b, _ := json.Marshal(rec.Input)
	var in DecisionInput
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	if _, why, same := ReplayDecision(in, rec.Output.(controller.Decision), rec.PolicyHash, rec.Executed, rec.Override); !same {
		t.Errorf("receipt does not replay: %s", why)
	}
}

// TestOverrides: the three ways a decision is not carried out as decided,
// each recorded on its receipt and replayed.
func TestOverrides(t *testing.T) {
	more := controller.TurnSummary{AgentMessage: "Halfway; more to do.", Steps: []controller.Step{{Tool: "x", Action: "x: 1"}}}

	t.Run("turnStarted", func(t *testing.T) {
		d := newDriver(t, Options{}, protocol.FullAutoStartParams{})
		d.m.TurnStarted(d.now, "t1", "")
		d.apply(d.m.TurnEnded(d.now, TurnEnd{Summary: controller.TurnSummary{TurnID: "t1", Status: controller.StatusCompleted, AgentMessage: more.AgentMessage}}))
		// A client starts a turn while the fingerprint is taken.
		d.starts = nil
		d.m.TurnStarted(d.now, "user", "")
		d.apply(d.m.Fingerprinted(d.now, d.fp.Token, "fp"))
		rec := d.decided[0]
		if rec.Executed || rec.Override != OverrideTurnStarted || len(d.starts) != 0 {
			t.Errorf("continue during a client's turn: executed %t override %q, %d turns started; want the client's turn to be the next", rec.Executed, rec.Override, len(d.starts))
		}
		mustReplay(t, rec)
	})

	t.Run("onApprovalTimeout", func(t *testing.T) {
		for _, mode := range []protocol.OnTimeout{protocol.OnTimeoutPause, protocol.OnTimeoutStop} {
			d := newDriver(t, Options{}, protocol.FullAutoStartParams{OnApprovalTimeout: &mode})
			d.m.TurnStarted(d.now, "t1", "")
			_, timeout, _ := d.m.RequestForwarded(d.now, "t1", 7, "command", "npm publish", "approve")
			if timeout != 0 {
				t.Errorf("approval timeout = %d, want the run's (0: wait forever)", timeout)
			}
			d.apply(d.m.RequestSettled(d.now, "t1", 7, Settled{TimedOut: true}))
			rec := d.end("t1", controller.TurnSummary{AgentMessage: "declined"})
			wantState, wantOverride := protocol.FullAutoPaused, OverrideTimeoutMode
			if mode == protocol.OnTimeoutStop {
				wantState, wantOverride = protocol.FullAutoStopped, ""
			}
			if d.m.Drive().State != wantState || rec.Override != wantOverride || d.m.Drive().Stop != controller.StopApprovalTimeout {
				t.Errorf("%s: state %s (%s), override %q; want %s, %q", mode, d.m.Drive().State, d.m.Drive().Stop, rec.Override, wantState, wantOverride)
			}
			mustReplay(t, rec)
		}
	})

	t.Run("goalInterrupted", func(t *testing.T) {
		m := New(Options{ThreadID: "th"})
		d := &driver{t: t, m: m, now: 5000}
		_, effs, err := m.SetGoal(d.now, protocol.ThreadGoalSetParams{ThreadID: "th", Objective: ptr("write the book")})
		if err != nil {
			t.Fatal(err)
		}
		d.apply(effs)
		rec := d.turn("t1", controller.TurnSummary{Status: controller.StatusInterrupted})
		if rec.Executed || rec.Override != OverrideGoalInterrupted || m.Drive().State != protocol.FullAutoRunning || len(d.starts) != 0 {
			t.Errorf("interrupted goal turn: executed %t override %q state %s, %d turns started; want the goal active with no continuation",
				rec.Executed, rec.Override, m.Drive().State, len(d.starts))
		}
		mustReplay(t, rec)
		// The next turn that completes re-arms it.
		m.TurnStarted(d.now, "user", "")
		rec = d.end("user", more)
		if !rec.Executed || len(d.starts) != 1 {
			t.Errorf("after a user's turn: executed %t, %d turns started; want a continuation", rec.Executed, len(d.starts))
		}
	})
}

// TestRunLifecycle: start, pause, resume, stop and their errors, with the
// notifications each sends after the reply.
func TestRunLifecycle(t *testing.T) {
	m := New(Options{ThreadID: "th", ApprovalTimeoutMs: 600000})
	if _, err := m.Start(0, protocol.FullAutoStartParams{ThreadID: "th"}, ""); !errors.Is(err, protocol.ErrInvalidParams) {
		t.Errorf("start with no objective on an empty thread: %v, want invalid params", err)
	}
	d := &driver{t: t, m: m, now: 1000}
	effs, err := m.Start(d.now, protocol.FullAutoStartParams{ThreadID: "th", Objective: ptr(" do it "), Approvals: ptr(protocol.FullAutoApproveNever),
		Review: ptr(true), Budgets: &protocol.FullAutoBudgets{Turns: ptr(5)}}, "")
	if err != nil {
		t.Fatal(err)
	}
	d.apply(effs)
	r := m.Drive()
	if r.Objective != "do it" || r.Approvals != controller.ApproveNever || !r.Config.ReviewOnDone || r.Config.Budgets.Turns != 5 || r.ApprovalTimeoutMs != 600000 {
		t.Errorf("run = %+v", r)
	}
	if len(d.starts) != 1 || d.starts[0].Text != "do it" || d.starts[0].Hidden != "" {
		t.Errorf("first turn = %+v, want the objective as a visible message", d.starts)
	}
	if _, err := m.Start(d.now, protocol.FullAutoStartParams{ThreadID: "th", Objective: ptr("again")}, ""); !errors.Is(err, protocol.ErrInvalidRequest) {
		t.Errorf("second start: %v, want invalid request", err)
	}
	d.turn("t1", controller.TurnSummary{AgentMessage: "more to do", Steps: []controller.Step{{Tool: "x", Action: "x: 1"}}})
	// Pause while the next turn runs: its decision is dropped.
	m.TurnStarted(d.now, "t2", d.starts[0].Kind)
	d.starts, d.notes = nil, nil
	d.now += 500
	d.apply(m.Pause(d.now))
	if r.State != protocol.FullAutoPaused || fmt.Sprint(d.noteMethods()) != "[fullAuto/statusChanged thread/goal/updated]" {
		t.Errorf("pause: state %s, notes %v", r.State, d.noteMethods())
	}
	if w := m.Wire(d.now + 10_000); w.Spent.TimeMs != r.Spent.TimeMs {
		t.Errorf("a paused run's time grows: %d then %d", r.Spent.TimeMs, w.Spent.TimeMs)
	}
	d.decided, d.fp = nil, nil
	d.apply(m.TurnEnded(d.now, TurnEnd{Summary: controller.TurnSummary{TurnID: "t2", Status: controller.StatusCompleted}}))
	if d.fp != nil || len(d.decided) != 0 {
		t.Errorf("a paused run decided on the turn that was running")
	}
	effs, err = m.Resume(d.now)
	if err != nil {
		t.Fatal(err)
	}
	d.apply(effs)
	// The turn that ran while paused does not count.
	if r.State != protocol.FullAutoRunning || len(d.starts) != 1 || !strings.Contains(d.starts[0].Hidden, `<apserver_full_auto turn="2">`) {
		t.Errorf("resume: state %s, starts %+v", r.State, d.starts)
	}
	m.TurnStarted(d.now, "t3", "")
	d.decided = nil
	d.apply(m.Stop(d.now))
	var interrupted bool
	if len(d.decided) != 1 || r.State != protocol.FullAutoStopped || r.Stop != controller.StopUserStop {
		t.Errorf("stop: %d decisions, state %s (%s)", len(d.decided), r.State, r.Stop)
	}
	effs = m.Stop(d.now)
	for _, e := range effs {
		if _, ok := e.(Interrupt); ok {
			interrupted = true
		}
		if _, ok := e.(StoreReceipt); ok {
			t.Errorf("a second stop stored a receipt")
		}
	}
	if !interrupted {
		t.Errorf("stop with a turn running does not interrupt it")
	}
	if _, err := m.Resume(d.now); !errors.Is(err, protocol.ErrInvalidRequest) {
		t.Errorf("resume a stopped run: %v", err)
	}
	if d.m.Drive().Last == nil || d.m.Drive().Last.Seq != d.seq {
		t.Errorf("last decision = %+v, want the stop's receipt #%d", d.m.Drive().Last, d.seq)
	}
}

// TestStartOnBusyOrEmptyThread: the objective defaults to the thread's
// first message; a running turn is taken over when it ends.
func TestStartOnBusyOrEmptyThread(t *testing.T) {
	m := New(Options{ThreadID: "th"})
	effs, err := m.Start(0, protocol.FullAutoStartParams{ThreadID: "th"}, "the first message")
	if err != nil {
		t.Fatal(err)
	}
	var st []StartTurn
	for _, e := range effs {
		if s, ok := e.(StartTurn); ok {
			st = append(st, s)
		}
	}
	if len(st) != 1 || !strings.Contains(st[0].Input.Hidden, ContinueText("the first message")) {
		t.Errorf("start on an idle thread with messages: %+v", st)
	}
	m2 := New(Options{ThreadID: "th", Ephemeral: true})
	m2.TurnStarted(0, "busy", "")
	effs, err = m2.Start(0, protocol.FullAutoStartParams{ThreadID: "th", Objective: ptr("o")}, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range effs {
		switch e.(type) {
		case StartTurn:
			t.Errorf("a turn started on a busy thread")
		case SaveDrive:
			t.Errorf("an ephemeral thread's run is saved")
		}
		if n, ok := e.(Notify); ok && n.Method == protocol.NotifyThreadGoalUpdated {
			t.Errorf("an ephemeral thread sent a goal")
		}
	}
}

// TestRetryCooldown: a recoverable failure is retried after the backoff,
// the same kind of turn again; a stale timer does nothing.
func TestRetryCooldown(t *testing.T) {
	d := newDriver(t, Options{ErrorBackoffMs: 1000}, protocol.FullAutoStartParams{})
	fail := controller.TurnSummary{Status: controller.StatusFailed, Error: &controller.TurnError{Message: "503", Recoverable: true}}
	d.m.TurnStarted(d.now, "t1", "")
	d.starts = nil
	d.end("t1", fail)
	// driver.apply fired the timer at once: the clock moved by the delay.
	if len(d.starts) != 1 || d.starts[0].Hidden != "" || d.starts[0].Kind != controller.KindNormal {
		t.Errorf("retry = %+v, want the same turn again with no new input", d.starts)
	}
	// A timer that fires after the drive changed starts nothing.
	d.starts = nil
	d.m.TurnStarted(d.now, "t2", "")
	effs := d.m.TurnEnded(d.now, TurnEnd{Summary: controller.TurnSummary{TurnID: "t2", Status: controller.StatusFailed, Error: fail.Error}})
	var fp Fingerprint
	for _, e := range effs {
		fp, _ = e.(Fingerprint)
	}
	var timer StartTurn
	for _, e := range d.m.Fingerprinted(d.now, fp.Token, "fp") {
		if s, ok := e.(StoreReceipt); ok && s.Kind == ReceiptDecision {
			for _, e := range d.m.ReceiptStored(d.now, "r", 9) {
				if st, ok := e.(StartTurn); ok {
					timer = st
				}
			}
		}
	}
	if timer.DelayMs != 2000 {
		t.Fatalf("second failure: cooldown %d ms, want 2000", timer.DelayMs)
	}
	d.apply(d.m.Pause(d.now))
	if effs := d.m.TimerFired(d.now+2000, timer.Token); len(effs) != 0 {
		t.Errorf("a stale timer: %v", effs)
	}
	// A failed start pauses the drive.
	d2 := newDriver(t, Options{}, protocol.FullAutoStartParams{})
	d2.apply(d2.m.TurnStartFailed(d2.now, "store unavailable"))
	if r := d2.m.Drive(); r.State != protocol.FullAutoPaused || !strings.Contains(r.Reason, "store unavailable") {
		t.Errorf("after a failed start: %s %q", r.State, r.Reason)
	}
}

// TestDecisionModel: the model is asked only when it has a say; a failed
// model leaves the policy to decide; stale answers are dropped.
func TestDecisionModel(t *testing.T) {
	d := newDriver(t, Options{DecisionModel: true}, protocol.FullAutoStartParams{})
	d.m.TurnStarted(d.now, "t1", "")
	d.end("t1", controller.TurnSummary{AgentMessage: "more to do", Steps: []controller.Step{{Tool: "x", Action: "x: 1"}}})
	if d.asked == nil {
		t.Fatal("the decision model was not asked about a plain continue")
	}
	if effs := d.m.ModelAnswered(d.now, d.asked.Token+1, nil); len(effs) != 0 {
		t.Errorf("a stale answer: %v", effs)
	}
	d.apply(d.m.ModelAnswered(d.now, d.asked.Token, &controller.ModelAnswer{Action: controller.ActStop, Reason: "done?", Confidence: 0.3}))
	rec := d.decided[0]
	if got := rec.Output.(controller.Decision); got.Rule != "model.lowConfidence" || d.m.Drive().State != protocol.FullAutoPaused {
		t.Errorf("low-confidence answer: %s, state %s", got.Rule, d.m.Drive().State)
	}
	mustReplay(t, rec)

	d2 := newDriver(t, Options{DecisionModel: true}, protocol.FullAutoStartParams{})
	d2.m.TurnStarted(d2.now, "t1", "")
	d2.end("t1", controller.TurnSummary{Status: controller.StatusFailed, Error: &controller.TurnError{Message: "bad key"}})
	if d2.asked != nil {
		t.Errorf("the decision model was asked about an unrecoverable failure (a hard rule)")
	}
	if !ModelHasSay(controller.Input{Turn: controller.TurnSummary{Status: controller.StatusCompleted, AgentMessage: "go on"}, Config: controller.DefaultConfig()}) {
		t.Errorf("ModelHasSay(a plain continue) = false")
	}
}

// TestApprovalLadder: rung 1 under each strategy (a receipt for each),
// rung 2's eligibility and confidence, rung 3's waiting and denial count.
func TestApprovalLadder(t *testing.T) {
	d := newDriver(t, Options{DecisionModel: true, QuestionMinConfidence: 0.8}, protocol.FullAutoStartParams{Approvals: ptr(protocol.FullAutoApprovePolicy)})
	m := d.m
	m.TurnStarted(d.now, "t1", "")
	req := controller.ApprovalRequest{Kind: "command", Command: "npm publish --dry-run", Paths: []string{}}
	outcome, effs := m.RequestAsked(d.now, "t1", "k1", req)
	if outcome != controller.OutcomeForward || len(effs) != 1 {
		t.Fatalf("policy on an unknown command = %s (%d effects), want forward and a receipt", outcome, len(effs))
	}
	if o, _ := m.RequestAsked(d.now, "t1", "k1", req); o != "" {
		t.Errorf("the same request asked again = %q, want no say (it was passed on)", o)
	}
	ok, objective, in := m.ModelMayAnswer("k1", req)
	if !ok || objective != "make it work" || in.Request.Prefix != "npm publish" {
		t.Fatalf("ModelMayAnswer = %t %q %+v", ok, objective, in)
	}
	if ok, _, _ := m.ModelMayAnswer("k1", req); ok {
		t.Errorf("the model is asked twice about one request")
	}
	for _, r := range []controller.ApprovalRequest{
		{Kind: "command", RuleDecision: "forbidden"},
		{Kind: "command", RuleDecision: "allow", Escalated: true},
		{Kind: "command", Opaque: "a variable names the program"},
		{Kind: "command", RuleDecision: "prompt", Sandboxed: true, Privileged: "sudo runs commands as another user"},
		{Kind: "command", RuleDecision: "allow", Privileged: "su runs commands as another user"},
		{Kind: "mcpToolCall", Command: "mcp__exfil__write", HumanOnly: "an untrusted workspace file added the server"},
	} {
		if ok, _, _ := m.ModelMayAnswer("k2", r); ok {
			t.Errorf("the model may answer %+v: a human's call", r)
		}
	}
	accepted, effs := m.ModelAnsweredRequest(d.now, "t1", in, RequestAnswer{Outcome: "accept", Confidence: 0.5, Reason: "maybe"}, "")
	if accepted || len(effs) != 1 || effs[0].(StoreReceipt).Output.(ApprovalOutput).Rule != "model.lowConfidence" {
		t.Errorf("an unsure model's answer counts: %t %v", accepted, effs)
	}
	accepted, _ = m.ModelAnsweredRequest(d.now, "t1", in, RequestAnswer{Outcome: "accept", Confidence: 0.9}, "")
	if !accepted {
		t.Errorf("a confident answer does not count")
	}
	if accepted, _ := m.ModelAnsweredRequest(d.now, "t1", in, RequestAnswer{Confidence: 1}, "timeout"); accepted {
		t.Errorf("a failed model's answer counts")
	}
	// Rung 3: a human declines three times; the prefix is then blocked.
	for i := range 3 {
		id := int64(10 + i)
		tracked, _, effs := m.RequestForwarded(d.now, "t1", id, "command", "rm -rf build", "approve")
		d.apply(effs)
		if !tracked || m.Drive().State != protocol.FullAutoWaiting {
			t.Fatalf("forwarded request: tracked %t, state %s", tracked, m.Drive().State)
		}
		d.apply(m.RequestSettled(d.now, "t1", id, Settled{Declined: true}))
		if m.Drive().State != protocol.FullAutoRunning {
			t.Errorf("answered request: state %s, want running", m.Drive().State)
		}
	}
	if len(m.RequestSettled(d.now, "t1", 99, Settled{})) != 0 {
		t.Errorf("an unknown request settled")
	}
	if o, _ := m.RequestAsked(d.now, "t1", "k9", controller.ApprovalRequest{Kind: "command", Command: "rm -rf dist"}); o != controller.OutcomeDecline {
		t.Errorf("a prefix declined 3 times = %s, want decline", o)
	}
	// Requests still pending when the turn ends are counted.
	_, _, effs = m.RequestForwarded(d.now, "t1", 20, "question", "", "answer")
	d.apply(effs)
	_, _, effs = m.RequestForwarded(d.now, "t1", 21, "command", "make", "approve")
	d.apply(effs)
	rec := d.end("t1", controller.TurnSummary{AgentMessage: "waiting"})
	in2 := rec.Input.(DecisionInput)
	if in2.Turn.PendingApprovals != 1 || in2.Turn.PendingQuestions != 1 {
		t.Errorf("pending at the end: %d approvals, %d questions; want 1, 1", in2.Turn.PendingApprovals, in2.Turn.PendingQuestions)
	}
	// No drive, no say.
	idle := New(Options{ThreadID: "x"})
	if o, effs := idle.RequestAsked(0, "t", "k", req); o != "" || effs != nil {
		t.Errorf("RequestAsked without a run = %q", o)
	}
	if tracked, _, _ := idle.RequestForwarded(0, "t", 1, "command", "", ""); tracked {
		t.Errorf("a request is tracked without a run")
	}
}

// TestGoalSet: thread/goal/set's cases and errors (CORE.md §7).
func TestGoalSet(t *testing.T) {
	m := New(Options{ThreadID: "th"})
	set := func(p protocol.ThreadGoalSetParams) (protocol.ThreadGoal, []Effect, error) {
		p.ThreadID = "th"
		return m.SetGoal(10_000, p)
	}
	for _, tc := range []struct {
		p    protocol.ThreadGoalSetParams
		want string
	}{
		{protocol.ThreadGoalSetParams{}, "no goal exists"},
		{protocol.ThreadGoalSetParams{Objective: ptr("  ")}, "must not be empty"},
		{protocol.ThreadGoalSetParams{Objective: ptr("o"), TokenBudget: protocol.Optional[int64]{Present: true, Value: ptr(int64(-1))}}, "must be positive"},
	} {
		if _, _, err := set(tc.p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SetGoal(%+v) = %v, want %q", tc.p, err, tc.want)
		}
	}
	g, effs, err := set(protocol.ThreadGoalSetParams{Objective: ptr("write"), TokenBudget: protocol.Optional[int64]{Present: true, Value: ptr(int64(5000))}})
	if err != nil || g.Status != protocol.GoalActive || g.TokenBudget == nil || *g.TokenBudget != 5000 || g.CreatedAt != 10 {
		t.Fatalf("new goal = %+v, %v", g, err)
	}
	goals, starts := 0, 0
	for _, e := range effs {
		if n, ok := e.(Notify); ok && n.Method == protocol.NotifyThreadGoalUpdated {
			goals++
		}
		if s, ok := e.(StartTurn); ok {
			starts++
			if !strings.Contains(s.Input.Hidden, "Token budget: 5000, used: 0, remaining: 5000") {
				t.Errorf("goal continuation = %q", s.Input.Hidden)
			}
		}
	}
	if goals != 1 || starts != 1 || m.Drive().Approvals != controller.ApproveAsk {
		t.Errorf("new goal: %d goal updates, %d turns, approvals %s; want 1, 1, ask", goals, starts, m.Drive().Approvals)
	}
	for _, tc := range []struct {
		status protocol.ThreadGoalStatus
		want   protocol.ThreadGoalStatus
	}{
		{protocol.GoalPaused, protocol.GoalPaused},
		{protocol.GoalActive, protocol.GoalActive},
		{protocol.GoalComplete, protocol.GoalComplete},
		{protocol.GoalPaused, protocol.GoalPaused}, // a finished goal shows paused
		{protocol.GoalBlocked, protocol.GoalBlocked},
		{protocol.GoalBudgetLimited, protocol.GoalBudgetLimited},
		{protocol.GoalPaused, protocol.GoalBudgetLimited}, // budget limits win
		{protocol.GoalActive, protocol.GoalActive},
	} {
		g, _, err := set(protocol.ThreadGoalSetParams{Status: &tc.status})
		if err != nil || g.Status != tc.want {
			t.Errorf("status %s: goal %s, %v; want %s", tc.status, g.Status, err, tc.want)
		}
	}
	g, _, _ = set(protocol.ThreadGoalSetParams{Objective: ptr("rewrite"), TokenBudget: protocol.Optional[int64]{Present: true}})
	if g.Objective != "rewrite" || g.TokenBudget != nil {
		t.Errorf("edit = %+v, want objective rewrite and no budget", g)
	}
	if effs := m.GoalOnResume(0); len(effs) != 1 || effs[0].(Notify).Method != protocol.NotifyThreadGoalUpdated {
		t.Errorf("GoalOnResume with a goal = %v", effs)
	}
	cleared, effs := m.ClearGoal(20_000)
	if !cleared || m.Drive() != nil || len(effs) != 3 {
		t.Errorf("ClearGoal = %t, %v", cleared, effs)
	}
	if cleared, _ := m.ClearGoal(0); cleared {
		t.Errorf("ClearGoal twice = true")
	}
	if effs := m.GoalOnResume(0); len(effs) != 1 || effs[0].(Notify).Method != protocol.NotifyThreadGoalCleared {
		t.Errorf("GoalOnResume without a goal = %v", effs)
	}
	eph := New(Options{ThreadID: "e", Ephemeral: true})
	if _, _, err := eph.SetGoal(0, protocol.ThreadGoalSetParams{Objective: ptr("o")}); err == nil {
		t.Errorf("a goal on an ephemeral thread")
	}
	if effs := eph.GoalOnResume(0); effs != nil {
		t.Errorf("GoalOnResume on an ephemeral thread = %v", effs)
	}
}

// TestRestore: after a restart a drive resends what it waited on, or goes
// on, or waits paused; answers carry it on, time out, or count denials.
func TestRestore(t *testing.T) {
	load := func(opts Options, st protocol.FullAutoState, onTimeout protocol.OnTimeout) *driver {
		opts.ThreadID = "th"
		m := New(opts)
		r := newDrive("o", 0)
		r.State, r.OnTimeout, r.ApprovalTimeoutMs, r.LastKind = st, onTimeout, 300, controller.KindReview
		m.Load(r)
		return &driver{t: t, m: m, now: 50_000}
	}
	d := load(Options{}, protocol.FullAutoWaiting, protocol.OnTimeoutPause)
	effs := d.m.Restore(d.now, []Pending{{ID: 4, TurnID: "t", Kind: "command", Command: "make deploy"}, {ID: 5, Kind: "question"}})
	var resent []int64
	for _, e := range effs {
		if r, ok := e.(Resend); ok {
			resent = append(resent, r.Request)
			if r.TimeoutMs != 300 {
				t.Errorf("resend timeout %d, want the run's 300", r.TimeoutMs)
			}
		}
	}
	if fmt.Sprint(resent) != "[4 5]" {
		t.Errorf("resent %v, want [4 5]", resent)
	}
	d.m.RequestMoved(5, 50)
	if carry, _, _ := d.m.ResentAnswered(d.now, 5, Settled{}); carry {
		t.Errorf("an answer under the old id of a moved request carried the run on")
	}
	carry, kind, effs := d.m.ResentAnswered(d.now, 4, Settled{Declined: true})
	d.apply(effs)
	if !carry || kind != controller.KindReview || d.m.Drive().Denials["make deploy"] != 1 || d.m.Drive().State != protocol.FullAutoWaiting {
		t.Errorf("declined: carry %t kind %s denials %v state %s", carry, kind, d.m.Drive().Denials, d.m.Drive().State)
	}
	carry, _, effs = d.m.ResentAnswered(d.now, 50, Settled{})
	d.apply(effs)
	if !carry || d.m.Drive().State != protocol.FullAutoRunning {
		t.Errorf("last answer: carry %t, state %s", carry, d.m.Drive().State)
	}
	tok := d.m.Token()
	d.apply(d.m.Carry(d.now, tok, TurnInput{Kind: kind, Resume: "items"}))
	if len(d.starts) != 1 || d.starts[0].Resume != "items" {
		t.Errorf("carry = %+v", d.starts)
	}
	if effs := d.m.Carry(d.now, tok-1, TurnInput{}); len(effs) != 0 {
		t.Errorf("a stale carry started a turn")
	}

	for _, mode := range []protocol.OnTimeout{protocol.OnTimeoutPause, protocol.OnTimeoutStop} {
		d := load(Options{}, protocol.FullAutoWaiting, mode)
		d.apply(d.m.Restore(d.now, []Pending{{ID: 1, Kind: "command"}}))
		carry, _, effs := d.m.ResentAnswered(d.now, 1, Settled{TimedOut: true})
		d.apply(effs)
		want := protocol.FullAutoPaused
		if mode == protocol.OnTimeoutStop {
			want = protocol.FullAutoStopped
		}
		if carry || d.m.Drive().State != want || d.m.Drive().Stop != controller.StopApprovalTimeout {
			t.Errorf("%s: timed out: carry %t state %s (%s)", mode, carry, d.m.Drive().State, d.m.Drive().Stop)
		}
	}

	d = load(Options{}, protocol.FullAutoWaiting, "")
	d.apply(d.m.Restore(d.now, nil))
	if d.m.Drive().State != protocol.FullAutoRunning || len(d.starts) != 1 || !strings.Contains(d.starts[0].Hidden, RestartText("o")) {
		t.Errorf("restart without requests: %s, %+v", d.m.Drive().State, d.starts)
	}
	d = load(Options{}, protocol.FullAutoRunning, "")
	d.apply(d.m.Restore(d.now, nil))
	if len(d.starts) != 1 || fmt.Sprint(d.noteMethods()) != "[fullAuto/statusChanged thread/goal/updated]" {
		t.Errorf("running run restarted: %+v %v", d.starts, d.noteMethods())
	}
	d = load(Options{OnRestartPaused: true}, protocol.FullAutoRunning, "")
	d.apply(d.m.Restore(d.now, nil))
	if d.m.Drive().State != protocol.FullAutoPaused || d.m.Drive().Reason != "apserver restarted" || len(d.starts) != 0 {
		t.Errorf("on_restart paused: %s %q", d.m.Drive().State, d.m.Drive().Reason)
	}
	if effs := d.m.Restore(d.now, nil); effs != nil {
		t.Errorf("restoring a paused run: %v", effs)
	}
}

// TestCompactionEvents: only real compactions count (the compaction
// items the driver sums up), never a response that filled the window; the
// turn's summary carries the context ratio after its last compaction.
func TestCompactionEvents(t *testing.T) {
	d := newDriver(t, Options{}, protocol.FullAutoStartParams{})
	d.m.TurnStarted(d.now, "t1", "")
	d.apply(d.m.ResponseDone(d.now, "t1", Response{Input: 950, ContextWindow: 1000}))
	d.apply(d.m.Compacted(d.now, "t1", 0.5))
	d.apply(d.m.Compacted(d.now, "t1", 0.25))
	d.apply(d.m.Compacted(d.now, "other", 0.99))
	rec := d.end("t1", controller.TurnSummary{Compactions: 2, AgentMessage: "more"})
	in := rec.Input.(DecisionInput)
	if in.Turn.Compactions != 2 || in.Turn.ContextRatio != 0.25 || in.Turn.Usage.Input != 950 {
		t.Errorf("compactions %d, ratio %v, input %d; want 2, 0.25, 950", in.Turn.Compactions, in.Turn.ContextRatio, in.Turn.Usage.Input)
	}
}

// TestReplacedTurn: a turn interrupted to make way for a client's
// compaction turn is counted but not decided on (no fingerprint, no
// receipt, no pause); the decision after the compaction turn carries the
// drive on.
func TestReplacedTurn(t *testing.T) {
	d := newDriver(t, Options{}, protocol.FullAutoStartParams{})
	d.m.TurnStarted(d.now, "t1", "")
	d.fp, d.decided = nil, nil
	d.apply(d.m.TurnEnded(d.now+500, TurnEnd{Summary: controller.TurnSummary{TurnID: "t1", Status: controller.StatusInterrupted}, Replaced: true}))
	if d.fp != nil || len(d.decided) != 0 {
		t.Fatalf("a replaced turn was decided on (fingerprint %v, %d receipts)", d.fp, len(d.decided))
	}
	if r := d.m.Drive(); r.State != protocol.FullAutoRunning || r.Spent.Turns != 1 {
		t.Fatalf("after a replaced turn: state %s, %d turns spent; want running, 1", r.State, r.Spent.Turns)
	}
	rec := d.turn("compact", controller.TurnSummary{})
	if rec.Output.(controller.Decision).Action != controller.ActContinue || len(d.starts) != 1 {
		t.Errorf("after the compaction turn: %+v, %d turns started; want continue, 1", rec.Output, len(d.starts))
	}
	if r := d.m.Drive(); r.Spent.Turns != 2 {
		t.Errorf("%d turns spent, want 2", r.Spent.Turns)
	}
}

// TestHandoff: two compactions in a row that leave the context above
// HandoffRatio turn the next continue into a handoff to a fresh thread,
// recorded on the receipt and replayed; one below resets the count. The
// fresh thread's machine adopts the drive with the handoff as hidden input.
func TestHandoff(t *testing.T) {
	more := controller.TurnSummary{AgentMessage: "Halfway; more to do.", Steps: []controller.Step{{Tool: "x", Action: "x: 1"}}, Compactions: 1}
	d := newDriver(t, Options{}, protocol.FullAutoStartParams{})
	d.m.TurnStarted(d.now, "t1", "")
	d.apply(d.m.Compacted(d.now, "t1", 0.8))
	d.apply(d.m.Compacted(d.now, "t1", 0.5)) // freed enough: count reset
	d.apply(d.m.Compacted(d.now, "t1", 0.8))
	if rec := d.end("t1", more); rec.Override != "" || len(d.handoffs) != 0 {
		t.Fatalf("one high compaction: override %q, %d handoffs", rec.Override, len(d.handoffs))
	}
	d.starts = nil
	d.m.TurnStarted(d.now, "t2", "")
	d.apply(d.m.Compacted(d.now, "t2", 0.8))
	more.Steps = []controller.Step{{Tool: "x", Action: "x: 2"}}
	rec := d.end("t2", more)
	if rec.Override != OverrideHandoff || !rec.Executed || len(d.handoffs) != 1 {
		t.Fatalf("two high compactions: override %q executed %v, %d handoffs", rec.Override, rec.Executed, len(d.handoffs))
	}
	mustReplay(t, rec)
	if len(d.starts) != 0 {
		t.Errorf("a handoff also started a turn here: %+v", d.starts)
	}
	d.apply(d.m.HandedOff(d.now, "fresh"))
	if r := d.m.Drive(); r.State != protocol.FullAutoStopped || r.Stop != controller.StopHandoff || !strings.Contains(r.Reason, "fresh") {
		t.Errorf("after the handoff: %s %s %q", r.State, r.Stop, r.Reason)
	}

	n := &driver{t: t, m: New(Options{ThreadID: "fresh"}), now: d.now}
	n.apply(n.m.Adopt(n.now, d.handoffs[0].Drive, "th", "HANDOFF TEXT"))
	if r := n.m.Drive(); !r.Active() || r.Objective != "make it work" || r.HandedOffFrom != "th" || r.Spent.Turns != 2 {
		t.Errorf("adopted run: %+v", r)
	}
	if len(n.starts) != 1 || !strings.Contains(n.starts[0].Hidden, "HANDOFF TEXT") {
		t.Errorf("adopted run starts %+v", n.starts)
	}
}

// TestEphemeralSeq: without a store the machine numbers receipts.
func TestEphemeralSeq(t *testing.T) {
	m := New(Options{ThreadID: "e", Ephemeral: true})
	m.Start(0, protocol.FullAutoStartParams{ThreadID: "e", Objective: ptr("o")}, "")
	m.TurnStarted(0, "t1", "")
	_, effs := m.RequestAsked(0, "t1", "k", controller.ApprovalRequest{Kind: "command", Command: "ls"})
	var seqs []int
	for _, e := range effs {
		seqs = append(seqs, e.(StoreReceipt).Seq)
	}
	for _, e := range m.Stop(0) {
		if s, ok := e.(StoreReceipt); ok {
			seqs = append(seqs, s.Seq)
		}
	}
	if fmt.Sprint(seqs) != "[1 2]" {
		t.Errorf("ephemeral receipt numbers %v, want [1 2]", seqs)
	}
}

// TestReplayApproval: a policy answer replays when the rules agree; a
// model's answer when the rules still pass the request on and the model
// may still answer it.
func TestReplayApproval(t *testing.T) {
	cmd := controller.ApprovalRequest{Kind: "command", Command: "npm publish", Paths: []string{}}
	forbidden := cmd
	forbidden.RuleDecision = "forbidden"
	allowed := cmd
	allowed.RuleDecision = "allow"
	escalated := cmd
	escalated.Escalated = true
	opaque := cmd
	opaque.Opaque = "cannot tell which program $(echo npm) runs"
	model := ApprovalOutput{ApprovalVerdict: controller.ApprovalVerdict{Outcome: "accept", Rule: "model"}, Source: controller.SourceModel}
	for _, tc := range []struct {
		name string
		in   ApprovalInput
		out  ApprovalOutput
		same bool
	}{
		{"policy agrees", ApprovalInput{Strategy: controller.ApprovePolicy, Request: allowed}, ApprovalOutput{ApprovalVerdict: controller.ApprovalVerdict{Outcome: "accept", Rule: "policy.ruleAllow"}, Source: "policy"}, true},
		{"policy differs", ApprovalInput{Strategy: controller.ApprovePolicy, Request: cmd}, ApprovalOutput{ApprovalVerdict: controller.ApprovalVerdict{Outcome: "accept", Rule: "policy.ruleAllow"}, Source: "policy"}, false},
		{"model after a forward", ApprovalInput{Strategy: controller.ApprovePolicy, Request: cmd}, model, true},
		{"model where the rules now answer", ApprovalInput{Strategy: controller.ApprovePolicy, Request: allowed}, model, false},
		{"model on a forbidden command", ApprovalInput{Strategy: controller.ApprovePolicy, Request: forbidden}, model, false},
		{"model under ask", ApprovalInput{Strategy: controller.ApproveAsk, Request: cmd}, model, false},
		{"model on an escalation", ApprovalInput{Strategy: controller.ApprovePolicy, Request: escalated}, model, false},
		{"model on an opaque command", ApprovalInput{Strategy: controller.ApprovePolicy, Request: opaque}, model, false},
	} {
		if _, why, same := ReplayApproval(tc.in, tc.out); same != tc.same {
			t.Errorf("%s: ReplayApproval same = %t (%s), want %t", tc.name, same, why, tc.same)
		}
	}
}

func TestTexts(t *testing.T) {
	if s := FileChangeRestartText("accept", "ship it"); !strings.Contains(s, "answer to it: accept.") || !strings.HasSuffix(s, "Objective:\nship it") {
		t.Errorf("FileChangeRestartText = %q", s)
	}
	if s := WrapHidden(nil, "x"); s != "<apserver_full_auto turn=\"1\">\nx\n</apserver_full_auto>" {
		t.Errorf("WrapHidden = %q", s)
	}
	r := &Drive{Objective: "o", Spent: controller.Spent{Tokens: 7000}, Config: controller.Config{Budgets: controller.Budgets{Tokens: 5000}}}
	if s := GoalText(r); !strings.Contains(s, "used: 7000, remaining: 0") {
		t.Errorf("GoalText over budget = %q", s)
	}
	w := WireDrive("th", &Drive{State: protocol.FullAutoStopped, Reason: "r", Stop: controller.StopCompleted, Last: &protocol.FullAutoReceipt{ID: "x"},
		Config: controller.Config{Budgets: controller.Budgets{Tokens: 1, Turns: 2, TimeMs: 3, CostUSD: 4}}}, 0)
	b := BudgetsFrom(&w.Budgets)
	if b != (controller.Budgets{Tokens: 1, Turns: 2, TimeMs: 3, CostUSD: 4}) || *w.StopCondition != "completed" || w.LastDecision.ID != "x" {
		t.Errorf("WireDrive/BudgetsFrom round trip = %+v, %+v", w, b)
	}
}

// TestTimeBudgetDuringTurn: under a time budget each turn gets a deadline
// at the budget's end; reaching it interrupts the turn, and the decision
// after it stops the drive on the budget.
func TestTimeBudgetDuringTurn(t *testing.T) {
	d := newDriver(t, Options{}, protocol.FullAutoStartParams{Budgets: &protocol.FullAutoBudgets{TimeMs: ptr(int64(5000))}})
	d.now += 1200
	effs := d.m.TurnStarted(d.now, "t1", "")
	if len(effs) != 1 || effs[0] != (TurnDeadline{TurnID: "t1", DelayMs: 3801}) {
		t.Fatalf("TurnStarted under a 5 s budget with 1.2 s spent = %v, want a deadline in 3801 ms", effs)
	}
	if got := d.m.DeadlineReached(d.now, "other"); got != nil {
		t.Errorf("the deadline of another turn = %v", got)
	}
	d.now += 3801
	if got := d.m.DeadlineReached(d.now, "t1"); len(got) != 1 || got[0] != (Interrupt{}) {
		t.Fatalf("DeadlineReached = %v, want the turn interrupted", got)
	}
	d.now -= 1000 // end() adds a second
	rec := d.end("t1", controller.TurnSummary{Status: controller.StatusInterrupted})
	if got := rec.Output.(controller.Decision); got.Rule != "budget.time" || d.m.Drive().State != protocol.FullAutoStopped {
		t.Errorf("after the deadline: rule %s, state %s; want budget.time, stopped", got.Rule, d.m.Drive().State)
	}
	if got := d.m.DeadlineReached(d.now, "t1"); got != nil {
		t.Errorf("a deadline after the turn ended = %v", got)
	}
	// No budget, no deadline.
	d2 := newDriver(t, Options{}, protocol.FullAutoStartParams{})
	if effs := d2.m.TurnStarted(d2.now, "t1", ""); effs != nil {
		t.Errorf("TurnStarted without a time budget = %v", effs)
	}
	// The wrap-up turn of a soft landing may finish its handoff.
	d3 := newDriver(t, Options{}, protocol.FullAutoStartParams{Budgets: &protocol.FullAutoBudgets{TimeMs: ptr(int64(5000))}})
	if effs := d3.m.TurnStarted(d3.now, "t1", controller.KindWrapUp); effs != nil {
		t.Errorf("TurnStarted for a wrap-up turn = %v, want no deadline", effs)
	}
}
