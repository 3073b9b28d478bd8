package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// EventThreadCompacted is the event-log row of a compaction: the tombstone
// naming what it replaces (every item before the compaction item) and how
// big the prompt was before and after.
const EventThreadCompacted = "thread.compacted"

// Compaction is one context compaction of a thread. Items before ItemSeq
// stay stored; for the model's prompt they are replaced by History.
type Compaction struct {
	ThreadID, TurnID, ItemID string
	ItemSeq                  int             // seq of the contextCompaction item, set by AppendCompaction
	Summary                  string          // the summary the compaction model wrote
	History                  json.RawMessage // the model history standing in for the items before ItemSeq (opaque JSON)
	TokensBefore             int64
	TokensAfter              int64
	Auto                     bool // started by the turn, not by thread/compact/start
	CreatedAt                int64
}

// AppendCompaction stores the contextCompaction item it, the compaction c
// (its ItemSeq set to the item's) and the tombstone event in one
// transaction.
func (s *Store) AppendCompaction(ctx context.Context, it Item, c Compaction) (Compaction, error) {
	if len(c.History) == 0 || !json.Valid(c.History) {
		return Compaction{}, fmt.Errorf("store: compaction %q: history is not valid JSON", it.ID)
	}
	if err := checkJSON("item", it.Item); err != nil {
		return Compaction{}, err
	}
	c.ThreadID, c.TurnID, c.ItemID = it.ThreadID, it.TurnID, it.ID
	it.History = nil // a compaction's history is its own row's
	err := s.write(ctx, func(tx *sql.Tx) error {
		seq, err := s.insertItem(ctx, tx, it)
		if err != nil {
			return err
		}
		c.ItemSeq = seq
		if _, err := tx.ExecContext(ctx, `INSERT INTO compactions
			(thread_id, turn_id, item_id, item_seq, summary, history, tokens_before, tokens_after, auto, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ThreadID, c.TurnID, c.ItemID, c.ItemSeq, c.Summary, string(c.History),
			c.TokensBefore, c.TokensAfter, b2i(c.Auto), c.CreatedAt); err != nil {
			return classify(err)
		}
		payload, err := json.Marshal(struct {
			Seq          int   `json:"seq"`
			ReplacesUpTo int   `json:"replacesBeforeSeq"`
			SummaryBytes int   `json:"summaryBytes"`
			TokensBefore int64 `json:"tokensBefore"`
			TokensAfter  int64 `json:"tokensAfter"`
			Auto         bool  `json:"auto"`
		}{c.ItemSeq, c.ItemSeq, len(c.Summary), c.TokensBefore, c.TokensAfter, c.Auto})
		if err != nil {
			return err
		}
		_, err = s.appendEvent(ctx, tx, it.ThreadID, EventThreadCompacted, it.TurnID, it.ID, payload, it.CompletedAt)
		return err
	})
	if err != nil {
		return Compaction{}, fmt.Errorf("store: compaction %q in thread %q: %w", it.ID, it.ThreadID, err)
	}
	return c, nil
}

// Compactions returns the thread's compactions, oldest first.
func (s *Store) Compactions(ctx context.Context, threadID string) ([]Compaction, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+compactionCols+` FROM compactions WHERE thread_id = ? ORDER BY item_seq`, threadID)
	if err != nil {
		return nil, fmt.Errorf("store: compactions of %q: %w", threadID, err)
	}
	defer rows.Close()
	var out []Compaction
	for rows.Next() {
		c, err := scanCompaction(rows)
		if err != nil {
			return nil, fmt.Errorf("store: compactions of %q: %w", threadID, err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

const compactionCols = `thread_id, turn_id, item_id, item_seq, summary, history, tokens_before, tokens_after, auto, created_at`

func scanCompaction(sc interface{ Scan(...any) error }) (Compaction, error) {
	var c Compaction
	var hist []byte
	var auto int
	err := sc.Scan(&c.ThreadID, &c.TurnID, &c.ItemID, &c.ItemSeq, &c.Summary, &hist, &c.TokensBefore, &c.TokensAfter, &auto, &c.CreatedAt)
	c.History, c.Auto = hist, auto != 0
	return c, err
}

// HistItem is the model-facing part of a stored item: what building a
// prompt needs, without the wire item.
type HistItem struct {
	TurnID, ID string
	Seq        int
	History    json.RawMessage
}

// PromptSource is what a thread's next prompt is built from: the latest
// compaction (nil when there is none), the items after it and the hidden
// inputs of the turns that started after it.
type PromptSource struct {
	Compaction *Compaction
	Items      []HistItem
	// Hidden maps the turns started after the compaction's turn to their
	// hidden input.
	Hidden map[string]string
}

// PromptSource reads what the next prompt of the thread is built from. It
// reads only from the latest compaction on, and never the wire items: a
// long thread costs what its uncompacted tail costs. A missing thread
// wraps ErrNotFound.
func (s *Store) PromptSource(ctx context.Context, threadID string) (PromptSource, error) {
	var src PromptSource
	fail := func(err error) (PromptSource, error) {
		return PromptSource{}, fmt.Errorf("store: prompt of %q: %w", threadID, err)
	}
	if err := s.threadExists(ctx, threadID); err != nil {
		return PromptSource{}, err
	}
	after, turnSeq := 0, 0
	c, err := scanCompaction(s.r.QueryRowContext(ctx, `SELECT `+compactionCols+` FROM compactions
		WHERE thread_id = ? ORDER BY item_seq DESC LIMIT 1`, threadID))
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fail(err)
	default:
		src.Compaction = &c
		after = c.ItemSeq
		if err := s.r.QueryRowContext(ctx, `SELECT seq FROM turns WHERE thread_id = ? AND id = ?`, threadID, c.TurnID).Scan(&turnSeq); err != nil {
			return fail(err)
		}
	}
	rows, err := s.r.QueryContext(ctx, `SELECT turn_id, id, seq, history FROM items
		WHERE thread_id = ? AND seq > ? ORDER BY seq`, threadID, after)
	if err != nil {
		return fail(err)
	}
	for rows.Next() {
		var it HistItem
		var h []byte
		if err := rows.Scan(&it.TurnID, &it.ID, &it.Seq, &h); err != nil {
			rows.Close()
			return fail(err)
		}
		if it.History, err = s.sideRead(threadID, it.ID, "history", rawOrNil(h)); err != nil {
			rows.Close()
			return fail(err)
		}
		src.Items = append(src.Items, it)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	rows, err = s.r.QueryContext(ctx, `SELECT h.turn_id, h.text FROM hidden_inputs h
		JOIN turns t ON t.thread_id = h.thread_id AND t.id = h.turn_id
		WHERE h.thread_id = ? AND t.seq > ?`, threadID, turnSeq)
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	src.Hidden = map[string]string{}
	for rows.Next() {
		var turn, text string
		if err := rows.Scan(&turn, &text); err != nil {
			return fail(err)
		}
		src.Hidden[turn] = text
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	return src, nil
}

// ItemExists reports whether the thread has an item with this id (an
// index lookup: a thread need not hold every id of a long history in
// memory to keep ids unique).
func (s *Store) ItemExists(ctx context.Context, threadID, id string) (bool, error) {
	var one int
	err := s.r.QueryRowContext(ctx, `SELECT 1 FROM items WHERE thread_id = ? AND id = ?`, threadID, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: item %q of %q: %w", id, threadID, err)
	}
	return true, nil
}

// WireItems returns the thread's items ordered by Seq without their model
// history: what thread/read and thread/resume send. A missing thread
// wraps ErrNotFound.
func (s *Store) WireItems(ctx context.Context, threadID string) ([]Item, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT turn_id, id, seq, type, item, completed_at FROM items WHERE thread_id = ? ORDER BY seq`, threadID)
	if err != nil {
		return nil, fmt.Errorf("store: items of %q: %w", threadID, err)
	}
	defer rows.Close()
	var out []Item
	for rows.Next() {
		it := Item{ThreadID: threadID}
		var body []byte
		if err := rows.Scan(&it.TurnID, &it.ID, &it.Seq, &it.Type, &body, &it.CompletedAt); err != nil {
			return nil, fmt.Errorf("store: items of %q: %w", threadID, err)
		}
		if it.Item, err = s.sideRead(threadID, it.ID, "item", body); err != nil {
			return nil, fmt.Errorf("store: items of %q: %w", threadID, err)
		}
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: items of %q: %w", threadID, err)
	}
	if len(out) == 0 {
		if err := s.threadExists(ctx, threadID); err != nil {
			return nil, err
		}
	}
	return out, nil
}
