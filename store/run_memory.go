package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// RunSection is a run's section of a project's .apserver/memory.md
// ("## Run …", docs/brain.md), as the run handed it to the brain.
type RunSection struct {
	RunID   string
	Section string
	At      int64 // unix ms; 0 for a section adopted from an older file
}

// PutRunSection stores a run's section of the project's memory.md,
// replacing the run's earlier one (which keeps its place), with the project marked dirty in the
// same transaction: the projection that writes the file may come later,
// or after a restart.
func (s *Store) PutRunSection(ctx context.Context, cwd string, r RunSection) error {
	if cwd == "" || r.RunID == "" {
		return errors.New("store: run section: empty project or run")
	}
	if r.At == 0 {
		r.At = s.now().UnixMilli()
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO run_memory (cwd, run_id, section, at) VALUES (?, ?, ?, ?)
			ON CONFLICT (cwd, run_id) DO UPDATE SET section = excluded.section`, cwd, r.RunID, r.Section, r.At); err != nil {
			return classify(err)
		}
		return markDirty(ctx, tx, cwd)
	})
	if err != nil {
		return fmt.Errorf("store: section of run %s in %q: %w", r.RunID, cwd, err)
	}
	return nil
}

// AdoptRunSections stores sections found in a project's memory.md that
// the store does not hold (written before the store kept them), leaving
// the ones it holds as they are and the project's mark alone.
func (s *Store) AdoptRunSections(ctx context.Context, cwd string, rs []RunSection) error {
	if len(rs) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		for _, r := range rs {
			if _, err := tx.ExecContext(ctx, `INSERT INTO run_memory (cwd, run_id, section, at) VALUES (?, ?, ?, ?)
				ON CONFLICT (cwd, run_id) DO NOTHING`, cwd, r.RunID, r.Section, r.At); err != nil {
				return classify(err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: adopt run sections of %q: %w", cwd, err)
	}
	return nil
}

// RunSections returns a project's runs' sections, oldest first (then by
// run id).
func (s *Store) RunSections(ctx context.Context, cwd string) ([]RunSection, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT run_id, section, at FROM run_memory WHERE cwd = ? ORDER BY at, run_id`, cwd)
	if err != nil {
		return nil, fmt.Errorf("store: run sections of %q: %w", cwd, err)
	}
	defer rows.Close()
	var out []RunSection
	for rows.Next() {
		var r RunSection
		if err := rows.Scan(&r.RunID, &r.Section, &r.At); err != nil {
			return nil, fmt.Errorf("store: run sections of %q: %w", cwd, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
