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

type answer struct {
	v   any
	err error
}

func wait(ctx context.Context, f func(reply func(any, error))) (any, error) {
	ch := make(chan answer, 1)
	f(func(v any, err error) { ch <- answer{v, err} })
	select {
	case a := <-ch:
		return a.v, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Start implements projects.Runs.
func (r RunnerRuns) Start(ctx context.Context, p protocol.RunStartParams) (protocol.Run, error) {
	v, err := wait(ctx, func(reply func(any, error)) { r.Runner.Start(ctx, p, reply) })
	if err != nil {
		return protocol.Run{}, err
	}
	return v.(protocol.RunResult).Run, nil
}

// List implements projects.Runs.
func (r RunnerRuns) List(ctx context.Context, cwd string) ([]protocol.Run, error) {
	v, err := wait(ctx, func(reply func(any, error)) { r.Runner.List(ctx, protocol.RunListParams{Cwd: &cwd}, reply) })
	if err != nil {
		return nil, err
	}
	return v.(protocol.RunListResult).Runs, nil
}

// ApprovePlan implements projects.Runs.
func (r RunnerRuns) ApprovePlan(ctx context.Context, runID string) error {
	_, err := wait(ctx, func(reply func(any, error)) { r.Runner.PlanApprove(ctx, protocol.RunParams{RunID: runID}, reply) })
	return err
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
