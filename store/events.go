package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Event is one row of a thread's append-only event log.
type Event struct {
	ThreadID       string
	Seq            int64 // gapless 1,2,3... per thread
	Kind           string
	TurnID, ItemID string
	Payload        json.RawMessage
	At             int64 // unix ms
}

// AppendEvent appends a generic event to the thread's log and returns it with
// Seq set (and At set to now if it was 0). A missing thread wraps
// ErrNotFound.
func (s *Store) AppendEvent(ctx context.Context, e Event) (Event, error) {
	if e.ThreadID == "" || e.Kind == "" {
		return Event{}, errors.New("store: append event: empty thread id or kind")
	}
	if err := checkJSON("event payload", e.Payload); err != nil {
		return Event{}, err
	}
	if e.At == 0 {
		e.At = s.now().UnixMilli()
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		e.Seq, err = s.appendEvent(ctx, tx, e.ThreadID, e.Kind, e.TurnID, e.ItemID, e.Payload, e.At)
		return err
	})
	if err != nil {
		return Event{}, fmt.Errorf("store: append event %q to thread %q: %w", e.Kind, e.ThreadID, err)
	}
	return e, nil
}

// Events returns the thread's events with Seq > afterSeq, in order. A
// missing thread wraps ErrNotFound.
func (s *Store) Events(ctx context.Context, threadID string, afterSeq int64) ([]Event, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT thread_id, seq, kind, turn_id, item_id, payload, at
		FROM events WHERE thread_id = ? AND seq > ? ORDER BY seq`, threadID, afterSeq)
	if err != nil {
		return nil, fmt.Errorf("store: events of %q: %w", threadID, err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var p []byte
		if err := rows.Scan(&e.ThreadID, &e.Seq, &e.Kind, &e.TurnID, &e.ItemID, &p, &e.At); err != nil {
			return nil, fmt.Errorf("store: events of %q: %w", threadID, err)
		}
		e.Payload = rawOrNil(p)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: events of %q: %w", threadID, err)
	}
	if len(out) == 0 {
		if err := s.threadExists(ctx, threadID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// PutState stores value (valid JSON) under key, replacing any old value.
func (s *Store) PutState(ctx context.Context, key string, value json.RawMessage) error {
	if key == "" {
		return errors.New("store: put state: empty key")
	}
	if len(value) == 0 || !jsonValid(value) {
		return fmt.Errorf("store: put state %q: value is not valid JSON", key)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO state (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, string(value))
		return err
	})
	if err != nil {
		return fmt.Errorf("store: put state %q: %w", key, err)
	}
	return nil
}

// GetState returns the value stored under key, or an error wrapping
// ErrNotFound.
func (s *Store) GetState(ctx context.Context, key string) (json.RawMessage, error) {
	var v []byte
	err := s.r.QueryRowContext(ctx, `SELECT value FROM state WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: state %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get state %q: %w", key, err)
	}
	return v, nil
}

// DeleteState removes key; deleting a missing key is not an error.
func (s *Store) DeleteState(ctx context.Context, key string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM state WHERE key = ?`, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: delete state %q: %w", key, err)
	}
	return nil
}

// ListState returns every key starting with prefix ("" = all) and its value.
func (s *Store) ListState(ctx context.Context, prefix string) (map[string]json.RawMessage, error) {
	// Range scan on the primary key from prefix; stop at the first key past it.
	rows, err := s.r.QueryContext(ctx, `SELECT key, value FROM state WHERE key >= ? ORDER BY key`, prefix)
	if err != nil {
		return nil, fmt.Errorf("store: list state: %w", err)
	}
	defer rows.Close()
	out := map[string]json.RawMessage{}
	for rows.Next() {
		var k string
		var v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("store: list state: %w", err)
		}
		if !strings.HasPrefix(k, prefix) {
			break
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list state: %w", err)
	}
	return out, nil
}

func jsonValid(b []byte) bool { return json.Valid(b) }

// appendJSONString appends s as a JSON string literal.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
