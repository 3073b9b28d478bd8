package store

import (
	"context"
	"database/sql"
	"encoding/json"

	"fmt"
)

// FullAutoLog is the event log of a thread's full-auto drive: Base and the
// entries in order, each opaque JSON owned by the caller (package
// fullauto encodes them).
type FullAutoLog struct {
	Base    json.RawMessage
	Entries []json.RawMessage
}

// AppendFullAutoEvent appends entry (applied at atMs) to the thread's
// drive log. fresh starts a new log with base first, dropping the earlier
// drive's events, in the same transaction.
func (s *Store) AppendFullAutoEvent(ctx context.Context, threadID string, atMs int64, entry json.RawMessage, fresh bool, base json.RawMessage) error {
	if err := checkJSON("full-auto event", entry); err != nil {
		return err
	}
	if fresh {
		if err := checkJSON("full-auto log base", base); err != nil {
			return err
		}
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if fresh {
			if _, err := tx.ExecContext(ctx, `DELETE FROM fullauto_events WHERE thread_id = ?`, threadID); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO fullauto_events (thread_id, seq, at_ms, entry) VALUES (?, 0, ?, ?)`,
				threadID, atMs, string(base)); err != nil {
				return classify(err)
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO fullauto_events (thread_id, seq, at_ms, entry)
			SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ? FROM fullauto_events WHERE thread_id = ?`,
			threadID, atMs, string(entry), threadID)
		return classify(err)
	})
	if err != nil {
		return fmt.Errorf("store: append a full-auto event of thread %q: %w", threadID, err)
	}
	return nil
}

// GetFullAutoLog returns the thread's drive log, or an error wrapping
// ErrNotFound when it has none (no drive, or one stored before logs).
func (s *Store) GetFullAutoLog(ctx context.Context, threadID string) (FullAutoLog, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT seq, entry FROM fullauto_events WHERE thread_id = ? ORDER BY seq`, threadID)
	if err != nil {
		return FullAutoLog{}, fmt.Errorf("store: full-auto log of thread %q: %w", threadID, err)
	}
	defer rows.Close()
	var lg FullAutoLog
	found := false
	for rows.Next() {
		var seq int64
		var b []byte
		if err := rows.Scan(&seq, &b); err != nil {
			return FullAutoLog{}, fmt.Errorf("store: full-auto log of thread %q: %w", threadID, err)
		}
		found = true
		if seq == 0 {
			lg.Base = b
			continue
		}
		lg.Entries = append(lg.Entries, b)
	}
	if err := rows.Err(); err != nil {
		return FullAutoLog{}, fmt.Errorf("store: full-auto log of thread %q: %w", threadID, err)
	}
	if !found || lg.Base == nil {
		return FullAutoLog{}, fmt.Errorf("store: full-auto log of thread %q: %w", threadID, ErrNotFound)
	}
	return lg, nil
}

// DeleteFullAutoLog forgets the thread's drive log; a missing log is not an
// error.
func (s *Store) DeleteFullAutoLog(ctx context.Context, threadID string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM fullauto_events WHERE thread_id = ?`, threadID)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: delete the full-auto log of thread %q: %w", threadID, err)
	}
	return nil
}
