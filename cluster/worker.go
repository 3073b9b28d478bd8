package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runner"
	"github.com/apserver/apserver/runs"
)

// Driver is what a worker drives runs with (runner.Runner): take a run up
// from its log, see whether it has steps in flight, and drop it when the
// job ends.
type Driver interface {
	TakeUp(id string) runner.Call[protocol.Run]
	Busy(ctx context.Context, id string) (busy bool, status string, ok bool)
	Forget(id string)
}

// WorkerOptions configure a worker.
type WorkerOptions struct {
	// ID names the worker in apserver_workers (cluster status).
	ID string
	// Concurrency is how many jobs it works at once.
	Concurrency int
	// CacheDir holds the clones of projects' remotes (CacheDir/repos) and
	// the runs' worktrees (CacheDir/worktrees).
	CacheDir string
	// JobTimeout bounds one job (a run driven until it waits on a human
	// or ends); RescueAfter is when River hands a job still running to
	// another worker (the job's worker may have died). A job rescued
	// from a worker still alive waits: one driver per run (the run's
	// advisory lock, held by the first worker's connection).
	JobTimeout, RescueAfter time.Duration
	// Heartbeat is how often the worker beats (HeartbeatEvery when 0). A
	// worker that missed three beats is dead: its running jobs are made
	// available again by the live workers at once, without waiting for
	// RescueAfter.
	Heartbeat time.Duration
	Logger    *slog.Logger
}

// Worker claims apserver's jobs from River and drives their runs.
type Worker struct {
	store *Store
	opts  WorkerOptions
	drv   Driver
	log   *slog.Logger

	// repoMu serializes git on each cached clone (by its directory).
	repoMu sync.Mutex
	repos  map[string]*sync.Mutex

	// mu guards remotes: each run's remote, known once a job of it ran
	// here; and working: the jobs this worker is working on.
	mu      sync.Mutex
	remotes map[string]string
	working map[int64]bool
}

// NewWorker makes a worker over the store; drv is set with SetDriver
// before Run (the runner needs the worker's Local and Push).
func NewWorker(s *Store, opts WorkerOptions) *Worker {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 1
	}
	if opts.JobTimeout <= 0 {
		opts.JobTimeout = 2 * time.Hour
	}
	if opts.RescueAfter <= 0 {
		opts.RescueAfter = opts.JobTimeout + 5*time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = HeartbeatEvery
	}
	return &Worker{store: s, opts: opts, log: opts.Logger, repos: map[string]*sync.Mutex{}, remotes: map[string]string{}, working: map[int64]bool{}}
}

// SetDriver sets the runs' driver.
func (w *Worker) SetDriver(d Driver) { w.drv = d }

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:6])
}

// Local maps a run's configuration to the worker's clone and worktree
// (runner.Options.Local).
func (w *Worker) Local(c runs.Config) runs.Config {
	w.mu.Lock()
	remote := w.remotes[c.ID]
	w.mu.Unlock()
	c.Cwd = filepath.Join(w.opts.CacheDir, "repos", hash(remote))
	c.Worktree = filepath.Join(w.opts.CacheDir, "worktrees", c.ID)
	return c
}

// Push publishes the run's branch to the remote, and the base too when
// the run merged into it (runner.Options.Push).
func (w *Worker) Push(ctx context.Context, c runs.Config, merged bool) error {
	if merged {
		return gitRun(ctx, c.Cwd, "push", "-q", "origin", "refs/heads/"+c.BaseBranch, "refs/heads/"+c.Branch)
	}
	return gitRun(ctx, c.Worktree, "push", "-q", "origin", "HEAD:refs/heads/"+c.Branch)
}

