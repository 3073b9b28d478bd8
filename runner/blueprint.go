package runner

import (
	"context"
	"fmt"
	"strings"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runs"
)

// Blueprints is what runs started from a blueprint need of the blueprints
// service (package blueprints implements it; cmd/apserver wires it with
// SetBlueprints). runner and blueprints sit side by side above session and
// never import each other: this interface, in protocol's types, is the
// link.
type Blueprints interface {
	// RunTasks resolves run/start's blueprint into the run's first plan:
	// the tasks (ids: the blueprint's task ids; dependencies among them),
	// the link the run keeps, the blueprint's cwd and a title for the
	// run's request. Bad params are -32602 naming the problem.
	RunTasks(ctx context.Context, p protocol.RunBlueprintParams) (link protocol.RunBlueprint, tasks []protocol.PlanTask, cwd, title string, err error)
	// RecordEvidence records that the run's validator passed the task and
	// its commit is on the run's branch: the blueprint's task is done,
	// with the commit. Recording it twice changes nothing.
	RecordEvidence(ctx context.Context, link protocol.RunBlueprint, taskID string, ev protocol.TaskEvidence) error
	// RecordProgress shows where the run is with a task (in_progress,
	// blocked, planned again); it never makes a task done nor changes a
	// done one.
	RecordProgress(ctx context.Context, link protocol.RunBlueprint, runID, taskID string, status protocol.NodeStatus) error
}

// SetBlueprints links the runner to the blueprints service. Call it before
// serving (and before Restore).
func (rn *Runner) SetBlueprints(b Blueprints) {
	rn.mu.Lock()
	rn.blueprints = b
	rn.mu.Unlock()
}

func (rn *Runner) bps() Blueprints {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return rn.blueprints
}

// fromBlueprint fills run/start's params from its blueprint (cwd and
// request when absent) and returns the plan's tasks and the link.
func (rn *Runner) fromBlueprint(ctx context.Context, p *protocol.RunStartParams) (*protocol.RunBlueprint, []protocol.PlanTask, string, error) {
	b := rn.bps()
	if b == nil {
		return nil, nil, "", protocol.Errorf(protocol.ErrInvalidRequest, "run/start: blueprints are not available in this process")
	}
	link, tasks, cwd, title, err := b.RunTasks(ctx, *p.Blueprint)
	if err != nil {
		return nil, nil, "", err
	}
	if p.Cwd == "" {
		if cwd == "" {
			return nil, nil, "", protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: cwd: missing, and blueprint %s has no cwd", link.BlueprintID)
		}
		p.Cwd = cwd
	}
	if strings.TrimSpace(p.Request) == "" {
		p.Request = "Build " + title
	}
	summary := fmt.Sprintf("%s: the tasks of blueprint %s (%d)", title, link.BlueprintID, len(tasks))
	return &link, tasks, summary, nil
}

// toBlueprint queues f, a record to the run's blueprint: the records of a
// run are applied in order, off the run's goroutine, by one goroutine at a
// time. Close waits for them (not cut short: what they record happened).
func (x *run) toBlueprint(f func(ctx context.Context)) {
	x.bpMu.Lock()
	defer x.bpMu.Unlock()
	x.bpQueue = append(x.bpQueue, func() { f(context.WithoutCancel(x.rn.ctx)) })
	if x.bpBusy {
		return
	}
	x.bpBusy = true
	x.rn.wg.Add(1)
	go func() {
		defer x.rn.wg.Done()
		for {
			x.bpMu.Lock()
			if len(x.bpQueue) == 0 {
				x.bpBusy = false
				x.bpMu.Unlock()
				return
			}
			f := x.bpQueue[0]
			x.bpQueue = x.bpQueue[1:]
			x.bpMu.Unlock()
			f()
		}
	}()
}

// recordProgress applies runs.BlueprintProgress.
func (x *run) recordProgress(e runs.BlueprintProgress) {
	rn := x.rn
	b := rn.bps()
	if b == nil {
		return
	}
	x.toBlueprint(func(ctx context.Context) {
		if err := b.RecordProgress(ctx, e.Blueprint, x.id, e.TaskID, e.Status); err != nil {
			rn.log.Warn("recording a blueprint task's progress", "run", x.id, "blueprint", e.Blueprint.BlueprintID, "task", e.TaskID, "err", err)
		}
	})
}

// recordEvidence applies runs.BlueprintEvidence.
func (x *run) recordEvidence(e runs.BlueprintEvidence) {
	rn := x.rn
	b := rn.bps()
	if b == nil {
		if _, shared := rn.shared(); shared {
			// A worker: the apservers following the log, which keep the
			// blueprints, record it (catchUpLog).
			return
		}
		rn.log.Warn("a blueprint run's evidence cannot be recorded: no blueprints service", "run", x.id, "task", e.TaskID)
		return
	}
	ev := protocol.TaskEvidence{RunID: x.id, Branch: e.Branch, Commit: e.Commit, AtMs: e.AtMs}
	x.toBlueprint(func(ctx context.Context) {
		if err := b.RecordEvidence(ctx, e.Blueprint, e.TaskID, ev); err != nil {
			rn.log.Error("recording a blueprint task's evidence", "run", x.id, "blueprint", e.Blueprint.BlueprintID, "task", e.TaskID, "err", err)
		}
	})
}
