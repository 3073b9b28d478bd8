package projects

import (
	"context"

	"github.com/apserver/apserver/manager"
	"github.com/apserver/apserver/store"
)

// usageSpend is the tokens and cost the runs runIDs used since since (unix
// ms): the runner records every model response of a run's threads (table
// run_usage); the cost uses Options.Prices, a model without a price
// leaving the cost unknown (Spend.Unpriced) rather than 0.
func (s *Service) usageSpend(ctx context.Context, db *store.Store, runIDs []string, since int64) (manager.Spend, error) {
	rows, err := db.RunsUsage(ctx, runIDs, since)
	if err != nil {
		return manager.Spend{}, err
	}
	us := make([]manager.Usage, len(rows))
	for i, r := range rows {
		us[i] = manager.Usage{Model: r.Model, Input: r.Input, Cached: r.Cached, Output: r.Output}
	}
	return manager.SpendOf(us, s.opts.Prices), nil
}
