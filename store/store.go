package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/mattn/go-sqlite3"
)

// FileName is the name of the database file inside the data directory.
const FileName = "apserver.db"

// Errors returned (wrapped) by the store.
var (
	// ErrNotFound is wrapped when a thread, turn or state key is missing.
	ErrNotFound = errors.New("not found")
	// ErrDuplicate is wrapped when an id that must be unique already exists
	// (a thread id, or an item id within its thread).
	ErrDuplicate = errors.New("already exists")
	// ErrBadCursor is wrapped when ListThreads gets a malformed cursor.
	ErrBadCursor = errors.New("bad cursor")
)

// Turn statuses.
const (
	StatusInProgress  = "inProgress"
	StatusCompleted   = "completed"
	StatusInterrupted = "interrupted"
	StatusFailed      = "failed"
)

// Event kinds appended by the store itself.
const (
	EventThreadCreated      = "thread.created"
	EventThreadUpdated      = "thread.updated"
	EventThreadForked       = "thread.forked"
	EventTurnStarted        = "turn.started"
	EventTurnCompleted      = "turn.completed"
	EventTurnInterrupted    = "turn.interrupted_by_restart"
	EventItemCompleted      = "item.completed"
	EventTurnsDropped       = "turns.dropped"
	defaultBusyTimeoutMilli = 5000
)

// Options tune how the database file is opened.
type Options struct {
	// Synchronous is "NORMAL" (default: a commit survives a process
	// crash/kill -9, not a power cut) or "FULL" (fsync on every commit).
	Synchronous string
}

// TurnRef names one turn of one thread.
type TurnRef struct {
	ThreadID, TurnID string
}

// Store is an open database file. It is safe for concurrent use.
type Store struct {
	path string
	w    *sql.DB // the single writer connection
	r    *sql.DB // reader pool

	wmu sync.Mutex // serialises write transactions

	// Prepared statements on w (hot write path). The seq subqueries must stay
	// scalar "(SELECT MAX(seq) ... WHERE thread_id = ?)" so SQLite answers them
	// with one index seek (min/max optimisation), not a scan of the thread.
	// WHERE terms compare against "+?N", not "?N": SQLite marks a statement
	// whose WHERE has "col = ?N" for re-preparation when that parameter is
	// rebound, and go-sqlite3 clears bindings after every run, so a plain
	// "?N" would re-compile the statement on every execution (about half the
	// cost of an append). The unary plus keeps the index usable.
	insEvent  *sql.Stmt
	insItem   *sql.Stmt
	insTurn   *sql.Stmt
	bumpThrd  *sql.Stmt
	finTurn   *sql.Stmt
	closeOnce sync.Once
	closeErr  error

	recovered []TurnRef
	now       func() time.Time

	// afterCommit holds what the running write transaction asked to do
	// once it is committed (removing side files), run under wmu.
	afterCommit []func()

	// Background WAL checkpointing (see checkpointLoop).
	ck      *sql.DB
	commits atomic.Int64 // write transactions committed so far
	ckKick  chan struct{}
	ckStop  chan struct{}
	ckDone  chan struct{}
}

// WAL checkpointing: the checkpointer runs every checkpointInterval when
// something was committed, or early after checkpointEvery commits; see
// checkpointLoop for walRestartFrames.
const (
	checkpointEvery    = 256
	checkpointInterval = time.Second
	walRestartFrames   = 2048     // 8 MiB of 4 KiB pages
	walSizeLimit       = 64 << 20 // the WAL file is truncated to this after a rewind
)

//go:embed migrations/*.sql
var migrationFS embed.FS

const driverName = "apserver-sqlite3"

func init() {
	sql.Register(driverName, &sqlite3.SQLiteDriver{
		ConnectHook: func(c *sqlite3.SQLiteConn) error {
			// Checkpoints run in the background (checkpointLoop), never
			// inside a commit: an automatic checkpoint fsyncs and would
			// add milliseconds to an unlucky write.
			if _, err := c.Exec("PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = "+
				strconv.Itoa(walSizeLimit), nil); err != nil {
				return err
			}
			// Unicode-aware case-insensitive substring match (SQLite's
			// lower() and LIKE only fold ASCII).
			return c.RegisterFunc("apserver_contains_fold", containsFold, true)
		},
	})
}

