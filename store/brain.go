package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// DecisionRow is a decision's row (table decisions), the projection of its
// events. Decision is the client's view as JSON, owned by the caller.
type DecisionRow struct {
	ID, Cwd, Status      string
	Decision             json.RawMessage
	CreatedAt, UpdatedAt int64 // unix ms
}

// DecisionChange is one event of a decision and its row after it.
type DecisionChange struct {
	Row   DecisionRow
	Type  string
	Event json.RawMessage
}

// DecisionEvent is an entry of a project's decision log.
type DecisionEvent struct {
	Seq        int64
	DecisionID string
	Type       string
	Event      json.RawMessage
	At         int64
}

// AppendDecisionEvents stores the changes (each an event and the row it
// leaves) in one transaction, with the project marked dirty (its
// projections are to be rewritten). It returns the last event's sequence
// number in the project's log.
func (s *Store) AppendDecisionEvents(ctx context.Context, cwd string, changes []DecisionChange, at int64) (int64, error) {
	if cwd == "" || len(changes) == 0 {
		return 0, errors.New("store: append decision events: empty project or no change")
	}
	for _, c := range changes {
		if c.Row.ID == "" || c.Row.Status == "" || c.Type == "" {
			return 0, errors.New("store: append decision events: empty id, status or type")
		}
		if err := checkJSON("decision event", c.Event); err != nil {
			return 0, err
		}
		if err := checkJSON("decision", c.Row.Decision); err != nil {
			return 0, err
		}
	}
	if at == 0 {
		at = s.now().UnixMilli()
	}
	var seq int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM decision_events WHERE cwd = ?`, cwd).Scan(&seq); err != nil {
			return err
		}
		for _, c := range changes {
			created := c.Row.CreatedAt
			if created == 0 {
				created = at
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO decisions (id, cwd, status, decision, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (id) DO UPDATE SET status = excluded.status, decision = excluded.decision, updated_at = excluded.updated_at`,
				c.Row.ID, cwd, c.Row.Status, string(c.Row.Decision), created, at); err != nil {
				return classify(err)
			}
			seq++
			if _, err := tx.ExecContext(ctx, `INSERT INTO decision_events (cwd, seq, decision_id, type, event, at) VALUES (?, ?, ?, ?, ?, ?)`,
				cwd, seq, c.Row.ID, c.Type, string(c.Event), at); err != nil {
				return classify(err)
			}
		}
		return markDirty(ctx, tx, cwd)
	})
	if err != nil {
		return 0, fmt.Errorf("store: append decision events of %q: %w", cwd, err)
	}
	return seq, nil
}

func markDirty(ctx context.Context, tx *sql.Tx, cwd string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO brain_dirty (cwd, mark) VALUES (?, 1)
		ON CONFLICT (cwd) DO UPDATE SET mark = mark + 1`, cwd)
	return classify(err)
}

// Decision returns one decision's row; an unknown id wraps ErrNotFound.
func (s *Store) Decision(ctx context.Context, id string) (DecisionRow, error) {
	var r DecisionRow
	var b []byte
	err := s.r.QueryRowContext(ctx, `SELECT id, cwd, status, decision, created_at, updated_at FROM decisions WHERE id = ?`, id).
		Scan(&r.ID, &r.Cwd, &r.Status, &b, &r.CreatedAt, &r.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return r, fmt.Errorf("store: decision %q: %w", id, err)
	}
	r.Decision = b
	return r, nil
}

// Decisions returns a project's decisions, oldest first.
func (s *Store) Decisions(ctx context.Context, cwd string) ([]DecisionRow, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, cwd, status, decision, created_at, updated_at FROM decisions WHERE cwd = ? ORDER BY created_at, id`, cwd)
	if err != nil {
		return nil, fmt.Errorf("store: decisions of %q: %w", cwd, err)
	}
	defer rows.Close()
	var out []DecisionRow
	for rows.Next() {
		var r DecisionRow
		var b []byte
		if err := rows.Scan(&r.ID, &r.Cwd, &r.Status, &b, &r.CreatedAt, &r.UpdatedAt); err != nil {
			return nil, fmt.Errorf("store: decisions of %q: %w", cwd, err)
		}
		r.Decision = b
		out = append(out, r)
	}
	return out, rows.Err()
}

// DecisionEvents returns a project's decision log in order.
func (s *Store) DecisionEvents(ctx context.Context, cwd string) ([]DecisionEvent, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT seq, decision_id, type, event, at FROM decision_events WHERE cwd = ? ORDER BY seq`, cwd)
	if err != nil {
		return nil, fmt.Errorf("store: decision events of %q: %w", cwd, err)
	}
	defer rows.Close()
	var out []DecisionEvent
	for rows.Next() {
		var e DecisionEvent
		var b []byte
		if err := rows.Scan(&e.Seq, &e.DecisionID, &e.Type, &b, &e.At); err != nil {
			return nil, fmt.Errorf("store: decision events of %q: %w", cwd, err)
		}
		e.Event = b
		out = append(out, e)
	}
	return out, rows.Err()
}

// MarkBrainDirty marks a project's projections as older than the store
// (a run finished, a blueprint changed). It returns the new mark.
func (s *Store) MarkBrainDirty(ctx context.Context, cwd string) (int64, error) {
	var mark int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := markDirty(ctx, tx, cwd); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT mark FROM brain_dirty WHERE cwd = ?`, cwd).Scan(&mark)
	})
	if err != nil {
		return 0, fmt.Errorf("store: mark %q dirty: %w", cwd, err)
	}
	return mark, nil
}

// BrainDirty returns the projects whose projections are to be rewritten,
// with their marks, by cwd.
func (s *Store) BrainDirty(ctx context.Context) (map[string]int64, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT cwd, mark FROM brain_dirty ORDER BY cwd`)
	if err != nil {
		return nil, fmt.Errorf("store: dirty projects: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var cwd string
		var mark int64
		if err := rows.Scan(&cwd, &mark); err != nil {
			return nil, fmt.Errorf("store: dirty projects: %w", err)
		}
		out[cwd] = mark
	}
	return out, rows.Err()
}

// ClearBrainDirty clears a project's mark if it is still mark: a change
// stored while its projections were being written keeps the project
// dirty.
func (s *Store) ClearBrainDirty(ctx context.Context, cwd string, mark int64) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM brain_dirty WHERE cwd = ? AND mark = ?`, cwd, mark)
		return classify(err)
	})
	if err != nil {
		return fmt.Errorf("store: clear %q: %w", cwd, err)
	}
	return nil
}

// ProposedDecisionProjects returns the projects that have proposed
// decisions, in order.
func (s *Store) ProposedDecisionProjects(ctx context.Context) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT cwd FROM decisions WHERE status = 'proposed' ORDER BY cwd`)
	if err != nil {
		return nil, fmt.Errorf("store: projects with proposed decisions: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var cwd string
		if err := rows.Scan(&cwd); err != nil {
			return nil, fmt.Errorf("store: projects with proposed decisions: %w", err)
		}
		out = append(out, cwd)
	}
	return out, rows.Err()
}
