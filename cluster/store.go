package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/apserver/apserver/runner"
	"github.com/apserver/apserver/store"
)

// Channel is the channel on which every append is announced (NOTIFY), the
// payload "<run id>:<seq>".
const Channel = "apserver_run_events"

// QueueName is River's queue of apserver's work.
const QueueName = "apserver"

// WorkArgs is a River job: one slow effect of a run (runner.Work), stored
// with the event whose effect it is (Seq).
type WorkArgs struct {
	Work runner.Work `json:"work"`
	Seq  int64       `json:"seq"`
}

// Kind implements river.JobArgs.
func (WorkArgs) Kind() string { return "apserver_run_work" }

// InsertOpts implements river.JobArgsWithInsertOpts: apserver's queue,
// and one job per effect of an event even when the same append is
// retried.
func (a WorkArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueName, MaxAttempts: 25}
}

// Store is the run event log in PostgreSQL: a runner.RunStore whose
// appends enqueue their work on River in the same transaction. It is safe
// for use by many goroutines and many processes.
type Store struct {
	pool  *pgxpool.Pool
	river *river.Client[pgx.Tx]
	now   func() time.Time

	// RemoteOf, if set, is the URL of the remote of the repository at
	// cwd, recorded with a run's first event: where workers fetch the
	// project from and push its branches to. Set before use.
	RemoteOf func(cwd string) string
	// Execute is recorded with a run's first event: ExecuteHere when the
	// process that starts it does its work, "workers" when workers do.
	// Set before use.
	Execute string
	// Lease, if set, is taken before each append that leaves the run
	// working (cluster/lease.go): the process then drives it. Set before
	// use.
	Lease *Lease
}

// NewStore makes the store over a pool of a migrated database (Migrate).
func NewStore(pool *pgxpool.Pool) (*Store, error) {
	// An insert-only client: no queues, no workers.
	rc, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	if err != nil {
		return nil, fmt.Errorf("cluster: River's client: %w", err)
	}
	return &Store{pool: pool, river: rc, now: time.Now}, nil
}

// Pool is the store's connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

var _ runner.RunStore = (*Store)(nil)

var _ runner.SharedLog = (*Store)(nil)

// AppendRunEvent implements runner.RunStore: the listing row, the event,
// its work on River and the NOTIFY, in one transaction.
func (s *Store) AppendRunEvent(ctx context.Context, row store.RunRow, typ string, event json.RawMessage, at int64, work []runner.Work) (int64, error) {
	return s.append(ctx, -1, row, typ, event, at, work)
}

// AppendRunEventAfter implements runner.SharedLog.
func (s *Store) AppendRunEventAfter(ctx context.Context, after int64, row store.RunRow, typ string, event json.RawMessage, at int64, work []runner.Work) (int64, error) {
	return s.append(ctx, after, row, typ, event, at, work)
}

