package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/apserver/apserver/runner"
	"github.com/apserver/apserver/store"
)

// The runs' token usage lives with the runs, in PostgreSQL (table
// apserver_run_usage): a worker's runner records its threads' responses
// there, and the editor side's manager counts them against the project's
// budgets (docs/manager.md#budgets).

var _ runner.UsageRecorder = (*Store)(nil)

// usageRetries are the pauses before each further attempt at recording a
// response's usage (a dropped connection, a database restarting).
var usageRetries = []time.Duration{250 * time.Millisecond, time.Second}

// RecordRunUsage implements runner.UsageRecorder. The key is the row's
// id: an attempt that committed but whose answer was lost, tried again,
// inserts nothing (ON CONFLICT DO NOTHING), so a response counts once.
func (s *Store) RecordRunUsage(ctx context.Context, key string, u store.RunUsage) error {
	if key == "" || u.RunID == "" || u.Stage == "" {
		return errors.New("cluster: usage of a run: empty key, run id or stage")
	}
	if u.At == 0 {
		u.At = s.now().UnixMilli()
	}
	var err error
	for i := 0; ; i++ {
		_, err = s.pool.Exec(ctx, `INSERT INTO apserver_run_usage (id, run_id, stage, task_id, model, input_tokens, cached_tokens, output_tokens, at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING`,
			key, u.RunID, u.Stage, u.TaskID, u.Model, u.Input, u.Cached, u.Output, u.At)
		if err == nil || i == len(usageRetries) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: usage of run %q: %w", u.RunID, err)
		case <-time.After(usageRetries[i]):
		}
	}
	if err != nil {
		return fmt.Errorf("cluster: usage of run %q: %w", u.RunID, err)
	}
	return nil
}

// RunsUsage implements runner.UsageRecorder: the usage of the runs runIDs
// recorded at or after since (unix ms), summed by stage and model; RunID
// and At of the rows are empty (as store.Store.RunsUsage).
func (s *Store) RunsUsage(ctx context.Context, runIDs []string, since int64) ([]store.RunUsage, error) {
	if len(runIDs) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT stage, model, SUM(input_tokens)::bigint, SUM(cached_tokens)::bigint, SUM(output_tokens)::bigint
		FROM apserver_run_usage WHERE at >= $1 AND run_id = ANY($2) GROUP BY stage, model ORDER BY stage, model`, since, runIDs)
	if err != nil {
		return nil, fmt.Errorf("cluster: usage of runs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.RunUsage, error) {
		var u store.RunUsage
		err := r.Scan(&u.Stage, &u.Model, &u.Input, &u.Cached, &u.Output)
		return u, err
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: usage of runs: %w", err)
	}
	return out, nil
}
