package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"strconv"
)

// Turn is one user turn of a thread.
type Turn struct {
	ThreadID, ID           string
	Seq                    int             // assigned by StartTurn: 1,2,3... per thread
	Status                 string          // "inProgress" | "completed" | "interrupted" | "failed"
	Error                  json.RawMessage // TurnError JSON or nil
	StartedAt, CompletedAt int64           // unix ms; CompletedAt 0 while running
	DurationMs             int64
}

// Item is one completed item of a turn.
type Item struct {
	ThreadID, TurnID, ID string
	Seq                  int             // assigned by AppendItem: per-thread order 1,2,3...
	Type                 string          // e.g. "userMessage", "agentMessage", "commandExecution"
	Item                 json.RawMessage // the completed wire item (opaque JSON)
	History              json.RawMessage // model-facing history records for this item (opaque JSON, may be nil)
	CompletedAt          int64

	// Encoding, when Item is empty, writes the wire item instead (AppendItem
	// only). An item of sideMin bytes or more given this way is written
	// straight into its side file, never held whole in memory; a smaller
	// one is written into Item first. The store trusts it to write valid
	// JSON of Len bytes (it is the server's own encoder, not input).
	Encoding Encoding
}

// Encoding is a JSON value written on demand (protocol.Large is one).
type Encoding interface {
	io.WriterTo
	Len() int
}

// StartTurn inserts a running turn, assigns its Seq, bumps the thread's
// updated_at to StartedAt (if later) and appends "turn.started". Status must
// be "" or "inProgress". A missing thread wraps ErrNotFound; a turn id
// already used in the thread wraps ErrDuplicate.
func (s *Store) StartTurn(ctx context.Context, t Turn) (Turn, error) {
	if t.ThreadID == "" || t.ID == "" {
		return Turn{}, errors.New("store: start turn: empty thread or turn id")
	}
	if t.Status == "" {
		t.Status = StatusInProgress
	}
	if t.Status != StatusInProgress {
		return Turn{}, fmt.Errorf("store: start turn: status %q, want %q", t.Status, StatusInProgress)
	}
	if err := checkJSON("turn error", t.Error); err != nil {
		return Turn{}, err
	}
	t.CompletedAt, t.DurationMs = 0, 0
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, s.bumpThrd).ExecContext(ctx, t.ThreadID, t.StartedAt)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		if err := tx.StmtContext(ctx, s.insTurn).QueryRowContext(ctx, t.ThreadID, t.ID, t.Status,
			nullJSON(t.Error), t.StartedAt).Scan(&t.Seq); err != nil {
			return classify(err)
		}
		payload := strconv.AppendInt([]byte(`{"seq":`), int64(t.Seq), 10)
		payload = append(payload, '}')
		_, err = s.appendEvent(ctx, tx, t.ThreadID, EventTurnStarted, t.ID, "", payload, t.StartedAt)
		return err
	})
	if err != nil {
		return Turn{}, fmt.Errorf("store: start turn %q in thread %q: %w", t.ID, t.ThreadID, err)
	}
	return t, nil
}

// FinishTurn records the end of a turn (status, error, completion time and
// duration) and appends "turn.completed". Status must be "completed",
// "interrupted" or "failed". A missing turn wraps ErrNotFound.
func (s *Store) FinishTurn(ctx context.Context, t Turn) error {
	switch t.Status {
	case StatusCompleted, StatusInterrupted, StatusFailed:
	default:
		return fmt.Errorf("store: finish turn %q: bad status %q", t.ID, t.Status)
	}
	if err := checkJSON("turn error", t.Error); err != nil {
		return err
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, s.finTurn).ExecContext(ctx, t.ThreadID, t.ID, t.Status,
			nullJSON(t.Error), t.CompletedAt, t.DurationMs)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		payload := appendJSONString([]byte(`{"status":`), t.Status)
		payload = append(payload, '}')
		_, err = s.appendEvent(ctx, tx, t.ThreadID, EventTurnCompleted, t.ID, "", payload, t.CompletedAt)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: finish turn %q in thread %q: %w", t.ID, t.ThreadID, err)
	}
	return nil
}