func containsFold(haystack, needle string) bool {
	return strings.Contains(strings.ToLower(haystack), strings.ToLower(needle))
}

// DefaultDir returns the default data directory: $XDG_DATA_HOME/apserver, or
// ~/.local/share/apserver when XDG_DATA_HOME is unset or not absolute.
func DefaultDir() (string, error) {
	if x := os.Getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "apserver"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("store: data dir: %w", err)
	}
	return filepath.Join(home, ".local", "share", "apserver"), nil
}

// Open opens (creating if needed) the database file at path, applies pending
// migrations and performs crash recovery: every turn still "inProgress"
// becomes "interrupted" and gets a "turn.interrupted_by_restart" event. The
// recovered turns are reported by Recovered.
//
// Open assumes this process is the only writer of the file; opening a second
// Store on a file another live Store is writing to would interrupt that
// Store's running turns.
func Open(path string, opts Options) (*Store, error) {
	syncMode := strings.ToUpper(strings.TrimSpace(opts.Synchronous))
	switch syncMode {
	case "":
		syncMode = "NORMAL"
	case "NORMAL", "FULL":
	default:
		return nil, fmt.Errorf("store: synchronous must be NORMAL or FULL, got %q", opts.Synchronous)
	}
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("store: need a file path, got %q", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("store: create data dir: %w", err)
	}
	// Create the file ourselves so it (and SQLite's -wal/-shm files, which
	// copy its mode) is private to the user.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	f.Close()

	uri := "file:" + escapeURIPath(filepath.ToSlash(abs))
	common := "_busy_timeout=" + strconv.Itoa(defaultBusyTimeoutMilli) + "&_stmt_cache_size=32"
	wdsn := uri + "?" + common + "&_journal_mode=WAL&_synchronous=" + syncMode + "&_foreign_keys=1&_txlock=immediate"
	rdsn := uri + "?" + common + "&_foreign_keys=1&_query_only=1"
	ckdsn := uri + "?" + common + "&_synchronous=" + syncMode

	s := &Store{path: abs, now: time.Now}
	fail := func(err error) (*Store, error) {
		s.closeAll()
		return nil, err
	}
	if s.w, err = sql.Open(driverName, wdsn); err != nil {
		return fail(fmt.Errorf("store: open: %w", err))
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)

	ctx := context.Background()
	var mode string
	if err := s.w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fail(fmt.Errorf("store: open %s: %w", abs, err))
	}
	if !strings.EqualFold(mode, "wal") {
		return fail(fmt.Errorf("store: open %s: journal_mode is %q, want wal", abs, mode))
	}
	if err := s.migrate(ctx); err != nil {
		return fail(err)
	}

	if s.r, err = sql.Open(driverName, rdsn); err != nil {
		return fail(fmt.Errorf("store: open: %w", err))
	}
	n := max(4, runtime.GOMAXPROCS(0))
	s.r.SetMaxOpenConns(n)
	s.r.SetMaxIdleConns(n)

	if err := s.prepare(ctx); err != nil {
		return fail(err)
	}
	if err := s.recover(ctx); err != nil {
		return fail(err)
	}
	if err := s.sweepSideFiles(ctx); err != nil {
		return fail(err)
	}
	if s.ck, err = sql.Open(driverName, ckdsn); err != nil {
		return fail(fmt.Errorf("store: open: %w", err))
	}
	s.ck.SetMaxOpenConns(1)
	s.ck.SetMaxIdleConns(1)
	s.ckKick = make(chan struct{}, 1)
	s.ckStop = make(chan struct{})
	s.ckDone = make(chan struct{})
	go s.checkpointLoop()
	return s, nil
}

// escapeURIPath escapes the characters that are special in an SQLite URI
// filename.
func escapeURIPath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '%', '?', '#':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Close closes the database. Further calls return the first result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.ckStop != nil {
			close(s.ckStop)
			<-s.ckDone
		}
		s.wmu.Lock()
		defer s.wmu.Unlock()
		s.closeErr = s.closeAll()
	})
	return s.closeErr
}