// Merging takes the project's merge lock (one merge into a remote's
// base at a time, across the cluster) and fetches the base, so that the
// run merges into what the remote has and its push goes through
// (runner.Options.Merging). The returned function lets go of the lock.
func (w *Worker) Merging(ctx context.Context, c runs.Config) (func(), error) {
	w.mu.Lock()
	remote := w.remotes[c.ID]
	w.mu.Unlock()
	conn, err := w.store.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	key := "apserver-merge:" + remote
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext($1))`, key); err != nil {
		conn.Release()
		return nil, err
	}
	unlock := func() {
		_, _ = conn.Exec(context.Background(), `SELECT pg_advisory_unlock(hashtext($1))`, key)
		conn.Release()
	}
	release := w.repoLock(c.Cwd)
	err = gitRun(ctx, c.Cwd, "fetch", "-q", "origin", "+refs/heads/"+c.BaseBranch+":refs/heads/"+c.BaseBranch)
	release()
	if err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

func gitRun(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (w *Worker) repoLock(dir string) func() {
	w.repoMu.Lock()
	m := w.repos[dir]
	if m == nil {
		m = &sync.Mutex{}
		w.repos[dir] = m
	}
	w.repoMu.Unlock()
	m.Lock()
	return m.Unlock
}

// Run works jobs until ctx ends, beating its heartbeat, then stops
// (jobs in flight are cancelled: River hands them to another worker).
func (w *Worker) Run(ctx context.Context) error {
	if w.drv == nil {
		return errors.New("cluster: a worker without a driver")
	}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &jobWorker{w: w}); err != nil {
		return err
	}
	rc, err := river.NewClient(riverpgxv5.New(w.store.pool), &river.Config{
		ID:                   w.opts.ID, // River records it in each job's attempted_by
		Queues:               map[string]river.QueueConfig{QueueName: {MaxWorkers: w.opts.Concurrency}},
		Workers:              workers,
		JobTimeout:           w.opts.JobTimeout,
		RescueStuckJobsAfter: w.opts.RescueAfter,
		Logger:               w.log,
		FetchPollInterval:    200 * time.Millisecond,
	})
	if err != nil {
		return fmt.Errorf("cluster: River's client: %w", err)
	}
	if err := Heartbeat(ctx, w.store.pool, w.opts.ID, w.opts.Concurrency); err != nil {
		return err
	}
	if err := rc.Start(ctx); err != nil {
		return fmt.Errorf("cluster: starting River's client: %w", err)
	}
	t := time.NewTicker(w.opts.Heartbeat)
	defer t.Stop()
	// beatingSince is when this worker's heartbeats last started to go
	// through: after an outage of the database every worker's last beat
	// is old, and none is dead until it had time to beat again.
	beatingSince := time.Now()
	for {
		select {
		case <-ctx.Done():
			stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = rc.StopAndCancel(stop)
			_, _ = w.store.pool.Exec(stop, `DELETE FROM apserver_workers WHERE id = $1`, w.opts.ID)
			return nil
		case <-t.C:
			if err := Heartbeat(ctx, w.store.pool, w.opts.ID, w.opts.Concurrency); err != nil {
				if ctx.Err() == nil {
					w.log.Warn("worker heartbeat", "err", err)
				}
				beatingSince = time.Time{}
				continue
			}
			if beatingSince.IsZero() {
				beatingSince = time.Now()
			}
			if time.Since(beatingSince) < 3*w.opts.Heartbeat {
				continue
			}
			if n, err := RescueLost(ctx, w.store.pool, w.opts.ID, w.jobs(), 3*w.opts.Heartbeat); err != nil && ctx.Err() == nil {
				w.log.Warn("making this worker's lost jobs available", "err", err)
			} else if n > 0 {
				w.log.Info("made jobs available whose end this worker could not record", "jobs", n)
			}
			if n, err := RescueDead(ctx, w.store.pool, 3*w.opts.Heartbeat); err != nil && ctx.Err() == nil {
				w.log.Warn("rescuing the jobs of dead workers", "err", err)
			} else if n > 0 {
				w.log.Info("rescued the jobs of dead workers", "jobs", n)
			}
			if n, err := GiveUpDead(ctx, w.store.pool, 3*w.opts.Heartbeat); err != nil && ctx.Err() == nil {
				w.log.Warn("giving up the relayed requests of dead workers", "err", err)
			} else if n > 0 {
				w.log.Info("gave up the relayed requests of dead workers", "requests", n)
			}
		}
	}
}

// RescueDead makes the running jobs of workers whose last heartbeat is
// older than deadAfter available again (River's own rescuer does the same
// for any job running longer than RescueAfter, once every 30 s). The
// run's advisory lock died with the worker's connection, so the next
// worker to claim the job drives the run. It returns how many it made
// available.
func RescueDead(ctx context.Context, pool *pgxpool.Pool, deadAfter time.Duration) (int64, error) {
	tag, err := pool.Exec(ctx, `UPDATE river_job SET state = 'available', scheduled_at = now()
		WHERE queue = $1 AND state = 'running'
		AND attempted_by[array_length(attempted_by, 1)] IN (
			SELECT id FROM apserver_workers WHERE heartbeat_at < now() - make_interval(secs => $2))`,
		QueueName, deadAfter.Seconds())
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// jobs are the ids of the jobs this worker is working on.
func (w *Worker) jobs() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]int64, 0, len(w.working))
	for id := range w.working {
		out = append(out, id)
	}
	return out
}

// RescueLost makes available again the jobs that River has as running
// on worker id but that it is not working on (working): their end could
// not be recorded (the database was down when the job returned, and
// River's completer gave up), so no one would ever run them again. A job
// claimed less than minAge ago may still be on its way to the worker's
// Work, and is left alone.
func RescueLost(ctx context.Context, pool *pgxpool.Pool, id string, working []int64, minAge time.Duration) (int64, error) {
	tag, err := pool.Exec(ctx, `UPDATE river_job SET state = 'available', scheduled_at = now()
		WHERE queue = $1 AND state = 'running' AND attempted_by[array_length(attempted_by, 1)] = $2
		AND NOT (id = ANY($3)) AND attempted_at < now() - make_interval(secs => $4)`,
		QueueName, id, working, minAge.Seconds())
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

type jobWorker struct {
	river.WorkerDefaults[WorkArgs]
	w *Worker
}

// Work drives the job's run: one driver per run at a time (an advisory
// lock; a job of a run driven elsewhere waits), the project fetched from
// its remote, the run taken up from its log until it waits on a human or
// ends.
func (j *jobWorker) Work(ctx context.Context, job *river.Job[WorkArgs]) error {
	w := j.w
	id := job.Args.Work.RunID
	w.mu.Lock()
	w.working[job.ID] = true
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.working, job.ID)
		w.mu.Unlock()
	}()
	lock := &runLock{pool: w.store.pool, key: "apserver-run:" + id}
	locked, err := lock.try(ctx)
	if err != nil {
		return err
	}
	if !locked {
		return river.JobSnooze(time.Second)
	}
	defer lock.release()
	cfg, ready, err := w.runConfig(ctx, id)
	if err != nil {
		return err
	}
	remote, err := w.store.Remote(ctx, id)
	if err != nil {
		return err
	}
	if remote == "" {
		return river.JobCancel(fmt.Errorf("run %s has no remote: start it in a repository whose origin the workers can reach", id))
	}
	w.mu.Lock()
	w.remotes[id] = remote
	w.mu.Unlock()
	if err := w.prepare(ctx, remote, w.Local(cfg), ready); err != nil {
		return err
	}
	defer w.drv.Forget(id)
	ch := make(chan error, 1)
	w.drv.TakeUp(id).Then(ctx, func(_ protocol.Run, err error) { ch <- err })
	select {
	case err := <-ch:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	w.log.Info("worker: driving run", "run", id, "job", job.ID)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for tick := 1; ; tick++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if tick%5 == 0 {
			held, err := lock.check(ctx)
			if err != nil && ctx.Err() == nil {
				w.log.Warn("worker: the run's lock", "run", id, "err", err)
			}
			if !held {
				// Another worker drives the run now (this one's lock
				// went with its connection): stop here at once.
				return fmt.Errorf("run %s: its lock was lost and is held elsewhere; this worker stops driving it", id)
			}
		}
		busy, _, ok := w.drv.Busy(ctx, id)
		if !ok {
			// The loop left: the run is over, or its driving stopped (an
			// append failed: the database may be down). The log says
			// which; a run left in the middle is retried (River's
			// backoff), taken up from its log again.
			return w.settled(ctx, id)
		}
		if !busy {
			// Nothing in flight here: the run waits on a human, or what
			// comes next was enqueued by whoever answered it (a job of
			// its own, which this one's lock must not hold up). Or a
			// step's result could not be recorded (the database was
			// down): the log says the run works while nothing does. The
			// job then comes back in a second, and takes the run up
			// from its log unless another job drives it.
			if err := w.settled(ctx, id); err != nil {
				w.log.Info("worker: the run works with nothing in flight here; looking again soon", "run", id, "why", err)
				return river.JobSnooze(time.Second)
			}
			return nil
		}
	}
}

// runConfig is the run's configuration (its first event) and whether its
// worktree was made.
func (w *Worker) runConfig(ctx context.Context, id string) (runs.Config, bool, error) {
	evs, err := w.store.RunEvents(ctx, id)
	if err != nil {
		return runs.Config{}, false, err
	}
	var cfg runs.Config
	ready := false
	for i, e := range evs {
		var ev runs.Event
		if err := json.Unmarshal(e.Event, &ev); err != nil {
			return cfg, false, fmt.Errorf("run %s: event %d: %w", id, e.Seq, err)
		}
		if i == 0 && ev.Config != nil {
			cfg = *ev.Config
		}
		if ev.Type == runs.EvWorktreeReady {
			ready = true
		}
	}
	if cfg.ID == "" {
		return cfg, false, river.JobCancel(fmt.Errorf("run %s: its log does not start with its configuration", id))
	}
	return cfg, ready, nil
}

// prepare brings the clone of the remote up to date with the run's base
// and branch, and makes the run's worktree afresh from what the remote
// has: the commits pushed are what a run resumed on another worker
// builds on.
func (w *Worker) prepare(ctx context.Context, remote string, c runs.Config, ready bool) error {
	defer w.repoLock(c.Cwd)()
	if _, err := os.Stat(filepath.Join(c.Cwd, ".git")); err != nil {
		if err := os.MkdirAll(filepath.Dir(c.Cwd), 0o755); err != nil {
			return err
		}
		if err := gitRun(ctx, "", "clone", "-q", remote, c.Cwd); err != nil {
			return err
		}
		if err := gitRun(ctx, c.Cwd, "checkout", "-q", "--detach"); err != nil {
			return err
		}
	}
	if _, err := os.Stat(c.Worktree); err == nil {
		if err := gitRun(ctx, c.Cwd, "worktree", "remove", "--force", c.Worktree); err != nil {
			_ = os.RemoveAll(c.Worktree)
		}
	}
	_ = gitRun(ctx, c.Cwd, "worktree", "prune")
	if err := gitRun(ctx, c.Cwd, "fetch", "-q", "origin", "+refs/heads/"+c.BaseBranch+":refs/heads/"+c.BaseBranch); err != nil {
		return err
	}
	hasBranch := gitRun(ctx, c.Cwd, "fetch", "-q", "origin", "+refs/heads/"+c.Branch+":refs/heads/"+c.Branch) == nil
	if err := os.MkdirAll(filepath.Dir(c.Worktree), 0o755); err != nil {
		return err
	}
	switch {
	case hasBranch:
		return gitRun(ctx, c.Cwd, "worktree", "add", "-q", c.Worktree, c.Branch)
	case ready:
		return gitRun(ctx, c.Cwd, "worktree", "add", "-q", "-B", c.Branch, c.Worktree, c.BaseBranch)
	}
	return nil // the run's CreateWorktree makes it
}

// settled reads the run from its log: nil when it is over or waits on a
// human, an error (the job is retried) otherwise.
func (w *Worker) settled(ctx context.Context, id string) error {
	evs, err := w.store.RunEvents(ctx, id)
	if err != nil {
		return fmt.Errorf("run %s: reading its log: %w", id, err)
	}
	log := make([]runs.Event, 0, len(evs))
	for _, e := range evs {
		var ev runs.Event
		if err := json.Unmarshal(e.Event, &ev); err != nil {
			return river.JobCancel(fmt.Errorf("run %s: event %d: %w", id, e.Seq, err))
		}
		log = append(log, ev)
	}
	switch st := runs.Replay(log).Run().Status; st {
	case protocol.RunWaiting, protocol.RunPaused, protocol.RunCompleted, protocol.RunFailed, protocol.RunCancelled:
		return nil
	default:
		return fmt.Errorf("run %s stopped being driven while %s; taking it up again", id, st)
	}
}

// runLock is the advisory lock that makes one worker drive a run at a
// time, held on a connection of the job's own. When that connection dies
// (the database restarted) the lock goes with it: check takes it again,
// or reports it lost when another worker got it first.
type runLock struct {
	pool *pgxpool.Pool
	key  string
	conn *pgxpool.Conn // nil while the lock is not held
}

// try takes the lock if it is free.
func (l *runLock) try(ctx context.Context) (bool, error) {
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtext($1))`, l.key).Scan(&got); err != nil {
		conn.Conn().Close(context.Background()) // broken: not back to the pool
		conn.Release()
		return false, err
	}
	if !got {
		conn.Release()
		return false, nil
	}
	l.conn = conn
	return true, nil
}

// check reports whether the lock is still this job's: its connection
// answers, or the lock could be taken again on another. While the
// database cannot be reached it is held (no one else can take it) and
// the error says why.
func (l *runLock) check(ctx context.Context) (bool, error) {
	if l.conn != nil {
		if _, err := l.conn.Exec(ctx, `SELECT 1`); err == nil {
			return true, nil
		}
		l.conn.Conn().Close(context.Background())
		l.conn.Release()
		l.conn = nil
	}
	got, err := l.try(ctx)
	if err != nil {
		return true, fmt.Errorf("taking the lock %s again: %w", l.key, err)
	}
	return got, nil
}

// release lets go of the lock.
func (l *runLock) release() {
	if l.conn == nil {
		return
	}
	_, _ = l.conn.Exec(context.Background(), `SELECT pg_advisory_unlock(hashtext($1))`, l.key)
	l.conn.Release()
	l.conn = nil
}
