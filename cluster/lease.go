package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Runs of editor-side apservers that do their work themselves ([cluster]
// execute = "here") are driven by whichever process carries out their
// steps. A process that dies with steps in flight leaves its runs
// "running" with no one driving them; Lease and KeepDriving let another
// process (or the same one restarted) take them up, once.
//
// The lease of a run is a shared PostgreSQL advisory lock (key
// "apserver-drive:<run>") held, on a connection of the process's own, by
// every process with steps of the run in flight. The store takes it
// before it appends an event that leaves the run working (Store.Lease),
// so a step never runs without it; KeepDriving lets go of it once the
// process has nothing of the run in flight. The lock dies with the
// process's connection: a run that is working while no one holds its
// lease has lost its driver, and the first process to get the exclusive
// lock takes the run up from its log (runs.Restore: commits are found by
// their trailers, not made twice).

// DriveEvery is how often KeepDriving looks at the runs: the longest a
// run whose process died waits before another takes it up.
const DriveEvery = 250 * time.Millisecond

// activeStatuses are the statuses of a run with steps in flight.
var activeStatuses = []string{"running", "queued", "pausing"}

func active(status string) bool {
	for _, s := range activeStatuses {
		if s == status {
			return true
		}
	}
	return false
}

func leaseKey(id string) string { return "apserver-drive:" + id }

// Lease holds this process's leases on the runs it drives, on one
// connection of its own (re-made, and the leases taken again, when the
// database comes back). Safe for use by many goroutines.
type Lease struct {
	cfg *pgx.ConnConfig
	log *slog.Logger

	mu sync.Mutex
	// conn is the connection holding the locks; nil while there is none.
	conn *pgx.Conn
	// held counts, per run, the holds taken (a generation: a let-go
	// decided before a newer hold does not undo it).
	held map[string]uint64
	// since is when conn was made: the process does not take runs up
	// until settle has passed, time for the others to take their leases
	// again.
	since  time.Time
	settle time.Duration
}

// NewLease makes the leases of a process over the pool's database.
func NewLease(pool *pgxpool.Pool, log *slog.Logger) *Lease {
	if log == nil {
		log = slog.Default()
	}
	return &Lease{cfg: pool.Config().ConnConfig.Copy(), log: log, held: map[string]uint64{}, settle: Settle}
}

// connLocked returns the lease's connection, connecting (and taking every
// held lease again) when there is none. Called with mu held.
func (l *Lease) connLocked(ctx context.Context) (*pgx.Conn, error) {
	if l.conn != nil && !l.conn.IsClosed() {
		return l.conn, nil
	}
	l.conn = nil
	c, err := pgx.ConnectConfig(ctx, l.cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: the leases' connection: %w", err)
	}
	for id := range l.held {
		if _, err := c.Exec(ctx, `SELECT pg_advisory_lock_shared(hashtext($1))`, leaseKey(id)); err != nil {
			c.Close(context.Background())
			return nil, fmt.Errorf("cluster: taking the lease of run %s again: %w", id, err)
		}
	}
	l.conn, l.since = c, time.Now()
	return c, nil
}

// exec runs a statement on the lease's connection; a failure drops the
// connection (its locks are gone with it; the next use makes another).
func (l *Lease) execLocked(ctx context.Context, sql string, args ...any) error {
	c, err := l.connLocked(ctx)
	if err != nil {
		return err
	}
	if _, err := c.Exec(ctx, sql, args...); err != nil {
		c.Close(context.Background())
		l.conn = nil
		return err
	}
	return nil
}

// Hold takes the lease of the run (shared: others driving it too hold
// theirs). It waits while another process is taking the run up.
func (l *Lease) Hold(ctx context.Context, id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.held[id]; ok {
		l.held[id]++
		return nil
	}
	if err := l.execLocked(ctx, `SELECT pg_advisory_lock_shared(hashtext($1))`, leaseKey(id)); err != nil {
		return fmt.Errorf("cluster: taking the lease of run %s: %w", id, err)
	}
	l.held[id] = 1
	return nil
}

// gen is the run's hold generation, 0 when not held.
func (l *Lease) gen(id string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[id]
}

// letGo lets go of the run's lease if no hold was taken since generation
// gen was read.
func (l *Lease) letGo(ctx context.Context, id string, gen uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if g, ok := l.held[id]; !ok || g != gen {
		return
	}
	delete(l.held, id)
	if l.conn == nil {
		return // the lock went with the connection
	}
	if err := l.execLocked(ctx, `SELECT pg_advisory_unlock_shared(hashtext($1))`, leaseKey(id)); err != nil {
		l.log.Warn("cluster: letting go of a run's lease", "run", id, "err", err)
	}
}

// Holding lists the runs whose lease this process holds.
func (l *Lease) Holding() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.held))
	for id := range l.held {
		out = append(out, id)
	}
	return out
}

