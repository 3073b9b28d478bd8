package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// RunRow is a run's listing row (table runs): the projection of its event
// log that run/list reads. Run is the client's view as JSON, owned by the
// caller.
type RunRow struct {
	ID        string
	Cwd       string
	Status    string
	Run       json.RawMessage
	CreatedAt int64 // unix ms
	UpdatedAt int64 // unix ms
}

// RunEvent is one entry of a run's event log. Event is opaque JSON owned
// by the caller; Seq numbers a run's events from 1.
type RunEvent struct {
	Seq   int64
	Type  string
	Event json.RawMessage
	At    int64 // unix ms
}

// AppendRunEvent appends an event to the run's log and rewrites its
// listing row, in one transaction: the event is stored if and only if the
// row shows it. The first event of a run creates the row. It returns the
// event's sequence number.
func (s *Store) AppendRunEvent(ctx context.Context, row RunRow, typ string, event json.RawMessage, at int64) (int64, error) {
	if row.ID == "" || row.Status == "" || typ == "" {
		return 0, errors.New("store: append run event: empty run id, status or type")
	}
	if len(event) == 0 || len(row.Run) == 0 {
		return 0, errors.New("store: append run event: empty event or run")
	}
	if err := checkJSON("run event", event); err != nil {
		return 0, err
	}
	if err := checkJSON("run", row.Run); err != nil {
		return 0, err
	}
	if at == 0 {
		at = s.now().UnixMilli()
	}
	if row.CreatedAt == 0 {
		row.CreatedAt = at
	}
	var seq int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO runs (id, cwd, status, run, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET status = excluded.status, run = excluded.run, updated_at = excluded.updated_at`,
			row.ID, row.Cwd, row.Status, string(row.Run), row.CreatedAt, at)
		if err != nil {
			return classify(err)
		}
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) + 1 FROM run_events WHERE run_id = ?`, row.ID).Scan(&seq); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO run_events (run_id, seq, type, event, at) VALUES (?, ?, ?, ?, ?)`,
			row.ID, seq, typ, string(event), at)
		return classify(err)
	})
	if err != nil {
		return 0, fmt.Errorf("store: append event %s of run %q: %w", typ, row.ID, err)
	}
	return seq, nil
}

// RunEvents returns the run's event log in order. An unknown run wraps
// ErrNotFound.
func (s *Store) RunEvents(ctx context.Context, runID string) ([]RunEvent, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM runs WHERE id = ?`, runID).Scan(&n); err != nil {
		return nil, fmt.Errorf("store: events of run %q: %w", runID, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("store: events of run %q: %w", runID, ErrNotFound)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT seq, type, event, at FROM run_events WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("store: events of run %q: %w", runID, err)
	}
	defer rows.Close()
	var out []RunEvent
	for rows.Next() {
		var e RunEvent
		var b []byte
		if err := rows.Scan(&e.Seq, &e.Type, &b, &e.At); err != nil {
			return nil, fmt.Errorf("store: events of run %q: %w", runID, err)
		}
		e.Event = b
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: events of run %q: %w", runID, err)
	}
	return out, nil
}

// RunRows returns every run's listing row, newest first.
func (s *Store) RunRows(ctx context.Context) ([]RunRow, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, cwd, status, run, created_at, updated_at FROM runs ORDER BY created_at DESC, id DESC`)
	if err != nil {
		return nil, fmt.Errorf("store: runs: %w", err)
	}
	defer rows.Close()
	var out []RunRow
	for rows.Next() {
		var r RunRow
		var b []byte
		if err := rows.Scan(&r.ID, &r.Cwd, &r.Status, &b, &r.CreatedAt, &r.UpdatedAt); err != nil {
			return nil, fmt.Errorf("store: runs: %w", err)
		}
		r.Run = b
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: runs: %w", err)
	}
	return out, nil
}
