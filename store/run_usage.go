package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// RunUsage is the token usage of one model response of a run's thread.
type RunUsage struct {
	RunID  string
	Stage  string // planning, task, review
	TaskID string
	Model  string
	Input  int64 // input tokens, of which Cached were cached
	Cached int64
	Output int64
	At     int64 // unix ms
}

// AddRunUsage records a model response's usage for a run.
func (s *Store) AddRunUsage(ctx context.Context, u RunUsage) error {
	if u.At == 0 {
		u.At = s.now().UnixMilli()
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO run_usage (run_id, stage, task_id, model, input_tokens, cached_tokens, output_tokens, at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, u.RunID, u.Stage, u.TaskID, u.Model, u.Input, u.Cached, u.Output, u.At)
		if err != nil {
			return fmt.Errorf("store: usage of run %s: %w", u.RunID, err)
		}
		return nil
	})
}

// RunsUsage sums the usage of the runs runIDs recorded at or after since
// (unix ms), by model and stage; RunID and At of the rows are empty.
func (s *Store) RunsUsage(ctx context.Context, runIDs []string, since int64) ([]RunUsage, error) {
	if len(runIDs) == 0 {
		return nil, nil
	}
	args := make([]any, 0, len(runIDs)+1)
	args = append(args, since)
	for _, id := range runIDs {
		args = append(args, id)
	}
	q := `SELECT stage, model, SUM(input_tokens), SUM(cached_tokens), SUM(output_tokens) FROM run_usage
		WHERE at >= ? AND run_id IN (?` + strings.Repeat(", ?", len(runIDs)-1) + `) GROUP BY stage, model ORDER BY stage, model`
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: usage of runs: %w", err)
	}
	defer rows.Close()
	var out []RunUsage
	for rows.Next() {
		var u RunUsage
		if err := rows.Scan(&u.Stage, &u.Model, &u.Input, &u.Cached, &u.Output); err != nil {
			return nil, fmt.Errorf("store: usage of runs: %w", err)
		}
		out = append(out, u)
	}
	return out, rows.Err()
}
