package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/apserver/apserver/session/port"
	"github.com/apserver/apserver/store"
)

// Usage accounting: every model response of a run's threads (planner,
// task, reviewer) is recorded with its stage, task and model, so that the
// manager counts a project's tokens and cost per day against its budgets
// (docs/manager.md#budgets). The usage lives with the run: in the SQLite
// store (table run_usage) by default, in the run store when it records
// usage (UsageRecorder: the cluster's PostgreSQL, where a worker's usage
// reaches the editor side's manager).

// UsageRecorder is a RunStore that also keeps the runs' token usage. The
// runner records each response of a run's threads through it instead of
// the SQLite store, and reads the usage back from it (Runner.RunsUsage).
type UsageRecorder interface {
	// RecordRunUsage records one model response's usage. key is unique to
	// the response as this process observed it: recording the same key
	// again (a retried insert) counts it once.
	RecordRunUsage(ctx context.Context, key string, u store.RunUsage) error
	// RunsUsage sums the usage of the runs runIDs recorded at or after
	// since (unix ms), by stage and model, as store.Store.RunsUsage.
	RunsUsage(ctx context.Context, runIDs []string, since int64) ([]store.RunUsage, error)
}

// usageTag says what a thread's usage is counted as.
type usageTag struct {
	stage  string // "planning", "task" or "review"
	taskID string
}

// recordUsage stores one response's usage of the run; a failure is
// logged, never a failure of the run.
func (x *run) recordUsage(ctx context.Context, tag usageTag, o port.UsageReported) {
	u := store.RunUsage{RunID: x.id, Stage: tag.stage, TaskID: tag.taskID, Model: o.Model,
		Input: o.Usage.InputTokens, Cached: o.Usage.CachedInputTokens, Output: o.Usage.OutputTokens, At: x.rn.now()}
	ctx = context.WithoutCancel(ctx)
	var err error
	if r, ok := x.rn.opts.Runs.(UsageRecorder); ok {
		err = r.RecordRunUsage(ctx, usageKey(), u)
	} else if x.rn.opts.Store == nil {
		return
	} else {
		var db *store.Store
		if db, err = x.rn.opts.Store(); err == nil {
			err = db.AddRunUsage(ctx, u)
		}
	}
	if err != nil {
		x.rn.log.Warn("recording a run's token usage", "run", x.id, "err", err)
	}
}

// usageKey is a new key for one observed response (UsageRecorder): 128
// random bits.
func usageKey() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// RunsUsage sums the usage of the runs runIDs recorded at or after since
// (unix ms), by stage and model, from where the runner records it: the
// run store when it is a UsageRecorder, else the SQLite store. The
// manager's budgets read it (projects.Options.Usage).
func (rn *Runner) RunsUsage(ctx context.Context, runIDs []string, since int64) ([]store.RunUsage, error) {
	if r, ok := rn.opts.Runs.(UsageRecorder); ok {
		return r.RunsUsage(ctx, runIDs, since)
	}
	if rn.opts.Store == nil {
		return nil, nil
	}
	db, err := rn.opts.Store()
	if err != nil {
		return nil, err
	}
	return db.RunsUsage(ctx, runIDs, since)
}
