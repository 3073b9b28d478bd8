package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

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
