package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// AliveWithin is how recent a worker's heartbeat must be for Status to
// count it alive; workers beat every HeartbeatEvery.
const (
	AliveWithin    = 30 * time.Second
	HeartbeatEvery = 5 * time.Second
)

// Status is the cluster as an operator sees it (apserver cluster status).
type Status struct {
	// Workers are those whose heartbeat is recent.
	Workers []WorkerRow `json:"workers"`
	// Jobs counts apserver's jobs by River state: available (queued),
	// running, retryable (waiting to retry after a failure), scheduled.
	Queued    int `json:"queued"`
	Running   int `json:"running"`
	Retrying  int `json:"retrying"`
	Scheduled int `json:"scheduled"`
	// OldestWaiting is how long the oldest queued job has waited (0 when
	// none waits).
	OldestWaiting time.Duration `json:"oldestWaitingNs"`
	// Runs counts runs by status.
	Runs map[string]int `json:"runs"`
}

// WorkerRow is one live worker.
type WorkerRow struct {
	ID          string    `json:"id"`
	Host        string    `json:"host"`
	Concurrency int       `json:"concurrency"`
	StartedAt   time.Time `json:"startedAt"`
	HeartbeatAt time.Time `json:"heartbeatAt"`
}

// ReadStatus reads the cluster's status.
func ReadStatus(ctx context.Context, pool *pgxpool.Pool) (Status, error) {
	st := Status{Runs: map[string]int{}}
	rows, err := pool.Query(ctx, `SELECT id, host, concurrency, started_at, heartbeat_at FROM apserver_workers
		WHERE heartbeat_at > now() - make_interval(secs => $1) ORDER BY started_at, id`, AliveWithin.Seconds())
	if err != nil {
		return st, fmt.Errorf("cluster: status: workers: %w", err)
	}
	st.Workers, err = pgx.CollectRows(rows, pgx.RowToStructByPos[WorkerRow])
	if err != nil {
		return st, fmt.Errorf("cluster: status: workers: %w", err)
	}
	rows, err = pool.Query(ctx, `SELECT state::text, COUNT(*) FROM river_job WHERE queue = $1 GROUP BY state`, QueueName)
	if err != nil {
		return st, fmt.Errorf("cluster: status: jobs: %w", err)
	}
	var state string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&state, &n}, func() error {
		switch state {
		case "available":
			st.Queued = n
		case "running":
			st.Running = n
		case "retryable":
			st.Retrying = n
		case "scheduled":
			st.Scheduled = n
		}
		return nil
	}); err != nil {
		return st, fmt.Errorf("cluster: status: jobs: %w", err)
	}
	var secs float64
	if err := pool.QueryRow(ctx, `SELECT COALESCE(EXTRACT(EPOCH FROM now() - MIN(scheduled_at)), 0)::float8 FROM river_job
		WHERE queue = $1 AND state = 'available'`, QueueName).Scan(&secs); err != nil {
		return st, fmt.Errorf("cluster: status: oldest job: %w", err)
	}
	if secs > 0 {
		st.OldestWaiting = time.Duration(secs * float64(time.Second))
	}
	rows, err = pool.Query(ctx, `SELECT status, COUNT(*) FROM apserver_runs GROUP BY status`)
	if err != nil {
		return st, fmt.Errorf("cluster: status: runs: %w", err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&state, &n}, func() error {
		st.Runs[state] = n
		return nil
	}); err != nil {
		return st, fmt.Errorf("cluster: status: runs: %w", err)
	}
	return st, nil
}

// Heartbeat records that worker id on host is alive (and registers it).
func Heartbeat(ctx context.Context, pool *pgxpool.Pool, id string, concurrency int) error {
	host, _ := os.Hostname()
	_, err := pool.Exec(ctx, `INSERT INTO apserver_workers (id, host, concurrency) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()`, id, host, concurrency)
	if err != nil {
		return fmt.Errorf("cluster: heartbeat of worker %s: %w", id, err)
	}
	return nil
}

// Write prints the status for a person.
func (st Status) Write(w io.Writer) {
	fmt.Fprintf(w, "workers alive: %d\n", len(st.Workers))
	for _, wk := range st.Workers {
		fmt.Fprintf(w, "  %s on %s (concurrency %d), up since %s, last heartbeat %s\n", wk.ID, wk.Host, wk.Concurrency,
			wk.StartedAt.UTC().Format(time.RFC3339), wk.HeartbeatAt.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(w, "jobs: %d queued, %d running, %d retrying, %d scheduled\n", st.Queued, st.Running, st.Retrying, st.Scheduled)
	if st.OldestWaiting > 0 {
		fmt.Fprintf(w, "oldest waiting: %s\n", st.OldestWaiting.Round(time.Second))
	} else {
		fmt.Fprintln(w, "oldest waiting: none")
	}
	fmt.Fprint(w, "runs:")
	if len(st.Runs) == 0 {
		fmt.Fprint(w, " none")
	}
	names := make([]string, 0, len(st.Runs))
	for s := range st.Runs {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		fmt.Fprintf(w, " %d %s", st.Runs[s], s)
	}
	fmt.Fprintln(w)
}
