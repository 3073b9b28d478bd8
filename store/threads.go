package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Thread is one conversation.
type Thread struct {
	ID, Name, Preview, Cwd, Model, ModelProvider, ApprovalPolicy, Sandbox, ForkedFromID string
	Ephemeral, Archived                                                                 bool
	CreatedAt, UpdatedAt                                                                int64           // unix milliseconds
	Settings                                                                            json.RawMessage // opaque extra settings blob (may be nil)
}

const threadCols = `id, name, preview, cwd, model, model_provider, approval_policy, sandbox,
	forked_from_id, ephemeral, archived, created_at, updated_at, settings`

func scanThread(sc interface{ Scan(...any) error }) (Thread, error) {
	var t Thread
	var settings []byte
	err := sc.Scan(&t.ID, &t.Name, &t.Preview, &t.Cwd, &t.Model, &t.ModelProvider, &t.ApprovalPolicy,
		&t.Sandbox, &t.ForkedFromID, &t.Ephemeral, &t.Archived, &t.CreatedAt, &t.UpdatedAt, &settings)
	t.Settings = rawOrNil(settings)
	return t, err
}

func checkThread(t Thread) error {
	if t.ID == "" {
		return errors.New("store: thread id is empty")
	}
	return checkJSON("thread settings", t.Settings)
}

func insertThread(ctx context.Context, tx *sql.Tx, t Thread) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO threads (`+threadCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		t.ID, t.Name, t.Preview, t.Cwd, t.Model, t.ModelProvider, t.ApprovalPolicy, t.Sandbox,
		t.ForkedFromID, b2i(t.Ephemeral), b2i(t.Archived), t.CreatedAt, t.UpdatedAt, nullJSON(t.Settings))
	return classify(err)
}

// CreateThread inserts a new thread and appends "thread.created" to its log.
// A thread with the same id is an error wrapping ErrDuplicate.
func (s *Store) CreateThread(ctx context.Context, t Thread) error {
	if err := checkThread(t); err != nil {
		return err
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := insertThread(ctx, tx, t); err != nil {
			return err
		}
		_, err := s.appendEvent(ctx, tx, t.ID, EventThreadCreated, "", "", []byte(`{}`), t.CreatedAt)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: create thread %q: %w", t.ID, err)
	}
	return nil
}

// UpdateThread replaces every mutable column of thread t.ID (all but id,
// created_at and forked_from_id) and appends "thread.updated".
func (s *Store) UpdateThread(ctx context.Context, t Thread) error {
	if err := checkThread(t); err != nil {
		return err
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE threads SET name = ?, preview = ?, cwd = ?, model = ?,
			model_provider = ?, approval_policy = ?, sandbox = ?, ephemeral = ?, archived = ?,
			updated_at = ?, settings = ? WHERE id = ?`,
			t.Name, t.Preview, t.Cwd, t.Model, t.ModelProvider, t.ApprovalPolicy, t.Sandbox,
			b2i(t.Ephemeral), b2i(t.Archived), t.UpdatedAt, nullJSON(t.Settings), t.ID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		payload := []byte(`{"archived":false}`)
		if t.Archived {
			payload = []byte(`{"archived":true}`)
		}
		_, err = s.appendEvent(ctx, tx, t.ID, EventThreadUpdated, "", "", payload, t.UpdatedAt)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: update thread %q: %w", t.ID, err)
	}
	return nil
}

// DeleteThread removes a thread with its turns, items, events and
// full-auto records (the foreign keys cascade). A missing thread is an
// error wrapping ErrNotFound.
func (s *Store) DeleteThread(ctx context.Context, id string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM threads WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		s.afterCommit = append(s.afterCommit, func() { s.removeThreadSide(id) })
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: delete thread %q: %w", id, err)
	}
	return nil
}

