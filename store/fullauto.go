package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// Drive is the persisted state of one thread's full-auto drive. Drive is opaque
// JSON owned by the caller; State is copied out of it so drives can be listed
// by state.
type Drive struct {
	ThreadID  string
	State     string
	Data      json.RawMessage
	UpdatedAt int64 // unix ms
}

// PutDrive stores (or replaces) the thread's drive. A missing thread wraps
// ErrNotFound.
func (s *Store) PutDrive(ctx context.Context, r Drive) error {
	if r.ThreadID == "" || r.State == "" {
		return errors.New("store: put drive: empty thread id or state")
	}
	if len(r.Data) == 0 {
		return errors.New("store: put drive: empty drive")
	}
	if err := checkJSON("run", r.Data); err != nil {
		return err
	}
	if r.UpdatedAt == 0 {
		r.UpdatedAt = s.now().UnixMilli()
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO fullauto_runs (thread_id, state, run, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (thread_id) DO UPDATE SET state = excluded.state, run = excluded.run, updated_at = excluded.updated_at`,
			r.ThreadID, r.State, string(r.Data), r.UpdatedAt)
		return classify(err)
	})
	if err != nil {
		return fmt.Errorf("store: put drive of thread %q: %w", r.ThreadID, err)
	}
	return nil
}

// GetDrive returns the thread's drive, or an error wrapping ErrNotFound.
func (s *Store) GetDrive(ctx context.Context, threadID string) (Drive, error) {
	r := Drive{ThreadID: threadID}
	var b []byte
	err := s.r.QueryRowContext(ctx, `SELECT state, run, updated_at FROM fullauto_runs WHERE thread_id = ?`, threadID).
		Scan(&r.State, &b, &r.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return Drive{}, fmt.Errorf("store: drive of thread %q: %w", threadID, ErrNotFound)
	}
	if err != nil {
		return Drive{}, fmt.Errorf("store: drive of thread %q: %w", threadID, err)
	}
	r.Data = b
	return r, nil
}

// Drives returns every drive whose state is one of states (all drives when
// states is empty), oldest update first.
func (s *Store) Drives(ctx context.Context, states ...string) ([]Drive, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT thread_id, state, run, updated_at FROM fullauto_runs ORDER BY updated_at, thread_id`)
	if err != nil {
		return nil, fmt.Errorf("store: drives: %w", err)
	}
	defer rows.Close()
	want := map[string]bool{}
	for _, st := range states {
		want[st] = true
	}
	var out []Drive
	for rows.Next() {
		var r Drive
		var b []byte
		if err := rows.Scan(&r.ThreadID, &r.State, &b, &r.UpdatedAt); err != nil {
			return nil, fmt.Errorf("store: drives: %w", err)
		}
		if len(want) > 0 && !want[r.State] {
			continue
		}
		r.Data = b
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: drives: %w", err)
	}
	return out, nil
}

// DeleteDrive removes the thread's drive; a missing drive is not an error.
func (s *Store) DeleteDrive(ctx context.Context, threadID string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM fullauto_runs WHERE thread_id = ?`, threadID)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: delete drive of thread %q: %w", threadID, err)
	}
	return nil
}

// PendingRequest is a server→client request a thread is waiting on, kept
// so that it can be re-sent with the same id after a restart. Params is the
// request's params; Resume is what the session needs to act on the answer
// (opaque JSON, may be nil).
type PendingRequest struct {
	ThreadID  string
	RequestID int64
	Method    string
	Params    json.RawMessage
	Resume    json.RawMessage
	CreatedAt int64 // unix ms
}

// PutPendingRequest stores (or replaces) a pending request. A missing
// thread wraps ErrNotFound.
func (s *Store) PutPendingRequest(ctx context.Context, p PendingRequest) error {
	if p.ThreadID == "" || p.Method == "" {
		return errors.New("store: put pending request: empty thread id or method")
	}
	if err := checkJSON("request params", p.Params); err != nil {
		return err
	}
	if len(p.Params) == 0 {
		return errors.New("store: put pending request: empty params")
	}
	if err := checkJSON("request resume data", p.Resume); err != nil {
		return err
	}
	if p.CreatedAt == 0 {
		p.CreatedAt = s.now().UnixMilli()
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO pending_requests (thread_id, request_id, method, params, resume, created_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (thread_id, request_id) DO UPDATE SET method = excluded.method, params = excluded.params,
				resume = excluded.resume, created_at = excluded.created_at`,
			p.ThreadID, p.RequestID, p.Method, string(p.Params), nullJSON(p.Resume), p.CreatedAt)
		return classify(err)
	})
	if err != nil {
		return fmt.Errorf("store: put pending request %d of thread %q: %w", p.RequestID, p.ThreadID, err)
	}
	return nil
}

// DeletePendingRequest removes a pending request; a missing one is not an
// error.
func (s *Store) DeletePendingRequest(ctx context.Context, threadID string, requestID int64) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM pending_requests WHERE thread_id = ? AND request_id = ?`, threadID, requestID)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: delete pending request %d of thread %q: %w", requestID, threadID, err)
	}
	return nil
}

// PendingRequests returns the thread's pending requests by request id
// ("" = every thread's).
func (s *Store) PendingRequests(ctx context.Context, threadID string) ([]PendingRequest, error) {
	q := `SELECT thread_id, request_id, method, params, resume, created_at FROM pending_requests`
	var args []any
	if threadID != "" {
		q += ` WHERE thread_id = ?`
		args = append(args, threadID)
	}
	rows, err := s.r.QueryContext(ctx, q+` ORDER BY request_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: pending requests: %w", err)
	}
	defer rows.Close()
	var out []PendingRequest
	for rows.Next() {
		var p PendingRequest
		var params, resume []byte
		if err := rows.Scan(&p.ThreadID, &p.RequestID, &p.Method, &params, &resume, &p.CreatedAt); err != nil {
			return nil, fmt.Errorf("store: pending requests: %w", err)
		}
		p.Params, p.Resume = params, rawOrNil(resume)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: pending requests: %w", err)
	}
	return out, nil
}

// PutHiddenInput records the hidden input that started a turn: model input
// that is part of the thread's history but never an item (a full-auto or
// goal continuation). A missing thread wraps ErrNotFound.
func (s *Store) PutHiddenInput(ctx context.Context, threadID, turnID, text string) error {
	if threadID == "" || turnID == "" {
		return errors.New("store: put hidden input: empty thread or turn id")
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO hidden_inputs (thread_id, turn_id, text, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (thread_id, turn_id) DO UPDATE SET text = excluded.text`,
			threadID, turnID, text, s.now().UnixMilli())
		return classify(err)
	})
	if err != nil {
		return fmt.Errorf("store: put hidden input of turn %q in thread %q: %w", turnID, threadID, err)
	}
	return nil
}

// HiddenInputs returns the thread's hidden inputs by turn id.
func (s *Store) HiddenInputs(ctx context.Context, threadID string) (map[string]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT turn_id, text FROM hidden_inputs WHERE thread_id = ?`, threadID)
	if err != nil {
		return nil, fmt.Errorf("store: hidden inputs of %q: %w", threadID, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var turn, text string
		if err := rows.Scan(&turn, &text); err != nil {
			return nil, fmt.Errorf("store: hidden inputs of %q: %w", threadID, err)
		}
		out[turn] = text
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: hidden inputs of %q: %w", threadID, err)
	}
	return out, nil
}
