package server

import (
	"context"

	"github.com/apserver/apserver/projects"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runner"
)

// RegisterManager wires project/settings/*, project/status, manager/tick
// and manager/explain (docs/manager.md) to the manager's driver. Call it
// after Register.
func RegisterManager(s *Server, svc *projects.Service) {
	handleLater(s, protocol.MethodProjectSettingsRead, svc.SettingsRead)
	handleLater(s, protocol.MethodProjectSettingsUpdate, svc.SettingsUpdate)
	handleLater(s, protocol.MethodProjectStatus, svc.Status)
	handleLater(s, protocol.MethodManagerTick, svc.TickWire)
	handleLater(s, protocol.MethodManagerExplain, svc.Explain)
	handleLater(s, protocol.MethodManagerApprove, svc.ApproveWire)
}

// RunnerRuns is the runner as the manager's projects.Runs: run/start,
// run/list and run/plan/approve, waited for.
type RunnerRuns struct{ Runner *runner.Runner }

// Start implements projects.Runs.
func (r RunnerRuns) Start(ctx context.Context, p protocol.RunStartParams) (protocol.Run, error) {
	return waitCall(ctx, r.Runner.Start(p))
}

// List implements projects.Runs.
func (r RunnerRuns) List(ctx context.Context, cwd string) ([]protocol.Run, error) {
	return waitCall(ctx, r.Runner.List(protocol.RunListParams{Cwd: &cwd}))
}

// ApprovePlan implements projects.Runs.
func (r RunnerRuns) ApprovePlan(ctx context.Context, runID string) error {
	_, err := waitCall(ctx, r.Runner.PlanApprove(protocol.RunParams{RunID: runID}))
	return err
}

// waitCall is c's answer, or ctx's error once ctx is done: a tick does not
// outlive its request waiting on a busy run.
func waitCall[R any](ctx context.Context, c runner.Call[R]) (R, error) {
	type answer struct {
		v   R
		err error
	}
	ch := make(chan answer, 1)
	c.Then(ctx, func(v R, err error) { ch <- answer{v, err} })
	select {
	case a := <-ch:
		return a.v, a.err
	case <-ctx.Done():
		var zero R
		return zero, ctx.Err()
	}
}

// managerLane is the lane of the manager's requests: a tick may start a
// run (the blueprint read, the worktree made), so they keep out of the
// lane of requests about no thread; among themselves they are answered in
// order.
func managerLane(method string) (string, bool) {
	switch method {
	case protocol.MethodProjectSettingsRead, protocol.MethodProjectSettingsUpdate, protocol.MethodProjectStatus,
		protocol.MethodManagerTick, protocol.MethodManagerExplain, protocol.MethodManagerApprove:
		return "\x00manager", true
	}
	return "", false
}
