package brain

import (
	"testing"

	"github.com/apserver/apserver/protocol"
)

// A proposed decision waits on a human unless its run is still going and
// the run's trust will confirm it: planning trust auto before the plan is
// approved (the model's in the planner's thread), a task the trust lets
// go on without a human and that is not over (a task thread's).
func TestAwaitsHuman(t *testing.T) {
	auto := protocol.RunTrust{Planning: protocol.TrustAuto, Implementation: protocol.TrustAuto, Fixes: protocol.TrustAuto}
	run := func(tr protocol.RunTrust, status protocol.RunStatus, approved bool, task protocol.RunTask) *protocol.Run {
		task.ID = "t1"
		return &protocol.Run{ID: "r1", Status: status, Trust: tr, Plan: protocol.RunPlan{Approved: approved, Tasks: []protocol.RunTask{task}}}
	}
	running := protocol.RunTask{Status: protocol.TaskRunning}
	proposed := func(source, runID, taskID string) protocol.ProjectDecision {
		return protocol.ProjectDecision{ID: "d", Status: protocol.DecisionProposed, Source: source, RunID: runID, TaskID: taskID}
	}
	manualImpl := auto
	manualImpl.Implementation = protocol.TrustManual
	manualFixes := auto
	manualFixes.Fixes = protocol.TrustManual
	manualPlan := auto
	manualPlan.Planning = protocol.TrustManual
	for _, c := range []struct {
		name string
		d    protocol.ProjectDecision
		r    *protocol.Run
		want bool
	}{
		{"not proposed", protocol.ProjectDecision{Status: protocol.DecisionActive}, nil, false},
		{"no run", proposed("model", "", ""), nil, true},
		{"run unknown", proposed("model", "r1", "t1"), nil, true},
		{"run over", proposed("model", "r1", "t1"), run(auto, protocol.RunCompleted, true, running), true},
		{"task under auto trust", proposed("model", "r1", "t1"), run(auto, protocol.RunRunning, true, running), false},
		{"task under manual trust", proposed("model", "r1", "t1"), run(manualImpl, protocol.RunRunning, true, running), true},
		{"high-risk task", proposed("model", "r1", "t1"), run(auto, protocol.RunRunning, true, protocol.RunTask{Status: protocol.TaskRunning, PlanTask: protocol.PlanTask{Risk: protocol.RiskHigh}}), true},
		{"fix attempt under manual fixes", proposed("model", "r1", "t1"), run(manualFixes, protocol.RunRunning, true, protocol.RunTask{Status: protocol.TaskRunning, RetryCount: 1}), true},
		{"task blocked", proposed("model", "r1", "t1"), run(auto, protocol.RunPaused, true, protocol.RunTask{Status: protocol.TaskBlocked}), true},
		{"task not in the plan", proposed("model", "r1", "t9"), run(auto, protocol.RunRunning, true, running), true},
		{"planner thread, planning auto", proposed("model", "r1", ""), run(auto, protocol.RunRunning, false, running), false},
		{"planner thread, planning manual", proposed("model", "r1", ""), run(manualPlan, protocol.RunWaiting, false, running), true},
		{"planner's stated, plan waiting", proposed("planner", "r1", ""), run(manualPlan, protocol.RunWaiting, false, running), false},
	} {
		if got := AwaitsHuman(c.d, c.r); got != c.want {
			t.Errorf("%s: AwaitsHuman = %v, want %v", c.name, got, c.want)
		}
	}
}

// Confirming records who confirmed.
func TestConfirmKeepsWho(t *testing.T) {
	d := protocol.ProjectDecision{ID: "d", Title: "x", Status: protocol.DecisionProposed, Source: "model"}
	got, err := Apply(&d, Event{Type: EventConfirmed, ID: "d", By: ByImplementationTrust})
	if err != nil || got.Status != protocol.DecisionActive || got.ConfirmedBy != ByImplementationTrust || got.Source != "model" {
		t.Fatalf("Apply(confirmed) = %+v, %v", got, err)
	}
}
