package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ThreadSummary is a thread's rolling summary (table thread_summaries):
// the project it belongs to, the text, how many turns it covers, when it
// was written (unix ms).
type ThreadSummary struct {
	ThreadID, Cwd, Summary string
	Turns                  int
	UpdatedAt              int64
}

// PutThreadSummary stores (or replaces) a thread's summary. A missing
// thread wraps ErrNotFound.
func (s *Store) PutThreadSummary(ctx context.Context, ts ThreadSummary) error {
	if ts.ThreadID == "" || ts.Cwd == "" {
		return errors.New("store: put thread summary: empty thread id or project")
	}
	if ts.UpdatedAt == 0 {
		ts.UpdatedAt = s.now().UnixMilli()
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO thread_summaries (thread_id, cwd, summary, turns, updated_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (thread_id) DO UPDATE SET cwd = excluded.cwd, summary = excluded.summary, turns = excluded.turns, updated_at = excluded.updated_at`,
			ts.ThreadID, ts.Cwd, ts.Summary, ts.Turns, ts.UpdatedAt)
		return classify(err)
	})
	if err != nil {
		return fmt.Errorf("store: put summary of thread %q: %w", ts.ThreadID, err)
	}
	return nil
}

// ThreadSummaries returns the summaries of a project's threads, the most
// recent first.
func (s *Store) ThreadSummaries(ctx context.Context, cwd string) ([]ThreadSummary, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT thread_id, cwd, summary, turns, updated_at FROM thread_summaries
		WHERE cwd = ? ORDER BY updated_at DESC, thread_id`, cwd)
	if err != nil {
		return nil, fmt.Errorf("store: summaries of %q: %w", cwd, err)
	}
	defer rows.Close()
	var out []ThreadSummary
	for rows.Next() {
		var ts ThreadSummary
		if err := rows.Scan(&ts.ThreadID, &ts.Cwd, &ts.Summary, &ts.Turns, &ts.UpdatedAt); err != nil {
			return nil, fmt.Errorf("store: summaries of %q: %w", cwd, err)
		}
		out = append(out, ts)
	}
	return out, rows.Err()
}

// GetThreadSummary returns a thread's summary; none wraps ErrNotFound.
func (s *Store) GetThreadSummary(ctx context.Context, threadID string) (ThreadSummary, error) {
	var ts ThreadSummary
	err := s.r.QueryRowContext(ctx, `SELECT thread_id, cwd, summary, turns, updated_at FROM thread_summaries WHERE thread_id = ?`, threadID).
		Scan(&ts.ThreadID, &ts.Cwd, &ts.Summary, &ts.Turns, &ts.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return ts, fmt.Errorf("store: summary of thread %q: %w", threadID, ErrNotFound)
	}
	if err != nil {
		return ts, fmt.Errorf("store: summary of thread %q: %w", threadID, err)
	}
	return ts, nil
}
