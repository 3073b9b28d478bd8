package runner

import (
	"context"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runs"
)

// Brain is the project brain as the runner sees it (brains.Service
// implements it; cmd wires it): the context block each stage gets in its
// instructions, and the news that a run ended, so that the projections
// are rewritten.
type Brain interface {
	// StageContext is the block for a stage of role (planner,
	// implementer, validator) of a run in the project cwd, for task (nil
	// for the planner); "" when there is nothing to say.
	StageContext(ctx context.Context, role, cwd string, task *protocol.PlanTask) string
	// Touch says the project's state changed (a run ended).
	Touch(cwd string)
}

// withContext returns a stage's instructions with the project's context
// block appended (docs/brain.md): what project/context/preview shows.
func (x *run) withContext(ctx context.Context, cfg runs.Config, role string, task *protocol.PlanTask, instructions string) string {
	b := x.rn.opts.Brain
	if b == nil {
		return instructions
	}
	block := b.StageContext(ctx, role, cfg.Cwd, task)
	if block == "" {
		return instructions
	}
	return instructions + "\n\n" + block
}

// runEnded tells the brain a run of the project ended.
func (rn *Runner) runEnded(cwd string) {
	if rn.opts.Brain != nil {
		rn.opts.Brain.Touch(cwd)
	}
}