func (s *Store) closeAll() error {
	var errs []error
	for _, st := range []*sql.Stmt{s.insEvent, s.insItem, s.insTurn, s.bumpThrd, s.finTurn} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	if s.ck != nil {
		errs = append(errs, s.ck.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	return errors.Join(errs...)
}

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Recovered returns the turns that Open found "inProgress" and marked
// "interrupted".
func (s *Store) Recovered() []TurnRef {
	return append([]TurnRef(nil), s.recovered...)
}

type migration struct {
	version int
	name    string
}

func (s *Store) migrate(ctx context.Context) error {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return fmt.Errorf("store: migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 || !strings.HasSuffix(e.Name(), ".sql") {
			return fmt.Errorf("store: bad migration file name %q", e.Name())
		}
		ms = append(ms, migration{v, e.Name()})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return fmt.Errorf("store: migrations not numbered 1..n at %q", m.name)
		}
	}

	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.w.BeginTx(ctx, nil) // BEGIN IMMEDIATE: read the version under the write lock
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	defer tx.Rollback()
	var cur int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&cur); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	if cur > len(ms) {
		return fmt.Errorf("store: database schema version %d is newer than this build supports (%d)", cur, len(ms))
	}
	if cur == len(ms) {
		return nil
	}
	for _, m := range ms[cur:] {
		body, err := migrationFS.ReadFile("migrations/" + m.name)
		if err != nil {
			return fmt.Errorf("store: migration %s: %w", m.name, err)
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			return fmt.Errorf("store: migration %s: %w", m.name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(len(ms))); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	return nil
}

// SchemaVersion reports the schema version (PRAGMA user_version) of the file.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.r.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}

func (s *Store) prepare(ctx context.Context) error {
	var err error
	p := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = s.w.PrepareContext(ctx, q)
		return st
	}
	s.insEvent = p(`INSERT INTO events (thread_id, seq, kind, turn_id, item_id, payload, at)
		VALUES (?1, COALESCE((SELECT MAX(seq) FROM events WHERE thread_id = +?1), 0) + 1, ?2, ?3, ?4, ?5, ?6)
		RETURNING seq`)
	s.insItem = p(insItemSQL)
	s.insTurn = p(`INSERT INTO turns (thread_id, id, seq, status, error, started_at, completed_at, duration_ms)
		VALUES (?1, ?2, COALESCE((SELECT MAX(seq) FROM turns WHERE thread_id = +?1), 0) + 1, ?3, ?4, ?5, 0, 0)
		RETURNING seq`)
	s.bumpThrd = p(`UPDATE threads SET updated_at = MAX(updated_at, ?2) WHERE id = +?1`)
	s.finTurn = p(`UPDATE turns SET status = ?3, error = ?4, completed_at = ?5, duration_ms = ?6
		WHERE thread_id = +?1 AND id = +?2`)
	if err != nil {
		return fmt.Errorf("store: prepare: %w", err)
	}
	return nil
}

// write runs fn in one write transaction (BEGIN IMMEDIATE) under the writer
// mutex and commits it.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.afterCommit = s.afterCommit[:0]
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	for _, f := range s.afterCommit {
		f()
	}
	if s.commits.Add(1)%checkpointEvery == 0 && s.ckKick != nil {
		select {
		case s.ckKick <- struct{}{}:
		default:
		}
	}
	return nil
}

// checkpointLoop copies committed WAL frames back into the database file
// off the write path. It runs every checkpointInterval when something was
// committed, and early after checkpointEvery commits.
//
// A PASSIVE checkpoint never blocks the writer or readers, but under a
// steady stream of writes it never quite catches up, and SQLite only
// restarts the WAL from its beginning once it is fully checkpointed. So when
// the WAL has grown past walRestartFrames, a second pass runs while holding
// the writer mutex: it has only the frames written during the first pass to
// copy, and the next write transaction then rewinds the WAL.
//
// Errors are ignored: a checkpoint is retried next time, and durability
// never depends on it.
func (s *Store) checkpointLoop() {
	defer close(s.ckDone)
	t := time.NewTicker(checkpointInterval)
	defer t.Stop()
	var done int64
	for {
		select {
		case <-s.ckStop:
			return
		case <-s.ckKick:
		case <-t.C:
		}
		if n := s.commits.Load(); n != done && s.checkpointOnce() {
			done = n
		}
	}
}

