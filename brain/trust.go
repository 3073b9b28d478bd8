package brain

import "github.com/apserver/apserver/protocol"

// Who a run's trust confirms proposed decisions as (ProjectDecision's
// confirmedBy).
const (
	ByPlanningTrust       = "run trust planning=auto"
	ByImplementationTrust = "run trust implementation=auto"
)

// TaskTrusted reports whether the run's trust let task t go on without a
// human: implementation trust auto, the task not high risk (the gate
// asks a human under any trust), and, after a failed attempt, fixes trust
// auto. Then the decisions its threads proposed are confirmed when the
// task is committed; otherwise a human confirms them.
func TaskTrusted(r protocol.Run, t protocol.RunTask) bool {
	return r.Trust.Implementation == protocol.TrustAuto && t.Risk != protocol.RiskHigh &&
		(t.RetryCount == 0 || r.Trust.Fixes == protocol.TrustAuto)
}

// AwaitsHuman reports whether a proposed decision waits on a human
// (and so shows in the attention summary) rather than on its run: one no
// run proposed, one whose run is over or unknown (r nil), one whose
// stage the run's trust hands to a human. A planner's stated decision
// waits on its plan's approval (the run's own attention item when a
// human approves plans). A decision of the model in the planner's thread
// is confirmed by planning trust auto when the plan is; one of a task's
// thread by the task's commit when TaskTrusted.
func AwaitsHuman(d protocol.ProjectDecision, r *protocol.Run) bool {
	if d.Status != protocol.DecisionProposed {
		return false
	}
	if d.RunID == "" || r == nil || r.Status.Final() {
		return true
	}
	if d.Source == "planner" {
		return false
	}
	if d.TaskID == "" {
		return r.Trust.Planning != protocol.TrustAuto || r.Plan.Approved
	}
	for _, t := range r.Plan.Tasks {
		if t.ID != d.TaskID {
			continue
		}
		switch t.Status {
		case protocol.TaskCompleted, protocol.TaskFailed, protocol.TaskBlocked, protocol.TaskSkipped:
			return true
		}
		return !TaskTrusted(*r, t)
	}
	return true
}
