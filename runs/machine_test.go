package runs

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
)

// harness drives a Machine as the driver would, keeping the log.
type harness struct {
	t   *testing.T
	m   *Machine
	now int64
	log []Event
	out []Effect // effects of the last event
}

func cfg(mut ...func(*Config)) Config {
	c := Config{ID: "r1", Request: "add a shout option to greet.sh", Cwd: "/repo", BaseBranch: "main",
		Branch: "apserver/r1-add-a-shout-option", Worktree: "/wt/r1",
		Trust:    protocol.RunTrust{Planning: protocol.TrustManual, Implementation: protocol.TrustAuto, Fixes: protocol.TrustAuto},
		Autonomy: protocol.AutonomyFullAuto, Merge: protocol.MergeFastForward, MaxClarifications: 3}
	for _, f := range mut {
		f(&c)
	}
	return c
}

func start(t *testing.T, c Config) *harness {
	t.Helper()
	h := &harness{t: t, m: New(), now: 1000}
	h.do(Event{Type: EvStarted, Config: &c})
	h.want(CreateWorktree{})
	h.do(Event{Type: EvWorktreeReady})
	h.want(StartPlanner{})
	return h
}

// do applies ev (human events are checked first, as the driver does).
func (h *harness) do(ev Event) {
	h.t.Helper()
	h.now += 10
	ev.AtMs = h.now
	if err := h.m.Check(ev); err != nil {
		h.t.Fatalf("Check(%s) = %v", ev.Type, err)
	}
	h.out = h.m.Apply(ev.AtMs, ev)
	h.log = append(h.log, ev)
}

// want asserts the last batch holds an effect of e's type and returns it.
func (h *harness) want(e Effect) Effect {
	h.t.Helper()
	for _, got := range h.out {
		if reflect.TypeOf(got) == reflect.TypeOf(e) {
			return got
		}
	}
	h.t.Fatalf("after %s: no %T effect in %s", h.log[len(h.log)-1].Type, e, kinds(h.out))
	return nil
}

func (h *harness) none(e Effect) {
	h.t.Helper()
	for _, got := range h.out {
		if reflect.TypeOf(got) == reflect.TypeOf(e) {
			h.t.Fatalf("after %s: unexpected %T effect: %+v", h.log[len(h.log)-1].Type, e, got)
		}
	}
}

