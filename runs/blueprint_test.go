package runs

import (
	"reflect"
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
)

func bpCfg(trust protocol.Trust) Config {
	return cfg(func(c *Config) {
		c.Trust.Planning = trust
		c.Blueprint = &protocol.RunBlueprint{BlueprintID: "bp_1", VersionID: "bpv_1", NodeID: "n_f", TaskIDs: []string{"t_b", "t_a"}}
		c.Tasks = []protocol.PlanTask{task("t_b", "t_a"), task("t_a")}
		c.Summary = "feature F"
	})
}

// A run from a blueprint starts with the blueprint's tasks as its plan: no
// planner; plan approval still applies; each committed task is evidence
// for the blueprint, asked again after a restart.
func TestBlueprintRunPlanAndEvidence(t *testing.T) {
	h := &harness{t: t, m: New(), now: 1000}
	c := bpCfg(protocol.TrustManual)
	h.do(Event{Type: EvStarted, Config: &c})
	if b := h.m.Run().Blueprint; b == nil || b.NodeID != "n_f" || !reflect.DeepEqual(b.TaskIDs, []string{"t_b", "t_a"}) {
		t.Fatalf("run's blueprint = %+v", b)
	}
	h.do(Event{Type: EvWorktreeReady})
	h.none(StartPlanner{})
	h.status(protocol.RunWaiting, protocol.WaitPlanApproval)
	r := h.m.Run()
	if r.Plan.Version != 1 || len(r.Plan.Tasks) != 2 || r.Plan.Tasks[0].ID != "t_b" || r.Plan.Summary != "feature F" {
		t.Fatalf("plan = %+v", r.Plan)
	}
	h.none(StartTask{})
	h.do(Event{Type: EvPlanApproved})
	var evidence []BlueprintEvidence
	for range 2 {
		id := h.runTask()
		ev := h.want(BlueprintEvidence{}).(BlueprintEvidence)
		if ev.TaskID != id || ev.Commit != "sha-"+id || ev.Branch != c.Branch || ev.Blueprint.BlueprintID != "bp_1" {
			t.Fatalf("evidence = %+v after task %s", ev, id)
		}
		evidence = append(evidence, ev)
	}
	if evidence[0].TaskID != "t_a" {
		t.Errorf("tasks ran %s first, want t_a (t_b depends on it)", evidence[0].TaskID)
	}
	// After a restart (before the merge), the evidence is asked again.
	m := Replay(h.log)
	var again []string
	for _, e := range m.Restore(h.now) {
		if ev, ok := e.(BlueprintEvidence); ok {
			again = append(again, ev.TaskID)
		}
	}
	if !reflect.DeepEqual(again, []string{"t_b", "t_a"}) {
		t.Errorf("Restore asked evidence for %v, want both tasks in plan order", again)
	}
}

// Under auto planning trust the blueprint's plan is approved at once and
// the first task starts; a rejected plan goes to the planner, told to keep
// the blueprint's task ids.
func TestBlueprintRunAutoTrustAndReject(t *testing.T) {
	h := &harness{t: t, m: New(), now: 1000}
	c := bpCfg(protocol.TrustAuto)
	h.do(Event{Type: EvStarted, Config: &c})
	h.do(Event{Type: EvWorktreeReady})
	if st := h.want(StartTask{}).(StartTask); st.Task.ID != "t_a" {
		t.Fatalf("first task %s, want t_a", st.Task.ID)
	}

	h = &harness{t: t, m: New(), now: 1000}
	c = bpCfg(protocol.TrustManual)
	h.do(Event{Type: EvStarted, Config: &c})
	h.do(Event{Type: EvWorktreeReady})
	h.do(Event{Type: EvPlanRejected, Text: "split t_b"})
	p := h.want(StartPlanner{}).(StartPlanner)
	for _, want := range []string{"- t_b: task t_b (depends on t_a)", "blueprint bp_1: keep the id", "split t_b"} {
		if !strings.Contains(p.Prompt, want) {
			t.Errorf("planner prompt lacks %q:\n%s", want, p.Prompt)
		}
	}
}

// A run without a blueprint asks no evidence.
func TestNoBlueprintNoEvidence(t *testing.T) {
	h := start(t, cfg())
	h.do(Event{Type: EvPlanProposed, Tasks: []protocol.PlanTask{task("t1")}})
	h.do(Event{Type: EvPlanApproved})
	h.runTask()
	h.none(BlueprintEvidence{})
}

// A blueprint run shows its progress: a task in progress when an attempt
// starts, blocked when it is blocked, planned again when the run is
// cancelled before its commit. A repair task, not the blueprint's, shows
// nothing.
func TestBlueprintRunProgress(t *testing.T) {
	h := &harness{t: t, m: New(), now: 1000}
	c := bpCfg(protocol.TrustAuto)
	h.do(Event{Type: EvStarted, Config: &c})
	h.do(Event{Type: EvWorktreeReady})
	if p := h.want(BlueprintProgress{}).(BlueprintProgress); p.TaskID != "t_a" || p.Status != protocol.NodeInProgress || p.Blueprint.BlueprintID != "bp_1" {
		t.Fatalf("progress at the start of t_a: %+v", p)
	}
	for range c.MaxRetries + 3 {
		h.do(Event{Type: EvTaskStarted, TaskID: "t_a", ThreadID: "th"})
		h.do(Event{Type: EvTaskImplemented, TaskID: "t_a", OK: true})
		h.do(Event{Type: EvTaskValidated, TaskID: "t_a", OK: false, Reason: "check failed"})
		if h.m.Run().RepairProposal != nil {
			break
		}
		h.want(BlueprintProgress{}) // the next attempt
	}
	if p := h.want(BlueprintProgress{}).(BlueprintProgress); p.TaskID != "t_a" || p.Status != protocol.NodeBlocked {
		t.Fatalf("progress of a blocked task: %+v", p)
	}
	h.do(Event{Type: EvRepairApproved, TaskID: "t_a"})
	if st := h.want(StartTask{}).(StartTask); st.Task.ID != "t_a-fix" {
		t.Fatalf("started %s, want the fix", st.Task.ID)
	}
	h.none(BlueprintProgress{})
	h.do(Event{Type: EvCancelled})
	var planned []string
	for _, e := range h.out {
		if p, ok := e.(BlueprintProgress); ok && p.Status == protocol.NodePlanned {
			planned = append(planned, p.TaskID)
		}
	}
	if !reflect.DeepEqual(planned, []string{"t_a"}) {
		t.Fatalf("planned again after the cancel: %v, want [t_a] (t_b never started)", planned)
	}
}
