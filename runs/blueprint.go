package runs

import (
	"fmt"
	"slices"

	"github.com/apserver/apserver/protocol"
)

// A run started from a blueprint (docs/runs.md, "Runs from a blueprint"):
// its configuration carries the blueprint's tasks, which are the run's
// first plan (the planner made them when the node's tasks were asked
// for); plan approval applies to them as to a planner's plan, and
// run/plan/reject sends them to the planner with the feedback. Each task
// committed after its validation passed is evidence for the blueprint
// (BlueprintEvidence).

// BlueprintEvidence asks the driver to record in the blueprint that a
// task of the run was validated and committed on the run's branch: the
// blueprint's task of that id becomes done, with the commit. It is asked
// again for every committed task by Restore; recording it twice changes
// nothing. It has no result event.
type BlueprintEvidence struct {
	Blueprint protocol.RunBlueprint
	TaskID    string
	Commit    string
	Branch    string
	AtMs      int64
}

func (BlueprintEvidence) effect() {}

// BlueprintProgress asks the driver to show in the blueprint where the
// run is with one of its tasks: in_progress when an attempt starts,
// blocked when the task is blocked, planned again when the run is
// cancelled before its commit. It never makes a task done (evidence does:
// BlueprintEvidence) nor changes a done one. It has no result event.
type BlueprintProgress struct {
	Blueprint protocol.RunBlueprint
	TaskID    string
	Status    protocol.NodeStatus
}

func (BlueprintProgress) effect() {}

// blueprintProgress is the progress of a task of a blueprint run.
func (m *Machine) blueprintProgress(taskID string, st protocol.NodeStatus) {
	if m.cfg.Blueprint == nil || !slices.Contains(m.cfg.Blueprint.TaskIDs, taskID) {
		return
	}
	m.emit(BlueprintProgress{Blueprint: *blueprintView(m.cfg), TaskID: taskID, Status: st})
}

// blueprintCancelled plans again the blueprint's tasks the cancelled run
// started and did not commit.
func (m *Machine) blueprintCancelled() {
	for _, t := range m.run.Plan.Tasks {
		if t.Status != protocol.TaskCompleted && (t.ThreadID != nil || t.Status == protocol.TaskBlocked || t.ID == m.cur) {
			m.blueprintProgress(t.ID, protocol.NodePlanned)
		}
	}
}

// blueprintView is the run's view of its blueprint (nil when none).
func blueprintView(c Config) *protocol.RunBlueprint {
	if c.Blueprint == nil {
		return nil
	}
	b := *c.Blueprint
	b.TaskIDs = slices.Clone(b.TaskIDs)
	return &b
}

// startFromBlueprint proposes the blueprint's tasks as the run's first
// plan, as if the planner had: approved at once under auto planning trust,
// else waiting for approval. It reports whether it did.
func (m *Machine) startFromBlueprint(now int64) bool {
	r := &m.run
	if m.cfg.Blueprint == nil || len(m.cfg.Tasks) == 0 || r.Plan.Version > 0 {
		return false
	}
	m.setPlan(m.cfg.Tasks, m.cfg.Summary)
	m.decide(now, fmt.Sprintf("plan v%d from blueprint %s: %d tasks", r.Plan.Version, m.cfg.Blueprint.BlueprintID, len(m.cfg.Tasks)))
	if r.Trust.Planning == protocol.TrustAuto {
		m.approvePlan(now, "approved by auto trust")
		m.advance(now)
	} else {
		m.wait(now, protocol.WaitPlanApproval, "the plan (from the blueprint) waits for approval")
	}
	return true
}

// blueprintCommitted is the evidence of a committed task of a blueprint
// run.
func (m *Machine) blueprintCommitted(t *protocol.RunTask, now int64) {
	if m.cfg.Blueprint == nil || t.Commit == nil {
		return
	}
	at := now
	if t.CompletedAtMs != nil {
		at = *t.CompletedAtMs
	}
	m.emit(BlueprintEvidence{Blueprint: *blueprintView(m.cfg), TaskID: t.ID, Commit: *t.Commit, Branch: m.cfg.Branch, AtMs: at})
}

// resendEvidence asks again for the evidence of every committed task
// (Restore): a crash may have come between the commit and its record.
func (m *Machine) resendEvidence(now int64) {
	for i := range m.run.Plan.Tasks {
		if t := &m.run.Plan.Tasks[i]; t.Status == protocol.TaskCompleted {
			m.blueprintCommitted(t, now)
		}
	}
}

// blueprintPlannerNote is what the planner is told of a blueprint run's
// tasks when it plans again.
func (m *Machine) blueprintPlannerNote() string {
	if m.cfg.Blueprint == nil {
		return ""
	}
	return fmt.Sprintf("\nThe plan's tasks come from blueprint %s: keep the id of every task you keep, so that its commit counts for the blueprint.\n",
		m.cfg.Blueprint.BlueprintID)
}