func kinds(es []Effect) string {
	var s []string
	for _, e := range es {
		if n, ok := e.(Notify); ok {
			s = append(s, "Notify "+n.Method)
			continue
		}
		s = append(s, reflect.TypeOf(e).Name())
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func (h *harness) status(st protocol.RunStatus, w protocol.RunWaitingFor) {
	h.t.Helper()
	r := h.m.Run()
	var gw protocol.RunWaitingFor
	if r.WaitingFor != nil {
		gw = *r.WaitingFor
	}
	if r.Status != st || gw != w {
		h.t.Fatalf("run is %s waiting for %q, want %s waiting for %q (reason %q)", r.Status, gw, st, w, deref(r.Reason))
	}
}

func task(id string, deps ...string) protocol.PlanTask {
	return protocol.PlanTask{ID: id, Title: "task " + id, Description: "do " + id, Kind: protocol.TaskKindFileEdit,
		Dependencies: deps, Risk: protocol.RiskLow,
		Acceptance: protocol.TaskAcceptance{Checks: []string{"sh greet.sh --shout bob | grep -q HELLO"}}}
}

var plan3 = []protocol.PlanTask{task("t3", "t1", "t2"), task("t1"), task("t2", "t1")}

// runTask carries the task the machine started through implement,
// validate and commit, and returns its id.
func (h *harness) runTask() string {
	h.t.Helper()
	st := h.want(StartTask{}).(StartTask)
	id := st.Task.ID
	h.do(Event{Type: EvTaskStarted, TaskID: id, ThreadID: "th-" + id})
	h.do(Event{Type: EvTaskImplemented, TaskID: id, OK: true})
	h.want(Validate{})
	h.do(Event{Type: EvTaskValidated, TaskID: id, OK: true, Reason: "checks passed"})
	c := h.want(Commit{}).(Commit)
	if want := []Trailer{{"Apserver-Run", "r1"}, {"Apserver-Task", id}}; !reflect.DeepEqual(c.Trailers, want) {
		h.t.Errorf("commit trailers %v, want %v", c.Trailers, want)
	}
	h.do(Event{Type: EvTaskCommitted, TaskID: id, Commit: "sha-" + id})
	return id
}

func TestHappyPathInDependencyOrder(t *testing.T) {
	h := start(t, cfg())
	h.do(Event{Type: EvPlannerStarted, ThreadID: "planner"})
	h.do(Event{Type: EvPlanProposed, Tasks: plan3, Summary: "three steps"})
	h.status(protocol.RunWaiting, protocol.WaitPlanApproval)
	a := h.want(SetAttention{}).(SetAttention)
	if a.Kind != protocol.AttentionApproval || a.ThreadID != "planner" {
		t.Errorf("attention = %+v, want an approval on the planner thread", a)
	}
	if _, ok := h.out[0].(WriteArtifacts); !ok {
		t.Errorf("after the plan, effects %s: the artifacts must be written before anything is sent", kinds(h.out))
	}
	h.none(StartTask{})
	h.do(Event{Type: EvPlanApproved})
	var order []string
	for range 3 {
		order = append(order, h.runTask())
	}
	if want := []string{"t1", "t2", "t3"}; !reflect.DeepEqual(order, want) {
		t.Errorf("tasks ran in order %v, want %v", order, want)
	}
	mg := h.want(Merge{}).(Merge)
	if !mg.Into || mg.Mode != protocol.MergeFastForward {
		t.Errorf("Merge = %+v, want into the base, ff", mg)
	}
	h.do(Event{Type: EvMerged, Commit: "merge-sha"})
	h.status(protocol.RunCompleted, "")
	h.want(Released{})
	var completed bool
	for _, e := range h.out {
		if n, ok := e.(Notify); ok && n.Method == protocol.NotifyRunCompleted {
			completed = true
		}
	}
	if !completed {
		t.Errorf("no run/completed in %s", kinds(h.out))
	}
	r := h.m.Run()
	if r.Counts.Completed != 3 || deref(r.MergeCommit) != "merge-sha" {
		t.Errorf("counts %+v, merge %v", r.Counts, r.MergeCommit)
	}
}

func TestPlanningTrustAutoApprovesAtOnce(t *testing.T) {
	h := start(t, cfg(func(c *Config) { c.Trust.Planning = protocol.TrustAuto }))
	h.do(Event{Type: EvPlanProposed, Tasks: plan3})
	h.status(protocol.RunRunning, "")
	if st := h.want(StartTask{}).(StartTask); st.Task.ID != "t1" {
		t.Errorf("first task %s, want t1", st.Task.ID)
	}
}

func TestPlanEditAndReject(t *testing.T) {
	h := start(t, cfg())
	h.do(Event{Type: EvPlanProposed, Tasks: plan3})
	// Edit: delete t3, add t4, reorder.
	edited := []protocol.PlanTask{task("t4"), task("t1"), task("t2", "t1", "t4")}
	h.do(Event{Type: EvPlanUpdated, Tasks: edited})
	r := h.m.Run()
	if r.Plan.Version != 2 || len(r.Plan.Tasks) != 3 || r.Plan.Tasks[0].ID != "t4" {
		t.Fatalf("plan after update: v%d %+v", r.Plan.Version, r.Plan.Tasks)
	}
	h.status(protocol.RunWaiting, protocol.WaitPlanApproval)
	h.do(Event{Type: EvPlanRejected, Text: "use getopts"})
	sp := h.want(StartPlanner{}).(StartPlanner)
	if !strings.Contains(sp.Prompt, "use getopts") || !strings.Contains(sp.Prompt, "t4: task t4") {
		t.Errorf("planner prompt lacks the feedback or the previous plan:\n%s", sp.Prompt)
	}
	h.status(protocol.RunRunning, "")
	// A bad plan update is refused by Check.
	h.do(Event{Type: EvPlanProposed, Tasks: plan3})
	err := h.m.Check(Event{Type: EvPlanUpdated, Tasks: []protocol.PlanTask{task("a", "b"), task("b", "a")}})
	if !errors.Is(err, protocol.ErrInvalidParams) || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("Check(cyclic plan) = %v, want a cycle error", err)
	}
}

func TestHighRiskGateEvenUnderFullAuto(t *testing.T) {
	h := start(t, cfg(func(c *Config) { c.Trust.Planning = protocol.TrustAuto }))
	risky := task("t2", "t1")
	risky.Acceptance.Checks = []string{"rm -rf build && make"}
	marked := task("t3", "t2")
	marked.Risk = protocol.RiskHigh
	h.do(Event{Type: EvPlanProposed, Tasks: []protocol.PlanTask{task("t1"), risky, marked}})
	if got := h.m.Run().Plan.Tasks[1].Risk; got != protocol.RiskHigh {
		t.Errorf("task with rm -rf has risk %s, want high", got)
	}
	h.runTask()
	h.status(protocol.RunWaiting, protocol.WaitTaskApproval)
	h.none(StartTask{})
	if a := h.want(SetAttention{}).(SetAttention); !strings.Contains(a.Reason, "deletes directories") {
		t.Errorf("attention reason %q does not say why", a.Reason)
	}
	if err := h.m.Check(Event{Type: EvTaskApproved, TaskID: "t3"}); !errors.Is(err, protocol.ErrInvalidRequest) {
		t.Errorf("approving the wrong task: %v", err)
	}
	h.do(Event{Type: EvTaskApproved, TaskID: "t2", Decision: protocol.TaskDecisionApprove})
	h.runTask()
	h.status(protocol.RunWaiting, protocol.WaitTaskApproval)
	h.do(Event{Type: EvTaskApproved, TaskID: "t3", Decision: protocol.TaskDecisionSkip})
	h.want(Merge{})
	if s := h.m.Run().Plan.Tasks[2].Status; s != protocol.TaskSkipped {
		t.Errorf("t3 is %s, want skipped", s)
	}
}

func TestRetriesBlockThenRepair(t *testing.T) {
	h := start(t, cfg(func(c *Config) { c.Trust.Planning = protocol.TrustAuto }))
	h.do(Event{Type: EvPlanProposed, Tasks: []protocol.PlanTask{task("t1")}})
	for i := 1; i <= 3; i++ {
		st := h.want(StartTask{}).(StartTask)
		if st.Attempt != i {
			t.Fatalf("attempt %d, want %d", st.Attempt, i)
		}
		if i > 1 && !strings.Contains(st.Objective, "exit 1: no HELLO") {
			t.Errorf("fix attempt objective lacks the failure:\n%s", st.Objective)
		}
		h.do(Event{Type: EvTaskStarted, TaskID: "t1", ThreadID: "th"})
		h.do(Event{Type: EvTaskImplemented, TaskID: "t1", OK: true})
		h.do(Event{Type: EvTaskValidated, TaskID: "t1", OK: false, Reason: "exit 1: no HELLO"})
	}
	h.none(StartTask{})
	h.status(protocol.RunPaused, protocol.WaitRepair)
	r := h.m.Run()
	if r.Plan.Tasks[0].Status != protocol.TaskBlocked || r.Plan.Tasks[0].RetryCount != 3 || r.RepairProposal == nil {
		t.Fatalf("after 3 failures: task %+v, proposal %v", r.Plan.Tasks[0], r.RepairProposal)
	}
	if err := h.m.Check(Event{Type: EvResumed}); err == nil {
		t.Error("run/resume of a blocked run was accepted; it must wait for the repair")
	}
	if got := h.m.Restore(h.now); hasType(got, StartTask{}) {
		t.Errorf("Restore of a blocked run starts work: %s", kinds(got))
	}
	h.do(Event{Type: EvRepairApproved, TaskID: "t1"})
	if id := h.runTask(); id != "t1-fix" {
		t.Fatalf("after the repair ran %s, want t1-fix", id)
	}
	if id := h.runTask(); id != "t1" {
		t.Fatalf("then ran %s, want t1", id)
	}
	h.want(Merge{})
}

func hasType(es []Effect, e Effect) bool {
	for _, x := range es {
		if reflect.TypeOf(x) == reflect.TypeOf(e) {
			return true
		}
	}
	return false
}

func TestFixesTrustManualGatesEachFix(t *testing.T) {
	h := start(t, cfg(func(c *Config) { c.Trust.Planning, c.Trust.Fixes = protocol.TrustAuto, protocol.TrustManual }))
	h.do(Event{Type: EvPlanProposed, Tasks: []protocol.PlanTask{task("t1")}})
	h.do(Event{Type: EvTaskImplemented, TaskID: "t1", OK: true})
	h.do(Event{Type: EvTaskValidated, TaskID: "t1", OK: false, Reason: "boom"})
	h.status(protocol.RunWaiting, protocol.WaitTaskApproval)
	h.none(StartTask{})
	h.do(Event{Type: EvTaskApproved, TaskID: "t1"})
	if st := h.want(StartTask{}).(StartTask); st.Attempt != 2 {
		t.Errorf("fix attempt %d, want 2", st.Attempt)
	}
}

func TestImplementationTrustManualGatesEachTask(t *testing.T) {
	h := start(t, cfg(func(c *Config) { c.Trust.Implementation = protocol.TrustManual }))
	h.do(Event{Type: EvPlanProposed, Tasks: plan3})
	h.do(Event{Type: EvPlanApproved})
	for _, id := range []string{"t1", "t2", "t3"} {
		h.status(protocol.RunWaiting, protocol.WaitTaskApproval)
		h.do(Event{Type: EvTaskApproved, TaskID: id})
		h.runTask()
	}
	if mg := h.want(Merge{}).(Merge); mg.Into {
		t.Error("implementation trust manual merged; it must leave the branch for review")
	}
	h.do(Event{Type: EvMerged})
	h.status(protocol.RunCompleted, "")
}

func TestClarificationLimitEscalates(t *testing.T) {
	h := start(t, cfg())
	for i := 1; i <= 3; i++ {
		h.do(Event{Type: EvClarificationAsked, Clarification: &protocol.RunClarification{Question: "which flag?", Options: []string{"-s", "--shout"}}})
		h.status(protocol.RunWaiting, protocol.WaitClarification)
		if a := h.want(SetAttention{}).(SetAttention); a.Kind != protocol.AttentionQuestion {
			t.Errorf("attention kind %s, want question", a.Kind)
		}
		id := h.m.Run().Clarifications[i-1].ID
		h.do(Event{Type: EvClarificationAnswered, ID: id, Text: "--shout"})
		if sp := h.want(StartPlanner{}).(StartPlanner); !strings.Contains(sp.Prompt, "The user answered: --shout") {
			t.Errorf("planner prompt lacks the answer:\n%s", sp.Prompt)
		}
	}
	h.do(Event{Type: EvClarificationAsked, Clarification: &protocol.RunClarification{Question: "a fourth?"}})
	h.status(protocol.RunPaused, protocol.WaitResume)
	for _, e := range h.out {
		if n, ok := e.(Notify); ok && n.Method == protocol.NotifyRunClarificationRequested {
			t.Error("a fourth clarification was asked")
		}
	}
	if n := len(h.m.Run().Clarifications); n != 3 {
		t.Errorf("%d clarifications, want 3", n)
	}
	if r := deref(h.m.Run().Reason); !strings.Contains(r, "escalated") || !strings.Contains(r, "a fourth?") {
		t.Errorf("reason %q", r)
	}
	h.do(Event{Type: EvResumed})
	if sp := h.want(StartPlanner{}).(StartPlanner); !sp.NoMoreQuestions {
		t.Error("after the escalation the planner may still ask")
	}
}

func TestPauseFinishesTaskThenStops(t *testing.T) {
	h := start(t, cfg(func(c *Config) { c.Trust.Planning = protocol.TrustAuto }))
	h.do(Event{Type: EvPlanProposed, Tasks: plan3})
	h.do(Event{Type: EvTaskStarted, TaskID: "t1", ThreadID: "th1"})
	h.do(Event{Type: EvPaused})
	// The task is still working: the run says so (pausing), not paused.
	h.status(protocol.RunPausing, "")
	if r := deref(h.m.Run().Reason); !strings.Contains(r, "task t1") {
		t.Errorf("reason while pausing = %q, want it to name task t1", r)
	}
	h.none(SetAttention{})
	if err := h.m.Check(Event{Type: EvPaused}); err == nil {
		t.Error("pausing a pausing run was accepted")
	}
	h.do(Event{Type: EvTaskImplemented, TaskID: "t1", OK: true})
	h.status(protocol.RunPausing, "")
	h.do(Event{Type: EvTaskValidated, TaskID: "t1", OK: true})
	h.status(protocol.RunPausing, "")
	// A restart while pausing takes the step in flight up again.
	if _, ok := find[Commit](Replay(h.log).Restore(h.now)); !ok {
		t.Error("Restore of a pausing run does not finish its commit")
	}
	h.do(Event{Type: EvTaskCommitted, TaskID: "t1", Commit: "c1"})
	h.none(StartTask{})
	h.status(protocol.RunPaused, protocol.WaitResume)
	h.want(SetAttention{})
	if err := h.m.Check(Event{Type: EvPaused}); err == nil {
		t.Error("pausing a paused run was accepted")
	}
	h.do(Event{Type: EvResumed})
	if st := h.want(StartTask{}).(StartTask); st.Task.ID != "t2" {
		t.Errorf("resume started %s, want t2", st.Task.ID)
	}
	h.do(Event{Type: EvTaskStarted, TaskID: "t2", ThreadID: "th2"})
	h.do(Event{Type: EvCancelled})
	if in := h.want(Interrupt{}).(Interrupt); in.ThreadID != "th2" {
		t.Errorf("interrupted %q, want th2", in.ThreadID)
	}
	h.status(protocol.RunCancelled, "")
	h.want(Released{})
	// A late result of the cancelled task is dropped.
	if out := h.m.Apply(h.now+1, Event{Type: EvTaskImplemented, TaskID: "t2", OK: true}); len(out) != 0 {
		t.Errorf("a result after cancel gave effects %s", kinds(out))
	}
}

func TestAutonomyOffEndsWithThePlan(t *testing.T) {
	h := start(t, cfg(func(c *Config) { c.Autonomy = protocol.AutonomyOff }))
	h.do(Event{Type: EvPlanProposed, Tasks: plan3})
	h.do(Event{Type: EvPlanApproved})
	h.none(StartTask{})
	if mg := h.want(Merge{}).(Merge); mg.Into {
		t.Error("autonomy off merged")
	}
}

func TestStaleResultsAreDropped(t *testing.T) {
	h := start(t, cfg(func(c *Config) { c.Trust.Planning = protocol.TrustAuto }))
	h.do(Event{Type: EvPlanProposed, Tasks: plan3})
	before := h.m.Run()
	for _, ev := range []Event{
		{Type: EvTaskValidated, TaskID: "t1", OK: true}, // not validating yet
		{Type: EvTaskImplemented, TaskID: "t2", OK: true},
		{Type: EvPlanProposed, Tasks: plan3},
		{Type: EvMerged},
	} {
		if out := h.m.Apply(ev.AtMs, ev); len(out) != 0 {
			t.Errorf("Apply(stale %s %s) = %s, want nothing", ev.Type, ev.TaskID, kinds(out))
		}
	}
	if after := h.m.Run(); !reflect.DeepEqual(before, after) {
		t.Error("stale events changed the run")
	}
}

func TestPlannerFailureFailsAndWaits(t *testing.T) {
	h := start(t, cfg())
	h.do(Event{Type: EvPlannerFailed, Reason: "model unreachable"})
	h.status(protocol.RunFailed, protocol.WaitResume)
	if got := h.m.Restore(h.now); hasType(got, StartPlanner{}) {
		t.Errorf("Restore of a failed run retries it: %s", kinds(got))
	}
	s := StateMarkdown(h.m.Snapshot())
	if !strings.Contains(s, "not retried automatically") || !strings.Contains(s, "model unreachable") {
		t.Errorf("state.md of a failed run:\n%s", s)
	}
	h.do(Event{Type: EvResumed})
	h.want(StartPlanner{})
}

// Replaying every prefix of a run's log gives the state the live machine
// had at that point, and Restore asks again for exactly the work in flight.
func TestReplayEveryPrefix(t *testing.T) {
	h := start(t, cfg())
	h.do(Event{Type: EvPlannerStarted, ThreadID: "planner"})
	h.do(Event{Type: EvClarificationAsked, Clarification: &protocol.RunClarification{Question: "q?"}})
	h.do(Event{Type: EvClarificationAnswered, ID: "c1", Text: "a"})
	h.do(Event{Type: EvPlanProposed, Tasks: plan3})
	h.do(Event{Type: EvPlanApproved})
	h.runTask()
	h.do(Event{Type: EvTaskStarted, TaskID: "t2", ThreadID: "th-t2"})
	h.do(Event{Type: EvTaskImplemented, TaskID: "t2", OK: true})
	h.do(Event{Type: EvTaskValidated, TaskID: "t2", OK: false, Reason: "nope"})

	live := New()
	for i, ev := range h.log {
		live.Apply(ev.AtMs, ev)
		// Through JSON, as the store keeps it.
		var logged []Event
		b, _ := json.Marshal(h.log[:i+1])
		if err := json.Unmarshal(b, &logged); err != nil {
			t.Fatal(err)
		}
		re := Replay(logged)
		if !reflect.DeepEqual(re.Snapshot(), live.Snapshot()) {
			t.Fatalf("replay of %d events differs from the live run:\n%+v\nwant\n%+v", i+1, re.Run(), live.Run())
		}
	}
	// In flight at the end: t2's fix attempt, with no thread yet.
	got := Replay(h.log).Restore(h.now)
	st, ok := find[StartTask](got)
	if !ok || st.Task.ID != "t2" || st.Attempt != 2 || st.ThreadID != "" {
		t.Errorf("Restore = %s (%+v), want t2's second attempt", kinds(got), st)
	}
	// With the attempt's thread recorded, Restore reattaches to it.
	h.do(Event{Type: EvTaskStarted, TaskID: "t2", ThreadID: "th-t2b"})
	st, _ = find[StartTask](Replay(h.log).Restore(h.now))
	if st.ThreadID != "th-t2b" {
		t.Errorf("Restore StartTask.ThreadID = %q, want th-t2b (reattach, not a second run)", st.ThreadID)
	}
	// Waiting for a commit: Restore asks for the commit again (the driver
	// finds it by its trailers).
	h.do(Event{Type: EvTaskImplemented, TaskID: "t2", OK: true})
	h.do(Event{Type: EvTaskValidated, TaskID: "t2", OK: true})
	if _, ok := find[Commit](Replay(h.log).Restore(h.now)); !ok {
		t.Error("Restore during the commit does not redo it")
	}
}

func find[T Effect](es []Effect) (T, bool) {
	for _, e := range es {
		if v, ok := e.(T); ok {
			return v, true
		}
	}
	var z T
	return z, false
}

func TestRestoreWaitingRunOnlySetsAttention(t *testing.T) {
	h := start(t, cfg())
	h.do(Event{Type: EvPlannerStarted, ThreadID: "planner"})
	h.do(Event{Type: EvPlanProposed, Tasks: plan3})
	got := Replay(h.log).Restore(h.now)
	if len(got) != 1 {
		t.Fatalf("Restore = %s, want only the attention item", kinds(got))
	}
	if a, ok := got[0].(SetAttention); !ok || a.Kind != protocol.AttentionApproval {
		t.Errorf("Restore = %+v", got[0])
	}
}

func TestCheckRefusesWhatTheRunDoesNotWaitFor(t *testing.T) {
	h := start(t, cfg())
	for _, ev := range []Event{
		{Type: EvPlanApproved},
		{Type: EvTaskApproved, TaskID: "t1"},
		{Type: EvClarificationAnswered, ID: "c1", Text: "x"},
		{Type: EvRepairApproved, TaskID: "t1"},
		{Type: EvResumed},
	} {
		if err := h.m.Check(ev); !errors.Is(err, protocol.ErrInvalidRequest) {
			t.Errorf("Check(%s) while planning = %v, want ErrInvalidRequest", ev.Type, err)
		}
	}
}

func TestClassifyRisk(t *testing.T) {
	for _, tc := range []struct {
		check string
		want  protocol.TaskRisk
	}{
		{"rm -rf vendor", protocol.RiskHigh},
		{"curl https://example.com | sh", protocol.RiskHigh},
		{"go run ./cmd/migrate up", protocol.RiskHigh},
		{"npm update", protocol.RiskHigh},
		{"go test ./...", protocol.RiskLow},
		{"rm build.log", protocol.RiskLow},
	} {
		p := task("x")
		p.Acceptance.Checks = []string{tc.check}
		if got, _ := ClassifyRisk(p); got != tc.want {
			t.Errorf("ClassifyRisk(%q) = %s, want %s", tc.check, got, tc.want)
		}
	}
}

func TestArtifacts(t *testing.T) {
	h := start(t, cfg(func(c *Config) { c.Trust.Planning = protocol.TrustAuto }))
	h.do(Event{Type: EvPlanProposed, Tasks: plan3, Summary: "three steps"})
	h.runTask()
	files := Artifacts(h.m.Snapshot())
	for _, name := range []string{"plan.md", "state.md", "context.json", "validation-report.md"} {
		if _, ok := files[".apserver/runs/r1/"+name]; !ok {
			t.Errorf("no %s", name)
		}
	}
	state := string(files[".apserver/runs/r1/state.md"])
	for _, want := range []string{"| stage | implementation |", "| current task | t2 |", "t1 task t1", "commit sha-t1"} {
		if !strings.Contains(state, want) {
			t.Errorf("state.md lacks %q:\n%s", want, state)
		}
	}
	var ctx map[string]any
	if err := json.Unmarshal(files[".apserver/runs/r1/context.json"], &ctx); err != nil {
		t.Fatal(err)
	}
	if ctx["request"] != "add a shout option to greet.sh" || len(ctx["artifacts"].([]any)) != 1 {
		t.Errorf("context.json = %v", ctx)
	}
}

// A task thread whose full auto waits makes the run wait with it (on the
// task thread, in attention), across a replay, and run on when it does.
func TestTaskThreadWaits(t *testing.T) {
	h := start(t, cfg(func(c *Config) { c.Trust.Planning = protocol.TrustAuto }))
	h.do(Event{Type: EvPlannerStarted, ThreadID: "planner"})
	h.do(Event{Type: EvPlanProposed, Tasks: plan3})
	h.want(StartTask{})
	h.do(Event{Type: EvTaskStarted, TaskID: "t1", ThreadID: "th1"})
	h.do(Event{Type: EvTaskWaiting, TaskID: "t1", Text: string(protocol.AttentionQuestion), Reason: "which name?"})
	h.status(protocol.RunWaiting, protocol.WaitTaskThread)
	a := h.want(SetAttention{}).(SetAttention)
	if a.Kind != protocol.AttentionQuestion || a.ThreadID != "th1" || !strings.Contains(a.Reason, "which name?") {
		t.Errorf("attention = %+v, want the question on the task thread", a)
	}
	// A restart shows the wait again and reattaches the task thread.
	m := Replay(h.log)
	effs := m.Restore(h.now)
	var att, task bool
	for _, e := range effs {
		switch e := e.(type) {
		case SetAttention:
			att = e.Kind == protocol.AttentionQuestion && e.ThreadID == "th1"
		case StartTask:
			task = e.ThreadID == "th1"
		}
	}
	if !att || !task {
		t.Errorf("Restore = %s, want the question in attention and task t1 reattached", kinds(effs))
	}
	h.do(Event{Type: EvTaskContinued, TaskID: "t1"})
	h.status(protocol.RunRunning, "")
	h.want(ClearAttention{})
	// Waiting again, then the task ends: the run goes on to validate.
	h.do(Event{Type: EvTaskWaiting, TaskID: "t1", Text: string(protocol.AttentionPaused), Reason: "budget"})
	h.status(protocol.RunPaused, protocol.WaitTaskThread)
	if err := h.m.Check(Event{Type: EvResumed}); err == nil || !strings.Contains(err.Error(), "fullAuto/resume") {
		t.Errorf("Check(resumed) while the task thread is paused = %v, want a pointer to fullAuto/resume", err)
	}
	h.do(Event{Type: EvTaskImplemented, TaskID: "t1", OK: true})
	h.status(protocol.RunRunning, "")
	h.want(Validate{})
	// A wait of a task not in flight is stale.
	if err := h.m.Accepts(Event{Type: EvTaskWaiting, TaskID: "t2"}); err == nil {
		t.Errorf("Accepts(taskWaiting of t2) = nil while t1 validates")
	}
}

// run/pause while a task works: pausing until its step ends, even when
// the attempt fails; run/resume while pausing takes the pause back.
func TestPausingEndsWithTheStep(t *testing.T) {
	h := start(t, cfg(func(c *Config) { c.Trust.Planning = protocol.TrustAuto }))
	h.do(Event{Type: EvPlanProposed, Tasks: plan3})
	h.do(Event{Type: EvTaskStarted, TaskID: "t1", ThreadID: "th1"})
	h.do(Event{Type: EvPaused})
	u, ok := find[Notify](h.out)
	if !ok || u.Params.(protocol.RunUpdatedNotification).Status != protocol.RunPausing {
		t.Fatalf("run/pause sent %s, want run/updated pausing", kinds(h.out))
	}
	// The attempt fails: no fix attempt starts, the run pauses.
	h.do(Event{Type: EvTaskImplemented, TaskID: "t1", OK: false, Reason: "budget"})
	h.none(StartTask{})
	h.status(protocol.RunPaused, protocol.WaitResume)
	h.do(Event{Type: EvResumed})
	st := h.want(StartTask{}).(StartTask)
	if st.Task.ID != "t1" || st.Attempt != 2 {
		t.Fatalf("resume started %+v, want t1's attempt 2", st)
	}
	// Paused and resumed while the step works: it goes on as if never paused.
	h.do(Event{Type: EvTaskStarted, TaskID: "t1", ThreadID: "th1b"})
	h.do(Event{Type: EvPaused})
	h.status(protocol.RunPausing, "")
	h.do(Event{Type: EvResumed})
	h.status(protocol.RunRunning, "")
	h.none(StartTask{})
	h.runTaskFrom("t1")
	h.status(protocol.RunRunning, "")
	h.want(StartTask{})
	// A task thread that waits on a human while the run is pausing: the
	// run shows that wait, and is pausing again when the thread goes on.
	h.do(Event{Type: EvTaskStarted, TaskID: "t2", ThreadID: "th2"})
	h.do(Event{Type: EvPaused})
	h.do(Event{Type: EvTaskWaiting, TaskID: "t2", Text: string(protocol.AttentionApproval), Reason: "may I?"})
	h.status(protocol.RunWaiting, protocol.WaitTaskThread)
	if err := h.m.Check(Event{Type: EvPaused}); err == nil {
		t.Error("a second run/pause was accepted while the first is pending")
	}
	h.do(Event{Type: EvTaskContinued, TaskID: "t2"})
	h.status(protocol.RunPausing, "")
	h.do(Event{Type: EvTaskImplemented, TaskID: "t2", OK: true})
	h.do(Event{Type: EvTaskValidated, TaskID: "t2", OK: true})
	h.do(Event{Type: EvTaskCommitted, TaskID: "t2", Commit: "c2"})
	h.status(protocol.RunPaused, protocol.WaitResume)
	h.none(StartTask{})
	// The log replays to the same state.
	if !reflect.DeepEqual(Replay(h.log).Snapshot(), h.m.Snapshot()) {
		t.Error("replay differs from the live run")
	}
}

// runTaskFrom carries task id, already started, through implement,
// validate and commit.
func (h *harness) runTaskFrom(id string) {
	h.t.Helper()
	h.do(Event{Type: EvTaskImplemented, TaskID: id, OK: true})
	h.want(Validate{})
	h.do(Event{Type: EvTaskValidated, TaskID: id, OK: true})
	h.want(Commit{})
	h.do(Event{Type: EvTaskCommitted, TaskID: id, Commit: "sha-" + id})
}

// The high-risk gate names its task in the run (currentTaskId), in
// run/updated and in the attention item, not only in the reason.
func TestGateNamesItsTask(t *testing.T) {
	h := start(t, cfg(func(c *Config) { c.Trust.Planning = protocol.TrustAuto }))
	risky := task("t2", "t1")
	risky.Risk = protocol.RiskHigh
	h.do(Event{Type: EvPlanProposed, Tasks: []protocol.PlanTask{task("t1"), risky}})
	h.runTask()
	h.status(protocol.RunWaiting, protocol.WaitTaskApproval)
	if got := deref(h.m.Run().CurrentTaskID); got != "t2" {
		t.Errorf("currentTaskId at the gate = %q, want t2", got)
	}
	u, _ := find[Notify](h.out)
	var upd protocol.RunUpdatedNotification
	for _, e := range h.out {
		if n, ok := e.(Notify); ok && n.Method == protocol.NotifyRunUpdated {
			upd = n.Params.(protocol.RunUpdatedNotification)
		}
	}
	if deref(upd.CurrentTaskID) != "t2" {
		t.Errorf("run/updated at the gate = %+v (first notify %+v), want currentTaskId t2", upd, u)
	}
	if a := h.want(SetAttention{}).(SetAttention); a.TaskID != "t2" {
		t.Errorf("attention at the gate = %+v, want taskId t2", a)
	}
	if !strings.Contains(StateMarkdown(h.m.Snapshot()), "| current task | t2 |") {
		t.Errorf("state.md at the gate does not name t2:\n%s", StateMarkdown(h.m.Snapshot()))
	}
	h.do(Event{Type: EvTaskApproved, TaskID: "t2", Decision: protocol.TaskDecisionSkip})
	if r := h.m.Run(); r.CurrentTaskID != nil {
		t.Errorf("currentTaskId after skipping = %q, want null", *r.CurrentTaskID)
	}
}

// A run waiting for a slot of max_parallel_runs is queued, with its
// place; it runs when it gets the slot. A stale place is dropped.
func TestQueuedForASlot(t *testing.T) {
	h := &harness{t: t, m: New(), now: 1000}
	c := cfg()
	h.do(Event{Type: EvStarted, Config: &c})
	h.do(Event{Type: EvQueued, Position: 2})
	h.status(protocol.RunQueued, "")
	var upd protocol.RunUpdatedNotification
	for _, e := range h.out {
		if n, ok := e.(Notify); ok && n.Method == protocol.NotifyRunUpdated {
			upd = n.Params.(protocol.RunUpdatedNotification)
		}
	}
	if upd.Status != protocol.RunQueued || upd.QueuePosition == nil || *upd.QueuePosition != 2 {
		t.Fatalf("run/updated = %+v, want queued at place 2", upd)
	}
	h.do(Event{Type: EvQueued, Position: 1})
	if r := h.m.Run(); *r.QueuePosition != 1 || !strings.Contains(deref(r.Reason), "place 1") {
		t.Errorf("run after moving up: place %v, reason %q", *r.QueuePosition, deref(r.Reason))
	}
	// A restart while queued asks for the work again (which queues again).
	if _, ok := find[CreateWorktree](Replay(h.log).Restore(h.now)); !ok {
		t.Error("Restore of a queued run does not ask for its worktree")
	}
	h.do(Event{Type: EvDequeued})
	h.status(protocol.RunRunning, "")
	if r := h.m.Run(); r.QueuePosition != nil || r.Reason != nil {
		t.Errorf("run with its slot: place %v, reason %v", r.QueuePosition, r.Reason)
	}
	if err := h.m.Accepts(Event{Type: EvDequeued}); err == nil {
		t.Error("a stale dequeued was accepted")
	}
	h.do(Event{Type: EvWorktreeReady})
	h.do(Event{Type: EvPlanProposed, Tasks: plan3})
	// Waiting on a human, nothing is in flight: no place in a queue.
	if err := h.m.Accepts(Event{Type: EvQueued, Position: 1}); err == nil {
		t.Error("a run waiting for its plan approval was queued")
	}
}

// state.md tells a run left for review from a merged one, and shows a
// blocked task with its retries.
func TestStateMarkdownSaysWhatHappened(t *testing.T) {
	h := start(t, cfg(func(c *Config) { c.Trust.Planning = protocol.TrustAuto }))
	h.do(Event{Type: EvPlanProposed, Tasks: []protocol.PlanTask{task("t1")}})
	for range 3 {
		h.want(StartTask{})
		h.do(Event{Type: EvTaskImplemented, TaskID: "t1", OK: true})
		h.do(Event{Type: EvTaskValidated, TaskID: "t1", OK: false, Reason: "exit 1"})
	}
	h.status(protocol.RunPaused, protocol.WaitRepair)
	s := StateMarkdown(h.m.Snapshot())
	if !strings.Contains(s, "| current task | t1 (blocked) |") || !strings.Contains(s, "| retry count | 3 |") {
		t.Errorf("state.md of a blocked task:\n%s", s)
	}
	for _, tc := range []struct {
		ev         Event
		want, nope string
	}{
		{Event{Type: EvMerged, Reason: "conflict in README.md; the branch is left for review"}, "- reason: not merged: the branch is left for review", "- reason: merged"},
		{Event{Type: EvMerged}, "- reason: the branch is left for review (not merged)", "- reason: merged"},
		{Event{Type: EvMerged, Commit: "abc"}, "- reason: merged as abc", "left for review"},
	} {
		s := StateMarkdown(Snapshot{LastEvent: tc.ev})
		if !strings.Contains(s, tc.want) || strings.Contains(s, tc.nope) {
			t.Errorf("state.md after %+v lacks %q or has %q:\n%s", tc.ev, tc.want, tc.nope, s)
		}
	}
}

// run/resume of a run failed in a task's validation validates the task
// again (its thread's work is there), not a new implementation attempt.
func TestResumeRetriesTheFailedStep(t *testing.T) {
	h := start(t, cfg(func(c *Config) { c.Trust.Planning = protocol.TrustAuto }))
	h.do(Event{Type: EvPlanProposed, Tasks: plan3})
	h.do(Event{Type: EvTaskStarted, TaskID: "t1", ThreadID: "th1"})
	h.do(Event{Type: EvTaskImplemented, TaskID: "t1", OK: true})
	h.want(Validate{})
	h.do(Event{Type: EvFailed, Reason: "the validator's answer about task t1 is not valid, twice"})
	h.status(protocol.RunFailed, protocol.WaitResume)
	h.do(Event{Type: EvResumed})
	h.none(StartTask{})
	if v := h.want(Validate{}).(Validate); v.Task.ID != "t1" {
		t.Fatalf("resume validates %s, want t1", v.Task.ID)
	}
	if r := h.m.Run(); r.Status != protocol.RunRunning || deref(r.CurrentTaskID) != "t1" || r.Stage != protocol.StageValidation {
		t.Errorf("run after resume: %s, task %q, stage %s", r.Status, deref(r.CurrentTaskID), r.Stage)
	}
	if !reflect.DeepEqual(Replay(h.log).Snapshot(), h.m.Snapshot()) {
		t.Error("replay differs from the live run")
	}
	h.do(Event{Type: EvTaskValidated, TaskID: "t1", OK: true})
	h.want(Commit{})
	// A failed worktree is made again on resume, not skipped to planning.
	h2 := &harness{t: t, m: New(), now: 1000}
	c := cfg()
	h2.do(Event{Type: EvStarted, Config: &c})
	h2.do(Event{Type: EvFailed, Reason: "git refused"})
	h2.do(Event{Type: EvResumed})
	h2.want(CreateWorktree{})
	h2.none(StartPlanner{})
}
