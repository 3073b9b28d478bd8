package runner

import (
	"context"

	"github.com/apserver/apserver/session/port"
	"github.com/apserver/apserver/store"
)

// Usage accounting: every model response of a run's threads (planner,
// task, reviewer) is recorded with its stage, task and model (table
// run_usage), so that the manager counts a project's tokens and cost per
// day against its budgets (docs/manager.md#budgets).

// usageTag says what a thread's usage is counted as.
type usageTag struct {
	stage  string // "planning", "task" or "review"
	taskID string
}

// recordUsage stores one response's usage of the run; a failure is
// logged, never a failure of the run.
func (x *run) recordUsage(ctx context.Context, tag usageTag, o port.UsageReported) {
	if x.rn.opts.Store == nil {
		return
	}
	db, err := x.rn.opts.Store()
	if err == nil {
		err = db.AddRunUsage(context.WithoutCancel(ctx), store.RunUsage{RunID: x.id, Stage: tag.stage, TaskID: tag.taskID, Model: o.Model,
			Input: o.Usage.InputTokens, Cached: o.Usage.CachedInputTokens, Output: o.Usage.OutputTokens, At: x.rn.now()})
	}
	if err != nil {
		x.rn.log.Warn("recording a run's token usage", "run", x.id, "err", err)
	}
}
