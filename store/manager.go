package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// ProjectSettings returns a workspace's manager settings (JSON owned by
// package manager); ok is false when none were saved.
func (s *Store) ProjectSettings(ctx context.Context, cwd string) (settings json.RawMessage, ok bool, err error) {
	var b string
	err = s.r.QueryRowContext(ctx, `SELECT settings FROM project_settings WHERE cwd = ?`, cwd).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("store: project settings of %q: %w", cwd, err)
	}
	return json.RawMessage(b), true, nil
}

// SaveProjectSettings stores a workspace's manager settings.
func (s *Store) SaveProjectSettings(ctx context.Context, cwd string, settings json.RawMessage) error {
	if err := checkJSON("project settings", settings); err != nil {
		return err
	}
	now := s.now().UnixMilli()
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO project_settings (cwd, settings, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (cwd) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at`, cwd, string(settings), now)
		if err != nil {
			return fmt.Errorf("store: saving project settings of %q: %w", cwd, err)
		}
		return nil
	})
}

// ManagerTick is one tick of a workspace's manager: its input and its
// decision (JSON owned by package manager).
type ManagerTick struct {
	Cwd      string
	Seq      int64 // 1, 2, 3… per workspace
	Input    json.RawMessage
	Decision json.RawMessage
	Result   string
	At       int64 // unix ms
}

// AppendManagerTick stores a tick and returns it with Seq and At set.
func (s *Store) AppendManagerTick(ctx context.Context, t ManagerTick) (ManagerTick, error) {
	if err := checkJSON("tick input", t.Input); err != nil {
		return t, err
	}
	if err := checkJSON("tick decision", t.Decision); err != nil {
		return t, err
	}
	if t.At == 0 {
		t.At = s.now().UnixMilli()
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `INSERT INTO manager_ticks (cwd, seq, input, decision, result, at)
			VALUES (?1, COALESCE((SELECT MAX(seq) FROM manager_ticks WHERE cwd = ?1), 0) + 1, ?2, ?3, ?4, ?5) RETURNING seq`,
			t.Cwd, string(t.Input), string(t.Decision), t.Result, t.At).Scan(&t.Seq)
	})
	if err != nil {
		return t, fmt.Errorf("store: appending a manager tick of %q: %w", t.Cwd, err)
	}
	return t, nil
}

// ManagerTicks returns a workspace's last ticks, at most limit (all when
// limit <= 0), oldest first.
func (s *Store) ManagerTicks(ctx context.Context, cwd string, limit int) ([]ManagerTick, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.r.QueryContext(ctx, `SELECT cwd, seq, input, decision, result, at FROM
		(SELECT * FROM manager_ticks WHERE cwd = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq`, cwd, limit)
	if err != nil {
		return nil, fmt.Errorf("store: manager ticks of %q: %w", cwd, err)
	}
	defer rows.Close()
	var out []ManagerTick
	for rows.Next() {
		var t ManagerTick
		var in, dec string
		if err := rows.Scan(&t.Cwd, &t.Seq, &in, &dec, &t.Result, &t.At); err != nil {
			return nil, fmt.Errorf("store: manager ticks of %q: %w", cwd, err)
		}
		t.Input, t.Decision = json.RawMessage(in), json.RawMessage(dec)
		out = append(out, t)
	}
	return out, rows.Err()
}

// ManagerClaim is a blueprint task the manager started a run for.
type ManagerClaim struct {
	BlueprintID string
	TaskID      string
	Cwd         string
	RunID       string // "" until the run started
	At          int64  // unix ms
}

// ErrClaimed is returned by ClaimTask when the task was claimed before.
var ErrClaimed = errors.New("store: task already claimed")

// ClaimTask records that the manager starts a run for a task; a task
// claimed before wraps ErrClaimed (never twice the same task).
func (s *Store) ClaimTask(ctx context.Context, c ManagerClaim) error {
	if c.At == 0 {
		c.At = s.now().UnixMilli()
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO manager_claims (blueprint_id, task_id, cwd, run_id, at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING`, c.BlueprintID, c.TaskID, c.Cwd, c.RunID, c.At)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrClaimed
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: claiming task %s of blueprint %s: %w", c.TaskID, c.BlueprintID, err)
	}
	return nil
}

// SetClaimRun records the run started for a claimed task.
func (s *Store) SetClaimRun(ctx context.Context, blueprintID, taskID, runID string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE manager_claims SET run_id = ? WHERE blueprint_id = ? AND task_id = ?`, runID, blueprintID, taskID)
		if err != nil {
			return fmt.Errorf("store: claim of task %s: %w", taskID, err)
		}
		return nil
	})
}

// ManagerClaims returns a workspace's claims, oldest first.
func (s *Store) ManagerClaims(ctx context.Context, cwd string) ([]ManagerClaim, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT blueprint_id, task_id, cwd, run_id, at FROM manager_claims WHERE cwd = ? ORDER BY at, rowid`, cwd)
	if err != nil {
		return nil, fmt.Errorf("store: manager claims of %q: %w", cwd, err)
	}
	defer rows.Close()
	var out []ManagerClaim
	for rows.Next() {
		var c ManagerClaim
		if err := rows.Scan(&c.BlueprintID, &c.TaskID, &c.Cwd, &c.RunID, &c.At); err != nil {
			return nil, fmt.Errorf("store: manager claims of %q: %w", cwd, err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// ReleaseClaim forgets a claim whose run could not start.
func (s *Store) ReleaseClaim(ctx context.Context, blueprintID, taskID string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM manager_claims WHERE blueprint_id = ? AND task_id = ?`, blueprintID, taskID)
		if err != nil {
			return fmt.Errorf("store: releasing the claim of task %s: %w", taskID, err)
		}
		return nil
	})
}

// AllProjectSettings returns every workspace's settings, by workspace.
func (s *Store) AllProjectSettings(ctx context.Context) (map[string]json.RawMessage, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT cwd, settings FROM project_settings ORDER BY cwd`)
	if err != nil {
		return nil, fmt.Errorf("store: project settings: %w", err)
	}
	defer rows.Close()
	out := map[string]json.RawMessage{}
	for rows.Next() {
		var cwd, b string
		if err := rows.Scan(&cwd, &b); err != nil {
			return nil, fmt.Errorf("store: project settings: %w", err)
		}
		out[cwd] = json.RawMessage(b)
	}
	return out, rows.Err()
}
