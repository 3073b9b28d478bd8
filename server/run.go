package server

import (
	"encoding/json"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runner"
)

// RegisterRuns wires run/* (apserver's runs, docs/runs.md) to the runner.
// Runs of an earlier process are taken up once the client has sent
// initialized, after full auto's (registerFullAuto), so that their
// notifications reach a client that is ready. Call it after Register.
func RegisterRuns(s *Server, rn *runner.Runner) {
	Handle(s, protocol.MethodRunStart, rn.Start)
	Handle(s, protocol.MethodRunList, rn.List)
	Handle(s, protocol.MethodRunRead, rn.Read)
	Handle(s, protocol.MethodRunPlanUpdate, rn.PlanUpdate)
	Handle(s, protocol.MethodRunPlanApprove, rn.PlanApprove)
	Handle(s, protocol.MethodRunPlanReject, rn.PlanReject)
	Handle(s, protocol.MethodRunTaskApprove, rn.TaskApprove)
	Handle(s, protocol.MethodRunClarificationAnswer, rn.ClarificationAnswer)
	Handle(s, protocol.MethodRunRepairApprove, rn.RepairApprove)
	Handle(s, protocol.MethodRunPause, rn.Pause)
	Handle(s, protocol.MethodRunResume, rn.Resume)
	Handle(s, protocol.MethodRunCancel, rn.Cancel)
	Handle(s, protocol.MethodRunRevert, rn.Revert)
	Handle(s, protocol.MethodRunTaskRevert, rn.TaskRevert)
	prev := s.notifHandlers[protocol.MethodInitialized]
	s.notifHandlers[protocol.MethodInitialized] = func(raw json.RawMessage) {
		if prev != nil {
			prev(raw)
		}
		rn.Restore()
	}
}
