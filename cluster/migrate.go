package cluster

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// migrations are apserver's own tables, in order; migration i+1 is
// migrations[i]. Applied ones are recorded in apserver_schema. Never edit
// one that shipped: append another.
var migrations = []string{
	// 1: the run event log and its listing rows (as store's SQLite
	// tables runs and run_events), and the workers' heartbeats.
	`CREATE TABLE apserver_runs (
		id text PRIMARY KEY,
		cwd text NOT NULL,
		remote text NOT NULL DEFAULT '',
		status text NOT NULL,
		run json NOT NULL,
		created_at bigint NOT NULL,
		updated_at bigint NOT NULL
	);
	CREATE TABLE apserver_run_events (
		run_id text NOT NULL REFERENCES apserver_runs (id),
		seq bigint NOT NULL,
		type text NOT NULL,
		event json NOT NULL,
		at bigint NOT NULL,
		PRIMARY KEY (run_id, seq)
	);
	CREATE TABLE apserver_workers (
		id text PRIMARY KEY,
		host text NOT NULL,
		concurrency int NOT NULL,
		started_at timestamptz NOT NULL DEFAULT now(),
		heartbeat_at timestamptz NOT NULL DEFAULT now()
	);`,
	// 2: who carries out a run's work: "here" (the process that appends
	// its events, cluster/lease.go) or "workers" ('' before 2).
	`ALTER TABLE apserver_runs ADD COLUMN execute text NOT NULL DEFAULT '';`,
	// 3: server→client requests of workers' threads relayed to the
	// editors (cluster/relay.go): answer is set once, by the first
	// editor; closed when the worker stopped waiting.
	`CREATE TABLE apserver_relay (
		id bigserial PRIMARY KEY,
		run_id text NOT NULL DEFAULT '',
		thread_id text NOT NULL DEFAULT '',
		item_id text NOT NULL DEFAULT '',
		method text NOT NULL,
		params json NOT NULL,
		worker text NOT NULL DEFAULT '',
		created_at bigint NOT NULL,
		answer json,
		answered_by text,
		closed boolean NOT NULL DEFAULT false
	);
	CREATE INDEX apserver_relay_pending ON apserver_relay (id) WHERE answer IS NULL AND NOT closed;`,
	// 4: the tokens each run used (as store's SQLite table run_usage),
	// recorded by whichever process drives the run (cluster/usage.go):
	// one row per model response, id unique per response observed, so
	// that a retried insert counts once.
	`CREATE TABLE apserver_run_usage (
		id text PRIMARY KEY,
		run_id text NOT NULL,
		stage text NOT NULL,
		task_id text NOT NULL DEFAULT '',
		model text NOT NULL DEFAULT '',
		input_tokens bigint NOT NULL DEFAULT 0,
		cached_tokens bigint NOT NULL DEFAULT 0,
		output_tokens bigint NOT NULL DEFAULT 0,
		at bigint NOT NULL
	);
	CREATE INDEX apserver_run_usage_run ON apserver_run_usage (run_id, at);`,
}

// migrateLock is the advisory lock that serializes migrations: workers
// and servers started together may all migrate.
const migrateLock = 0x61707372 // "apsr"

// MigrateResult says what Migrate applied.
type MigrateResult struct {
	// Ours are the versions of apserver's tables applied, River the
	// versions of River's.
	Ours, River []int
}

// Migrate brings the database's schema up to date, apserver's tables (in
// one transaction) and River's, under an advisory lock. Running it again
// does nothing.
func Migrate(ctx context.Context, pool *pgxpool.Pool) (MigrateResult, error) {
	var res MigrateResult
	// River's migrations cannot share one transaction (one adds an enum
	// value that the next uses), so the lock is a session's, held on a
	// connection of its own while both run.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return res, fmt.Errorf("cluster: migrating the database: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrateLock); err != nil {
		return res, fmt.Errorf("cluster: migrating the database: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrateLock)
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS apserver_schema (
			version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		var have int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM apserver_schema`).Scan(&have); err != nil {
			return err
		}
		if have > len(migrations) {
			return fmt.Errorf("the database's schema is version %d, newer than this apserver's (%d): upgrade apserver", have, len(migrations))
		}
		for v := have + 1; v <= len(migrations); v++ {
			if _, err := tx.Exec(ctx, migrations[v-1]); err != nil {
				return fmt.Errorf("migration %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO apserver_schema (version) VALUES ($1)`, v); err != nil {
				return err
			}
			res.Ours = append(res.Ours, v)
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("cluster: migrating the database: %w", err)
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return res, err
	}
	r, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return res, fmt.Errorf("cluster: River's migrations: %w", err)
	}
	for _, v := range r.Versions {
		res.River = append(res.River, v.Version)
	}
	return res, nil
}

// Connect opens a pool on the database URL (a postgres:// URL or a
// key=value string; a password may come from PGPASSWORD or ~/.pgpass, as
// for psql).
func Connect(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("cluster: the database URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: connecting to the database: %w", err)
	}
	return pool, nil
}