// GetThread returns one thread, or an error wrapping ErrNotFound.
func (s *Store) GetThread(ctx context.Context, id string) (Thread, error) {
	t, err := scanThread(s.r.QueryRowContext(ctx, `SELECT `+threadCols+` FROM threads WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Thread{}, fmt.Errorf("store: thread %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return Thread{}, fmt.Errorf("store: get thread %q: %w", id, err)
	}
	return t, nil
}

// ListOptions filter and page ListThreads.
type ListOptions struct {
	Cursor         string   // opaque, from a previous page's NextCursor
	Limit          int      // default 25, max 200
	SortKey        string   // "created_at" (default) or "updated_at"
	Ascending      bool     // default newest first
	Archived       bool     // true: only archived; false: only non-archived
	Cwds           []string // exact match on any; empty = all
	SearchTerm     string   // case-insensitive substring of name or preview; empty = all
	ModelProviders []string // empty = all
	// IDs restricts the list to these thread ids when OnlyIDs is set (an
	// empty IDs then matches nothing).
	IDs     []string
	OnlyIDs bool
}

const (
	defaultListLimit = 25
	maxListLimit     = 200
)

// cursor is the decoded form of ListThreads' opaque cursor: the position of
// the last row of the previous page plus the ordering it belongs to.
type cursor struct {
	Key string `json:"k"`
	Asc bool   `json:"a"`
	Val int64  `json:"v"`
	ID  string `json:"i"`
}

func encodeCursor(c cursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s, key string, asc bool) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return c, fmt.Errorf("store: %w: %v", ErrBadCursor, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("store: %w: %v", ErrBadCursor, err)
	}
	if c.ID == "" {
		return c, fmt.Errorf("store: %w: no position", ErrBadCursor)
	}
	if c.Key != key || c.Asc != asc {
		return c, fmt.Errorf("store: %w: cursor is for a different sort order", ErrBadCursor)
	}
	return c, nil
}

// ListThreads returns one page of threads matching o, ordered by (sort key,
// id), and the cursor of the next page ("" on the last page). Paging is
// keyset-based, so rows inserted between pages neither shift nor repeat
// rows. A malformed cursor returns an error wrapping ErrBadCursor.
func (s *Store) ListThreads(ctx context.Context, o ListOptions) ([]Thread, string, error) {
	key := o.SortKey
	switch key {
	case "":
		key = "created_at"
	case "created_at", "updated_at":
	default:
		return nil, "", fmt.Errorf("store: unknown sort key %q", o.SortKey)
	}
	limit := o.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	limit = min(limit, maxListLimit)

	var q strings.Builder
	args := make([]any, 0, 8+len(o.Cwds)+len(o.ModelProviders))
	q.WriteString(`SELECT ` + threadCols + ` FROM threads WHERE archived = ?`)
	args = append(args, b2i(o.Archived))
	in := func(col string, vals []string) {
		if len(vals) == 0 {
			return
		}
		q.WriteString(" AND " + col + " IN (")
		for i, v := range vals {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("?")
			args = append(args, v)
		}
		q.WriteString(")")
	}
	in("cwd", o.Cwds)
	in("model_provider", o.ModelProviders)
	if o.OnlyIDs && len(o.IDs) == 0 {
		q.WriteString(" AND 0")
	}
	in("id", o.IDs)
	if o.SearchTerm != "" {
		q.WriteString(` AND (apserver_contains_fold(name, ?) OR apserver_contains_fold(preview, ?))`)
		args = append(args, o.SearchTerm, o.SearchTerm)
	}
	cmp, dir := "<", "DESC"
	if o.Ascending {
		cmp, dir = ">", "ASC"
	}
	if o.Cursor != "" {
		c, err := decodeCursor(o.Cursor, key, o.Ascending)
		if err != nil {
			return nil, "", err
		}
		q.WriteString(" AND (" + key + ", id) " + cmp + " (?, ?)")
		args = append(args, c.Val, c.ID)
	}
	q.WriteString(" ORDER BY " + key + " " + dir + ", id " + dir + " LIMIT ?")
	args = append(args, limit+1)

	rows, err := s.r.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, "", fmt.Errorf("store: list threads: %w", err)
	}
	defer rows.Close()
	var out []Thread
	for rows.Next() {
		t, err := scanThread(rows)
		if err != nil {
			return nil, "", fmt.Errorf("store: list threads: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("store: list threads: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		val := last.CreatedAt
		if key == "updated_at" {
			val = last.UpdatedAt
		}
		next = encodeCursor(cursor{Key: key, Asc: o.Ascending, Val: val, ID: last.ID})
	}
	return out, next, nil
}

// threadExists reports whether thread id exists (read pool).
func (s *Store) threadExists(ctx context.Context, id string) error {
	var one int
	err := s.r.QueryRowContext(ctx, `SELECT 1 FROM threads WHERE id = ?`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: thread %q: %w", id, ErrNotFound)
	}
	return err
}
