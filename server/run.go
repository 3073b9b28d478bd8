package server

import (
	"context"
	"encoding/json"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runner"
	"github.com/apserver/apserver/session"
)

// RegisterRuns wires run/* (apserver's runs, docs/runs.md) to the runner.
// Runs of an earlier process are taken up once the client has sent
// initialized, after full auto's (registerFullAuto), so that their
// notifications reach a client that is ready. Call it after Register.
func RegisterRuns(s *Server, rn *runner.Runner) {
	answer := func(r protocol.Run) any { return protocol.RunResult{Run: r} }
	handleRun(s, protocol.MethodRunStart, rn.Start, answer)
	handleRun(s, protocol.MethodRunList, rn.List, func(rs []protocol.Run) any { return protocol.RunListResult{Runs: rs} })
	handleRun(s, protocol.MethodRunRead, rn.Read, answer)
	handleRun(s, protocol.MethodRunPlanUpdate, rn.PlanUpdate, answer)
	handleRun(s, protocol.MethodRunPlanApprove, rn.PlanApprove, answer)
	handleRun(s, protocol.MethodRunPlanReject, rn.PlanReject, answer)
	handleRun(s, protocol.MethodRunTaskApprove, rn.TaskApprove, answer)
	handleRun(s, protocol.MethodRunClarificationAnswer, rn.ClarificationAnswer, answer)
	handleRun(s, protocol.MethodRunRepairApprove, rn.RepairApprove, answer)
	handleRun(s, protocol.MethodRunPause, rn.Pause, answer)
	handleRun(s, protocol.MethodRunResume, rn.Resume, answer)
	handleRun(s, protocol.MethodRunCancel, rn.Cancel, answer)
	revert := func(r protocol.RunRevertResult) any { return r }
	handleRun(s, protocol.MethodRunRevert, rn.Revert, revert)
	handleRun(s, protocol.MethodRunTaskRevert, rn.TaskRevert, revert)
	prev := s.notifHandlers[protocol.MethodInitialized]
	s.notifHandlers[protocol.MethodInitialized] = func(raw json.RawMessage) {
		if prev != nil {
			prev(raw)
		}
		rn.Restore()
	}
}

// handleRun registers a run/* method: the one place where the runner's
// typed Go API (runner.Call) becomes JSON-RPC answers. The answer is sent
// through Then, so a response goes out before the run's notifications
// about the change it made.
func handleRun[P, R any](s *Server, method string, call func(P) runner.Call[R], result func(R) any) {
	Handle(s, method, func(ctx context.Context, p P, reply session.Reply) {
		call(p).Then(ctx, func(r R, err error) {
			if err != nil {
				reply(nil, err)
				return
			}
			reply(result(r), nil)
		})
	})
}