// checkpointOnce runs one round of checkpointLoop and reports whether the
// WAL is fully copied.
func (s *Store) checkpointOnce() bool {
	logFrames, ok := s.checkpoint()
	if ok && logFrames >= walRestartFrames {
		s.wmu.Lock()
		defer s.wmu.Unlock()
		_, ok = s.checkpoint()
	}
	return ok
}

// checkpoint runs one PASSIVE checkpoint and reports the WAL size in frames
// and whether every frame has been copied.
func (s *Store) checkpoint() (logFrames int, complete bool) {
	var busy, ckFrames int
	err := s.ck.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logFrames, &ckFrames)
	return logFrames, err == nil && busy == 0 && ckFrames == logFrames
}

// appendEvent appends one event row inside tx and returns its seq.
func (s *Store) appendEvent(ctx context.Context, tx *sql.Tx, threadID, kind, turnID, itemID string, payload []byte, at int64) (int64, error) {
	var seq int64
	err := tx.StmtContext(ctx, s.insEvent).QueryRowContext(ctx, threadID, kind, turnID, itemID, nullJSON(payload), at).Scan(&seq)
	if err != nil {
		return 0, classify(err)
	}
	return seq, nil
}

func (s *Store) recover(ctx context.Context) error {
	now := s.now().UnixMilli()
	var refs []TurnRef
	err := s.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT thread_id, id, started_at FROM turns
			WHERE status = 'inProgress' ORDER BY thread_id, seq`)
		if err != nil {
			return err
		}
		type rec struct {
			ref     TurnRef
			started int64
		}
		var recs []rec
		for rows.Next() {
			var r rec
			if err := rows.Scan(&r.ref.ThreadID, &r.ref.TurnID, &r.started); err != nil {
				rows.Close()
				return err
			}
			recs = append(recs, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		payload := []byte(`{"status":"interrupted"}`)
		for _, r := range recs {
			dur := max(now-r.started, 0)
			if _, err := tx.StmtContext(ctx, s.finTurn).ExecContext(ctx, r.ref.ThreadID, r.ref.TurnID,
				StatusInterrupted, nil, now, dur); err != nil {
				return err
			}
			if _, err := s.appendEvent(ctx, tx, r.ref.ThreadID, EventTurnInterrupted, r.ref.TurnID, "", payload, now); err != nil {
				return err
			}
			refs = append(refs, r.ref)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: crash recovery: %w", err)
	}
	s.recovered = refs
	return nil
}

// classify maps SQLite constraint errors onto the package's sentinels.
func classify(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.ExtendedCode {
		case sqlite3.ErrConstraintForeignKey:
			return fmt.Errorf("%w: %w", ErrNotFound, err)
		case sqlite3.ErrConstraintUnique, sqlite3.ErrConstraintPrimaryKey:
			return fmt.Errorf("%w: %w", ErrDuplicate, err)
		}
	}
	return err
}

// nullJSON turns an empty JSON value into SQL NULL and anything else into
// TEXT.
func nullJSON(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return textArg(b)
}

// textArg is b as a TEXT argument, without a copy: the driver copies the
// bytes into SQLite before the statement returns, and b is not changed
// meanwhile (every caller passes bytes it no longer writes). An item of
// 64 MiB is one copy fewer at its most expensive moment.
func textArg(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// checkJSON validates an optional JSON value.
func checkJSON(what string, b []byte) error {
	if len(b) > 0 && !jsonValid(b) {
		return fmt.Errorf("store: %s is not valid JSON", what)
	}
	return nil
}

// rawOrNil converts a scanned TEXT/NULL column into a json.RawMessage.
func rawOrNil(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
