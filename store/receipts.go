package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Receipt kinds.
const (
	ReceiptDecision = "decision" // a full-auto decision after a turn
	ReceiptApproval = "approval" // an approval or question answered (or forwarded) under full auto
)

// Receipt records one full-auto decision or approval: the inputs that
// produced it, the output, and what became of it. Input and Output are
// opaque JSON owned by the caller.
type Receipt struct {
	ThreadID   string
	Seq        int // assigned by AppendReceipt: 1,2,3... per thread
	ID         string
	Kind       string // ReceiptDecision or ReceiptApproval
	TurnID     string
	Input      json.RawMessage
	Output     json.RawMessage
	PolicyHash string
	Executed   bool
	Override   string // why the output was not executed as decided, if it was not
	CreatedAt  int64  // unix ms
}

// AppendReceipt stores r and returns it with Seq set. A missing thread
// wraps ErrNotFound; a receipt id already used wraps ErrDuplicate.
func (s *Store) AppendReceipt(ctx context.Context, r Receipt) (Receipt, error) {
	if r.ThreadID == "" || r.ID == "" || r.Kind == "" {
		return Receipt{}, errors.New("store: append receipt: empty thread id, id or kind")
	}
	for _, j := range []struct {
		what string
		b    json.RawMessage
	}{{"receipt input", r.Input}, {"receipt output", r.Output}} {
		if len(j.b) == 0 {
			return Receipt{}, fmt.Errorf("store: append receipt: empty %s", j.what)
		}
		if err := checkJSON(j.what, j.b); err != nil {
			return Receipt{}, err
		}
	}
	if r.CreatedAt == 0 {
		r.CreatedAt = s.now().UnixMilli()
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `INSERT INTO receipts
			(thread_id, seq, id, kind, turn_id, input, output, policy_hash, executed, override, created_at)
			VALUES (?1, COALESCE((SELECT MAX(seq) FROM receipts WHERE thread_id = ?1), 0) + 1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
			RETURNING seq`,
			r.ThreadID, r.ID, r.Kind, r.TurnID, string(r.Input), string(r.Output), r.PolicyHash,
			b2i(r.Executed), r.Override, r.CreatedAt).Scan(&r.Seq); err != nil {
			return classify(err)
		}
		return nil
	})
	if err != nil {
		return Receipt{}, fmt.Errorf("store: append receipt to thread %q: %w", r.ThreadID, err)
	}
	return r, nil
}

// Receipts returns the thread's receipts in order. A missing thread wraps
// ErrNotFound.
func (s *Store) Receipts(ctx context.Context, threadID string) ([]Receipt, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT thread_id, seq, id, kind, turn_id, input, output,
		policy_hash, executed, override, created_at FROM receipts WHERE thread_id = ? ORDER BY seq`, threadID)
	if err != nil {
		return nil, fmt.Errorf("store: receipts of %q: %w", threadID, err)
	}
	defer rows.Close()
	var out []Receipt
	for rows.Next() {
		var r Receipt
		var in, o []byte
		if err := rows.Scan(&r.ThreadID, &r.Seq, &r.ID, &r.Kind, &r.TurnID, &in, &o, &r.PolicyHash,
			&r.Executed, &r.Override, &r.CreatedAt); err != nil {
			return nil, fmt.Errorf("store: receipts of %q: %w", threadID, err)
		}
		r.Input, r.Output = in, o
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: receipts of %q: %w", threadID, err)
	}
	if len(out) == 0 {
		if err := s.threadExists(ctx, threadID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// OpenReadOnly opens an existing database file for reading only: no
// migration, no crash recovery, no writes. It is safe while another
// process serves from the file (apserver replay). Use only the read
// methods (Receipts, GetDrive, Drives, PendingRequests, Items, Turns, …); a
// write fails.
func OpenReadOnly(path string) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	uri := "file:" + escapeURIPath(filepath.ToSlash(abs)) + "?_busy_timeout=" + strconv.Itoa(defaultBusyTimeoutMilli) + "&_query_only=1"
	s := &Store{path: abs, now: time.Now}
	if s.r, err = sql.Open(driverName, uri); err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	if err := s.r.Ping(); err != nil {
		s.r.Close()
		return nil, fmt.Errorf("store: open %s: %w", abs, err)
	}
	s.w = s.r // writes fail: the connections are query-only
	return s, nil
}
