package projects

import (
	"context"

	"github.com/apserver/apserver/manager"
	"github.com/apserver/apserver/store"
)

// UsageSource is where the runs' token usage is read for the budgets:
// the SQLite store (store.Store) by default, the runner (runner.Runner,
// which reads it where it records it: the cluster's PostgreSQL in cluster
// mode, where workers record theirs) when wired (Options.Usage).
type UsageSource interface {
	// RunsUsage sums the usage of the runs runIDs recorded at or after
	// since (unix ms), by stage and model.
	RunsUsage(ctx context.Context, runIDs []string, since int64) ([]store.RunUsage, error)
}

var _ UsageSource = (*store.Store)(nil)

// usageSpend is the tokens and cost the runs runIDs used since since (unix
// ms): the runner records every model response of a run's threads (table
// run_usage, or the cluster's apserver_run_usage); it is read from
// Options.Usage, else from db. The cost uses Options.Prices, a model
// without a price leaving the cost unknown (Spend.Unpriced) rather than 0.
func (s *Service) usageSpend(ctx context.Context, db *store.Store, runIDs []string, since int64) (manager.Spend, error) {
	var src UsageSource = db
	if s.opts.Usage != nil {
		src = s.opts.Usage
	}
	rows, err := src.RunsUsage(ctx, runIDs, since)
	if err != nil {
		return manager.Spend{}, err
	}
	us := make([]manager.Usage, len(rows))
	for i, r := range rows {
		us[i] = manager.Usage{Model: r.Model, Input: r.Input, Cached: r.Cached, Output: r.Output}
	}
	return manager.SpendOf(us, s.opts.Prices), nil
}