// tryTake takes the run's exclusive lock if no process holds its lease;
// the returned function lets go of it.
func (l *Lease) tryTake(ctx context.Context, id string) (func(), bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.held[id]; ok {
		return nil, false, nil // this process drives it
	}
	if time.Since(l.since) < l.settle {
		// Just (re)connected: the others' connections may be taking
		// their leases again.
		return nil, false, nil
	}
	c, err := l.connLocked(ctx)
	if err != nil {
		return nil, false, err
	}
	var got bool
	if err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtext($1))`, leaseKey(id)).Scan(&got); err != nil {
		c.Close(context.Background())
		l.conn = nil
		return nil, false, err
	}
	if !got {
		return nil, false, nil
	}
	conn := c
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.conn == conn {
			_, _ = conn.Exec(context.Background(), `SELECT pg_advisory_unlock(hashtext($1))`, leaseKey(id))
		}
	}, true, nil
}

// ping checks the connection (making it again, with its leases, after the
// database came back).
func (l *Lease) ping(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.execLocked(ctx, `SELECT 1`)
}

// Close closes the connection: every lease of the process is let go.
func (l *Lease) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		l.conn.Close(context.Background())
		l.conn = nil
	}
	l.held = map[string]uint64{}
}

// Settle is how long a process that (re)connected waits before it takes
// runs up: time for the live processes to take their leases again after
// the database restarted.
const Settle = 4 * DriveEvery

// KeepDriving, until ctx ends, lets go of the leases of runs with nothing
// in flight here (d.Busy), and takes up the runs of s executed "here"
// that are working while no process holds their lease: their driver
// died. It looks every `every` (DriveEvery when 0).
func KeepDriving(ctx context.Context, s *Store, l *Lease, d Driver, every time.Duration, log *slog.Logger) {
	if every <= 0 {
		every = DriveEvery
	}
	if log == nil {
		log = slog.Default()
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		driveOnce(ctx, s, l, d, log)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func driveOnce(ctx context.Context, s *Store, l *Lease, d Driver, log *slog.Logger) {
	if err := l.ping(ctx); err != nil {
		if ctx.Err() == nil {
			log.Debug("cluster: the leases' connection", "err", err)
		}
		return
	}
	for _, id := range l.Holding() {
		g := l.gen(id)
		if busy, _, ok := d.Busy(ctx, id); !ok || !busy {
			l.letGo(ctx, id, g)
		}
	}
	ids, err := s.orphanCandidates(ctx)
	if err != nil {
		if ctx.Err() == nil {
			log.Debug("cluster: runs to take up", "err", err)
		}
		return
	}
	for _, id := range ids {
		if err := takeUp(ctx, s, l, d, id, log); err != nil && ctx.Err() == nil {
			log.Warn("cluster: taking up a run whose process died", "run", id, "err", err)
		}
	}
}

// takeUp takes up run id if no process holds its lease and it is still
// working: its exclusive lock held, the run replayed and its work in
// flight asked for again here (Driver.TakeUp), this process's lease
// taken, then the exclusive lock let go.
func takeUp(ctx context.Context, s *Store, l *Lease, d Driver, id string, log *slog.Logger) error {
	unlock, got, err := l.tryTake(ctx, id)
	if err != nil || !got {
		return err
	}
	defer unlock()
	// Read again under the lock: a live driver holds the lease from
	// before the append that set the status.
	var status, execute string
	if err := s.pool.QueryRow(ctx, `SELECT status, execute FROM apserver_runs WHERE id = $1`, id).Scan(&status, &execute); err != nil {
		return err
	}
	if !active(status) || execute != ExecuteHere {
		return nil
	}
	if err := l.Hold(ctx, id); err != nil {
		return err
	}
	log.Info("cluster: taking up a run whose process died", "run", id, "status", status)
	if _, err := d.TakeUp(id).Do(ctx); err != nil {
		return errors.Join(fmt.Errorf("run %s", id), err)
	}
	return nil
}

// ExecuteHere is apserver_runs.execute of a run started by a process that
// does its work itself ([cluster] execute = "here").
const ExecuteHere = "here"

// orphanCandidates are the runs executed here that are working, as their
// listing rows say.
func (s *Store) orphanCandidates(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM apserver_runs WHERE execute = $1 AND status = ANY($2) ORDER BY created_at`,
		ExecuteHere, activeStatuses)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