const turnCols = `thread_id, id, seq, status, error, started_at, completed_at, duration_ms`

func scanTurns(rows *sql.Rows) ([]Turn, error) {
	defer rows.Close()
	var out []Turn
	for rows.Next() {
		var t Turn
		var e []byte
		if err := rows.Scan(&t.ThreadID, &t.ID, &t.Seq, &t.Status, &e, &t.StartedAt, &t.CompletedAt, &t.DurationMs); err != nil {
			return nil, err
		}
		t.Error = rawOrNil(e)
		out = append(out, t)
	}
	return out, rows.Err()
}

// Turns returns the thread's turns ordered by Seq. A missing thread wraps
// ErrNotFound.
func (s *Store) Turns(ctx context.Context, threadID string) ([]Turn, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+turnCols+` FROM turns WHERE thread_id = ? ORDER BY seq`, threadID)
	if err != nil {
		return nil, fmt.Errorf("store: turns of %q: %w", threadID, err)
	}
	out, err := scanTurns(rows)
	if err != nil {
		return nil, fmt.Errorf("store: turns of %q: %w", threadID, err)
	}
	if len(out) == 0 {
		if err := s.threadExists(ctx, threadID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// AppendItem stores a completed item and its "item.completed" event in one
// transaction, committed when it returns, and returns the item with Seq set.
// The turn must exist (else ErrNotFound); item ids are unique per thread
// (else ErrDuplicate).
func (s *Store) AppendItem(ctx context.Context, it Item) (Item, error) {
	if it.ThreadID == "" || it.TurnID == "" || it.ID == "" {
		return Item{}, errors.New("store: append item: empty thread, turn or item id")
	}
	if len(it.Item) == 0 && it.Encoding != nil && !s.sideable(it, it.Encoding.Len()) {
		b, err := encodeAll(it.Encoding)
		if err != nil {
			return Item{}, fmt.Errorf("store: append item %q: %w", it.ID, err)
		}
		it.Item, it.Encoding = b, nil
	}
	if len(it.Item) == 0 && it.Encoding == nil {
		return Item{}, fmt.Errorf("store: append item %q: empty item", it.ID)
	}
	if err := checkJSON("item", it.Item); err != nil {
		return Item{}, err
	}
	if err := checkJSON("item history", it.History); err != nil {
		return Item{}, err
	}
	if len(it.Item)+len(it.History) >= hugeItem {
		freeHeap()
	}
	row := it // what the row holds: markers for what went to side files
	side, err := s.stageSide(&row)
	if err != nil {
		return Item{}, fmt.Errorf("store: append item %q to thread %q: %w", it.ID, it.ThreadID, err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		var err error
		if it.Seq, err = s.insertItem(ctx, tx, row); err != nil {
			dropSide(side)
			return err
		}
		if err := s.commitSide(side); err != nil {
			return err
		}
		if sideHook != nil {
			if err := sideHook(); err != nil {
				return err
			}
		}
		payload := appendJSONString([]byte(`{"type":`), it.Type)
		payload = append(payload, `,"seq":`...)
		payload = strconv.AppendInt(payload, int64(it.Seq), 10)
		payload = append(payload, '}')
		_, err = s.appendEvent(ctx, tx, it.ThreadID, EventItemCompleted, it.TurnID, it.ID, payload, it.CompletedAt)
		return err
	})
	if err != nil {
		dropSide(side) // a transaction that failed before its files were renamed
		return Item{}, fmt.Errorf("store: append item %q to thread %q: %w", it.ID, it.ThreadID, err)
	}
	return it, nil
}

const insItemSQL = `INSERT INTO items (thread_id, turn_id, id, seq, type, item, history, completed_at)
	VALUES (?1, ?2, ?3, COALESCE((SELECT MAX(seq) FROM items WHERE thread_id = +?1), 0) + 1, ?4, ?5, ?6, ?7)
	RETURNING seq`

// bigItem is the size from which an item is inserted by another
// statement than the prepared one, with named arguments. The SQLite
// driver copies a statement's positional text arguments into a buffer the
// statement keeps, and only grows, for as long as it lives: for the
// prepared statement, the life of the process (64 MiB resident after one
// answer cut at its cap). Named arguments are bound by SQLite's own copy,
// which is freed when the statement is reset after use.
const bigItem = 1 << 20

const insBigItemSQL = `INSERT INTO items (thread_id, turn_id, id, seq, type, item, history, completed_at)
	VALUES (@thread, @turn, @id, COALESCE((SELECT MAX(seq) FROM items WHERE thread_id = +@thread), 0) + 1,
	@type, @item, @history, @at)
	RETURNING seq`

// hugeItem is the size from which an item is stored only after the Go
// heap has handed back to the system the memory it no longer uses.
// SQLite copies a statement's text twice in C (the bound value, then the
// row's record), outside the Go heap; what the heap holds at that moment
// but no longer needs (an answer's streamed chunks, once joined; the
// buffers its encodings were built in; a request line already decoded)
// would stay resident beside those copies until the runtime's background
// scavenger got to it: at an answer cut at 64 MiB the server's peak RSS
// was 412 MiB with them, 288 MiB without. A forced collection costs a few
// milliseconds, nothing beside such a statement.
const hugeItem = 4 << 20

// sideHook, when set by a test, runs between an item's side files being
// named and its row's commit; an error stands for a crash at that point.
var sideHook func() error

// freeHeap is debug.FreeOSMemory; tests count its calls.
var freeHeap = debug.FreeOSMemory

// insertItem inserts it (its History as given) and returns its seq.
func (s *Store) insertItem(ctx context.Context, tx *sql.Tx, it Item) (int, error) {
	var seq int
	var err error
	if len(it.Item)+len(it.History) >= bigItem {
		err = tx.QueryRowContext(ctx, insBigItemSQL, sql.Named("thread", it.ThreadID), sql.Named("turn", it.TurnID),
			sql.Named("id", it.ID), sql.Named("type", it.Type), sql.Named("item", textArg(it.Item)),
			sql.Named("history", nullJSON(it.History)), sql.Named("at", it.CompletedAt)).Scan(&seq)
	} else {
		err = tx.StmtContext(ctx, s.insItem).QueryRowContext(ctx, it.ThreadID, it.TurnID, it.ID, it.Type,
			textArg(it.Item), nullJSON(it.History), it.CompletedAt).Scan(&seq)
	}
	if err != nil {
		return 0, classify(err)
	}
	return seq, nil
}

const itemCols = `thread_id, turn_id, id, seq, type, item, history, completed_at`

func scanItems(rows *sql.Rows) ([]Item, error) {
	defer rows.Close()
	var out []Item
	for rows.Next() {
		var it Item
		var body, hist []byte
		if err := rows.Scan(&it.ThreadID, &it.TurnID, &it.ID, &it.Seq, &it.Type, &body, &hist, &it.CompletedAt); err != nil {
			return nil, err
		}
		it.Item, it.History = body, rawOrNil(hist)
		out = append(out, it)
	}
	return out, rows.Err()
}

// Items returns all items of the thread ordered by Seq. A missing thread
// wraps ErrNotFound.
func (s *Store) Items(ctx context.Context, threadID string) ([]Item, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+itemCols+` FROM items WHERE thread_id = ? ORDER BY seq`, threadID)
	if err != nil {
		return nil, fmt.Errorf("store: items of %q: %w", threadID, err)
	}
	out, err := scanItems(rows)
	if err == nil {
		err = s.resolveItems(out)
	}
	if err != nil {
		return nil, fmt.Errorf("store: items of %q: %w", threadID, err)
	}
	if len(out) == 0 {
		if err := s.threadExists(ctx, threadID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Fork creates dst and copies into it the source thread's turns and items up
// to and including throughTurnID ("" = all turns); a turn still
// "inProgress" is never copied. Turns and items keep their ids and are
// renumbered 1..n in their original order. If dst.ForkedFromID is empty it
// is set to srcID. One transaction; appends "thread.forked" on dst.
func (s *Store) Fork(ctx context.Context, srcID string, dst Thread, throughTurnID string) error {
	if dst.ForkedFromID == "" {
		dst.ForkedFromID = srcID
	}
	if err := checkThread(dst); err != nil {
		return err
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM threads WHERE id = ?`, srcID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("source thread: %w", ErrNotFound)
		}
		if err != nil {
			return err
		}
		cutoff := int64(math.MaxInt64)
		if throughTurnID != "" {
			err := tx.QueryRowContext(ctx, `SELECT seq FROM turns WHERE thread_id = ? AND id = ?`,
				srcID, throughTurnID).Scan(&cutoff)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("turn %q: %w", throughTurnID, ErrNotFound)
			}
			if err != nil {
				return err
			}
		}
		if err := insertThread(ctx, tx, dst); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO turns (`+turnCols+`)
			SELECT ?1, id, ROW_NUMBER() OVER (ORDER BY seq), status, error, started_at, completed_at, duration_ms
			FROM turns WHERE thread_id = ?2 AND seq <= ?3 AND status != 'inProgress'`,
			dst.ID, srcID, cutoff)
		if err != nil {
			return err
		}
		nTurns, _ := res.RowsAffected()
		res, err = tx.ExecContext(ctx, `INSERT INTO items (`+itemCols+`)
			SELECT ?1, i.turn_id, i.id, ROW_NUMBER() OVER (ORDER BY i.seq), i.type, i.item, i.history, i.completed_at
			FROM items i JOIN turns t ON t.thread_id = i.thread_id AND t.id = i.turn_id
			WHERE i.thread_id = ?2 AND t.seq <= ?3 AND t.status != 'inProgress'`,
			dst.ID, srcID, cutoff)
		if err != nil {
			return err
		}
		nItems, _ := res.RowsAffected()
		if err := s.linkSide(ctx, tx, srcID, dst.ID); err != nil {
			return err
		}
		// Compactions of the copied turns, pointing at the copied items'
		// new seqs: the fork's prompt starts where the source's did.
		if _, err := tx.ExecContext(ctx, `INSERT INTO compactions (`+compactionCols+`)
			SELECT ?1, c.turn_id, c.item_id, ni.seq, c.summary, c.history, c.tokens_before, c.tokens_after, c.auto, c.created_at
			FROM compactions c JOIN items ni ON ni.thread_id = ?1 AND ni.id = c.item_id
			WHERE c.thread_id = ?2`, dst.ID, srcID); err != nil {
			return err
		}
		// Full auto's hidden inputs belong to the copied turns too: without
		// them the fork's model history would lose those turns' input.
		if _, err := tx.ExecContext(ctx, `INSERT INTO hidden_inputs (thread_id, turn_id, text, created_at)
			SELECT ?1, h.turn_id, h.text, h.created_at
			FROM hidden_inputs h JOIN turns t ON t.thread_id = h.thread_id AND t.id = h.turn_id
			WHERE h.thread_id = ?2 AND t.seq <= ?3 AND t.status != 'inProgress'`,
			dst.ID, srcID, cutoff); err != nil {
			return err
		}
		payload := appendJSONString([]byte(`{"from":`), srcID)
		payload = append(payload, `,"throughTurnId":`...)
		payload = appendJSONString(payload, throughTurnID)
		payload = fmt.Appendf(payload, `,"turns":%d,"items":%d}`, nTurns, nItems)
		_, err = s.appendEvent(ctx, tx, dst.ID, EventThreadForked, "", "", payload, dst.CreatedAt)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: fork thread %q into %q: %w", srcID, dst.ID, err)
	}
	return nil
}

// DropTurnsFrom deletes turn turnID and every later turn (by Seq) of the
// thread, with their items, and appends "turns.dropped" (at the current
// time, as no caller timestamp is given). The event log itself is never
// truncated. A missing turn wraps ErrNotFound.
func (s *Store) DropTurnsFrom(ctx context.Context, threadID, turnID string) error {
	now := s.now().UnixMilli()
	err := s.write(ctx, func(tx *sql.Tx) error {
		var seq int64
		err := tx.QueryRowContext(ctx, `SELECT seq FROM turns WHERE thread_id = ? AND id = ?`, threadID, turnID).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT id FROM turns WHERE thread_id = ? AND seq >= ? ORDER BY seq`, threadID, seq)
		if err != nil {
			return err
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		sideIDs, err := s.sideItemIDs(ctx, tx, threadID, `SELECT id FROM items WHERE thread_id = ?1 AND turn_id IN
			(SELECT id FROM turns WHERE thread_id = ?1 AND seq >= ?2)`, seq)
		if err != nil {
			return err
		}
		if len(sideIDs) > 0 {
			s.afterCommit = append(s.afterCommit, func() { s.removeItemSide(threadID, sideIDs) })
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM items WHERE thread_id = ?1 AND turn_id IN
			(SELECT id FROM turns WHERE thread_id = ?1 AND seq >= ?2)`, threadID, seq)
		if err != nil {
			return err
		}
		nItems, _ := res.RowsAffected()
		// A compaction in a dropped turn is undone with it.
		if _, err := tx.ExecContext(ctx, `DELETE FROM compactions WHERE thread_id = ?1 AND turn_id IN
			(SELECT id FROM turns WHERE thread_id = ?1 AND seq >= ?2)`, threadID, seq); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM turns WHERE thread_id = ? AND seq >= ?`, threadID, seq); err != nil {
			return err
		}
		payload, err := json.Marshal(struct {
			From  string   `json:"fromTurnId"`
			Turns []string `json:"turnIds"`
			Items int64    `json:"items"`
		}{turnID, ids, nItems})
		if err != nil {
			return err
		}
		_, err = s.appendEvent(ctx, tx, threadID, EventTurnsDropped, turnID, "", payload, now)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: drop turns from %q in thread %q: %w", turnID, threadID, err)
	}
	return nil
}

// ErrItemOrder is returned by WireTurns for a thread whose items, in Seq
// order, do not follow its turns' order (apserver appends items only to
// the thread's latest turn, so its own threads never do). Read such a
// thread with Turns and WireItems.
var ErrItemOrder = errors.New("items out of turn order")

// WireTurns walks the thread's turns in Seq order, calling turn for each
// and then item for each of its items in Seq order with the stored wire
// item (no model history): what thread/read and thread/resume send, read
// by a cursor so that a long thread is never held whole. The item's bytes
// are the database's and valid only during the call. It reads one snapshot
// (a read transaction). A callback's error stops the walk and is returned.
// A missing thread wraps ErrNotFound; an item out of its turn's order
// wraps ErrItemOrder, after the callbacks have seen what came before it.
func (s *Store) WireTurns(ctx context.Context, threadID string, turn func(Turn) error, item func(json.RawMessage) error) (err error) {
	defer func() {
		if err != nil && !errors.Is(err, ErrNotFound) {
			err = fmt.Errorf("store: turns of %q: %w", threadID, err)
		}
	}()
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT `+turnCols+` FROM turns WHERE thread_id = ? ORDER BY seq`, threadID)
	if err != nil {
		return err
	}
	turns, err := scanTurns(rows)
	if err != nil {
		return err
	}
	if len(turns) == 0 {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM threads WHERE id = ?`, threadID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: thread %q: %w", threadID, ErrNotFound)
		}
		return err
	}
	index := make(map[string]int, len(turns))
	for i, t := range turns {
		index[t.ID] = i
	}
	next := 0 // turns before next have been passed to turn
	open := func(upto int) error {
		for ; next <= upto; next++ {
			if err := turn(turns[next]); err != nil {
				return err
			}
		}
		return nil
	}
	rows, err = tx.QueryContext(ctx, `SELECT turn_id, id, item FROM items WHERE thread_id = ? ORDER BY seq`, threadID)
	if err != nil {
		return err
	}
	defer rows.Close()
	var turnID, itemID, body sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&turnID, &itemID, &body); err != nil {
			return err
		}
		k, ok := index[string(turnID)]
		if !ok {
			continue // no such turn: never sent (Turns with WireItems drops it too)
		}
		if k < next-1 {
			return fmt.Errorf("item of turn %q after turn %q: %w", turnID, turns[next-1].ID, ErrItemOrder)
		}
		if err := open(k); err != nil {
			return err
		}
		b, err := s.sideRead(threadID, string(itemID), "item", body)
		if err != nil {
			return err
		}
		if err := item(json.RawMessage(b)); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return open(len(turns) - 1)
}