// append appends where the log ends at after (-1: wherever it ends).
func (s *Store) append(ctx context.Context, after int64, row store.RunRow, typ string, event json.RawMessage, at int64, work []runner.Work) (int64, error) {
	if row.ID == "" || row.Status == "" || typ == "" {
		return 0, errors.New("cluster: append run event: empty run id, status or type")
	}
	if !json.Valid(event) || !json.Valid(row.Run) {
		return 0, errors.New("cluster: append run event: the event or the run is not JSON")
	}
	if at == 0 {
		at = s.now().UnixMilli()
	}
	if row.CreatedAt == 0 {
		row.CreatedAt = at
	}
	if s.Lease != nil && active(row.Status) {
		// Before the append: no instant where the run works in the log
		// and no one holds its lease.
		if err := s.Lease.Hold(ctx, row.ID); err != nil {
			return 0, fmt.Errorf("cluster: append event %s of run %q: %w", typ, row.ID, err)
		}
	}
	var seq int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The upsert locks the run's row until the commit: appends to one
		// run are serialized, so seq is the next one.
		if _, err := tx.Exec(ctx, `INSERT INTO apserver_runs (id, cwd, status, run, created_at, updated_at, execute) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (id) DO UPDATE SET status = excluded.status, run = excluded.run, updated_at = excluded.updated_at`,
			row.ID, row.Cwd, row.Status, string(row.Run), row.CreatedAt, at, s.Execute); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(seq), 0) + 1 FROM apserver_run_events WHERE run_id = $1`, row.ID).Scan(&seq); err != nil {
			return err
		}
		if after >= 0 && seq != after+1 {
			return fmt.Errorf("the log ends at %d, not %d: %w", seq-1, after, runner.ErrLogMoved)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO apserver_run_events (run_id, seq, type, event, at) VALUES ($1, $2, $3, $4, $5)`,
			row.ID, seq, typ, string(event), at); err != nil {
			return err
		}
		if seq == 1 && s.RemoteOf != nil {
			if r := s.RemoteOf(row.Cwd); r != "" {
				if _, err := tx.Exec(ctx, `UPDATE apserver_runs SET remote = $2 WHERE id = $1`, row.ID, r); err != nil {
					return err
				}
			}
		}
		if len(work) > 0 {
			params := make([]river.InsertManyParams, len(work))
			for i, w := range work {
				if w.RunID != row.ID {
					return fmt.Errorf("work of run %q appended with an event of run %q", w.RunID, row.ID)
				}
				params[i] = river.InsertManyParams{Args: WorkArgs{Work: w, Seq: seq}}
			}
			if _, err := s.river.InsertManyTx(ctx, tx, params); err != nil {
				return fmt.Errorf("enqueueing the event's work: %w", err)
			}
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, Channel, row.ID+":"+strconv.FormatInt(seq, 10))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("cluster: append event %s of run %q: %w", typ, row.ID, err)
	}
	return seq, nil
}

// RunEvents implements runner.RunStore.
func (s *Store) RunEvents(ctx context.Context, runID string) ([]store.RunEvent, error) {
	return s.RunEventsAfter(ctx, runID, 0)
}

// RunEventsAfter is the run's events after sequence number after, in
// order. An unknown run wraps store.ErrNotFound.
func (s *Store) RunEventsAfter(ctx context.Context, runID string, after int64) ([]store.RunEvent, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT COUNT(*) FROM apserver_runs WHERE id = $1`, runID).Scan(&n); err != nil {
		return nil, fmt.Errorf("cluster: events of run %q: %w", runID, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("cluster: events of run %q: %w", runID, store.ErrNotFound)
	}
	rows, err := s.pool.Query(ctx, `SELECT seq, type, event::text, at FROM apserver_run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq`, runID, after)
	if err != nil {
		return nil, fmt.Errorf("cluster: events of run %q: %w", runID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.RunEvent, error) {
		var e store.RunEvent
		var text string
		err := r.Scan(&e.Seq, &e.Type, &text, &e.At)
		e.Event = json.RawMessage(text)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: events of run %q: %w", runID, err)
	}
	return out, nil
}

// RunRows implements runner.RunStore.
func (s *Store) RunRows(ctx context.Context) ([]store.RunRow, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, cwd, status, run::text, created_at, updated_at FROM apserver_runs ORDER BY created_at DESC, id DESC`)
	if err != nil {
		return nil, fmt.Errorf("cluster: runs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.RunRow, error) {
		var x store.RunRow
		var text string
		err := r.Scan(&x.ID, &x.Cwd, &x.Status, &text, &x.CreatedAt, &x.UpdatedAt)
		x.Run = json.RawMessage(text)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: runs: %w", err)
	}
	return out, nil
}

// Remote is the remote URL recorded for the run ("" when none was).
func (s *Store) Remote(ctx context.Context, runID string) (string, error) {
	var r string
	if err := s.pool.QueryRow(ctx, `SELECT remote FROM apserver_runs WHERE id = $1`, runID).Scan(&r); err != nil {
		return "", fmt.Errorf("cluster: the remote of run %q: %w", runID, err)
	}
	return r, nil
}

// ParseNotice reads the payload of a NOTIFY on Channel.
func ParseNotice(payload string) (runID string, seq int64, ok bool) {
	i := strings.LastIndexByte(payload, ':')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.ParseInt(payload[i+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return payload[:i], n, true
}
