package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/apserver/apserver/internal/pgtest"
	"github.com/apserver/apserver/runner"
	"github.com/apserver/apserver/store"
)

// open starts a PostgreSQL server for the test and migrates it.
func open(t *testing.T) (*pgtest.Server, *pgxpool.Pool, *Store) {
	t.Helper()
	srv := pgtest.Start(t)
	ctx := context.Background()
	pool, err := Connect(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	res, err := Migrate(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Ours) != len(migrations) || len(res.River) == 0 {
		t.Fatalf("Migrate on an empty database = %+v, want all of ours and River's", res)
	}
	s, err := NewStore(pool)
	if err != nil {
		t.Fatal(err)
	}
	return srv, pool, s
}

func jobs(t *testing.T, pool *pgxpool.Pool) []WorkArgs {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT args::text FROM river_job WHERE queue = $1 ORDER BY id`, QueueName)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []WorkArgs
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			t.Fatal(err)
		}
		var a WorkArgs
		if err := json.Unmarshal([]byte(text), &a); err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

// The PostgreSQL run store: migrations run twice are applied once; events
// are numbered per run and read back in order; an append commits its work
// on River with it, and an append whose work cannot be enqueued stores
// nothing (no event without its job); every append is announced; status
// counts what is there.
func TestStore(t *testing.T) {
	_, pool, s := open(t)
	ctx := context.Background()
	if res, err := Migrate(ctx, pool); err != nil || len(res.Ours)+len(res.River) != 0 {
		t.Fatalf("Migrate again = %+v, %v; want nothing applied", res, err)
	}

	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		t.Fatal(err)
	}

	row := func(id, status string) store.RunRow {
		return store.RunRow{ID: id, Cwd: "/repo", Status: status, Run: json.RawMessage(`{"id":"` + id + `","status":"` + status + `"}`)}
	}
	task := runner.Work{RunID: "r1", Kind: "task", TaskID: "t1", Effect: json.RawMessage(`{"Task":{"id":"t1"}}`)}
	if seq, err := s.AppendRunEvent(ctx, row("r1", "running"), "started", json.RawMessage(`{"type":"started"}`), 1000, nil); err != nil || seq != 1 {
		t.Fatalf("first append = %d, %v; want 1", seq, err)
	}
	if seq, err := s.AppendRunEvent(ctx, row("r1", "running"), "planApproved", json.RawMessage(`{"type":"planApproved"}`), 2000, []runner.Work{task}); err != nil || seq != 2 {
		t.Fatalf("second append = %d, %v; want 2", seq, err)
	}
	if seq, err := s.AppendRunEvent(ctx, row("r2", "waiting"), "started", json.RawMessage(`{"type":"started"}`), 3000, nil); err != nil || seq != 1 {
		t.Fatalf("another run's first append = %d, %v; want 1", seq, err)
	}
	for _, want := range []string{"r1:1", "r1:2", "r2:1"} {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil || n.Payload != want {
			t.Fatalf("notification = %v, %v; want %s", n, err, want)
		}
		if id, seq, ok := ParseNotice(n.Payload); !ok || id+":"+string(rune('0'+seq)) != want {
			t.Errorf("ParseNotice(%q) = %s, %d, %v", n.Payload, id, seq, ok)
		}
	}
	// An append that expects the log where another process moved it on
	// stores nothing.
	if _, err := s.AppendRunEventAfter(ctx, 1, row("r1", "paused"), "paused", json.RawMessage(`{"type":"paused"}`), 2500, []runner.Work{task}); !errors.Is(err, runner.ErrLogMoved) {
		t.Fatalf("append after 1 where the log ends at 2: %v, want ErrLogMoved", err)
	}
	js := jobs(t, pool)
	if len(js) != 1 || js[0].Work.RunID != "r1" || js[0].Work.Kind != "task" || js[0].Work.TaskID != "t1" || js[0].Seq != 2 {
		t.Fatalf("jobs after the appends = %+v; want one task job of r1 at seq 2", js)
	}

	// Work that River refuses (its args do not encode): the event is not
	// stored either.
	bad := runner.Work{RunID: "r1", Kind: "task", TaskID: "t2", Effect: json.RawMessage(`{not json`)}
	if _, err := s.AppendRunEvent(ctx, row("r1", "failed"), "taskImplemented", json.RawMessage(`{"type":"taskImplemented"}`), 4000, []runner.Work{bad}); err == nil {
		t.Fatal("an append whose work cannot be enqueued succeeded")
	}
	evs, err := s.RunEvents(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if after, err := s.RunEventsAfter(ctx, "r1", 1); err != nil || len(after) != 1 || after[0].Seq != 2 {
		t.Errorf("events of r1 after 1 = %+v, %v; want the second", after, err)
	}
	if len(evs) != 2 || evs[0].Type != "started" || evs[1].Type != "planApproved" || evs[1].At != 2000 ||
		!strings.Contains(string(evs[1].Event), "planApproved") {
		t.Fatalf("events of r1 = %+v; want started, planApproved (the refused append left nothing)", evs)
	}
	rows, err := s.RunRows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].ID != "r2" || rows[1].ID != "r1" || rows[1].Status != "running" || rows[1].CreatedAt != 1000 || rows[1].UpdatedAt != 2000 {
		t.Fatalf("rows = %+v; want r2, then r1 still running (created 1000, updated 2000)", rows)
	}
	if len(jobs(t, pool)) != 1 {
		t.Fatalf("jobs after the refused append = %+v", jobs(t, pool))
	}
	// An append whose transaction fails at commit, after its work was
	// enqueued (a deferred trigger refuses events of type "boom"): the
	// job goes with the event (no job without its event).
	if _, err := pool.Exec(ctx, `CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.type = 'boom' THEN RAISE EXCEPTION 'boom at commit'; END IF; RETURN NULL; END $$;
		CREATE CONSTRAINT TRIGGER boom AFTER INSERT ON apserver_run_events DEFERRABLE INITIALLY DEFERRED
		FOR EACH ROW EXECUTE FUNCTION boom()`); err != nil {
		t.Fatal(err)
	}
	boom := runner.Work{RunID: "r1", Kind: "task", TaskID: "t3", Effect: json.RawMessage(`{}`)}
	if _, err := s.AppendRunEvent(ctx, row("r1", "running"), "boom", json.RawMessage(`{"type":"boom"}`), 5000, []runner.Work{boom}); err == nil ||
		!strings.Contains(err.Error(), "boom at commit") {
		t.Fatalf("an append refused at commit: %v", err)
	}
	if js := jobs(t, pool); len(js) != 1 {
		t.Fatalf("jobs after an append refused at commit = %+v; want only the first", js)
	}
	if _, err := s.RunEvents(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("events of an unknown run: %v, want ErrNotFound", err)
	}

	if err := Heartbeat(ctx, pool, "w1", 2); err != nil {
		t.Fatal(err)
	}
	st, err := ReadStatus(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Workers) != 1 || st.Workers[0].ID != "w1" || st.Workers[0].Concurrency != 2 || st.Queued != 1 || st.Running != 0 ||
		st.OldestWaiting <= 0 || st.Runs["running"] != 1 || st.Runs["waiting"] != 1 {
		t.Fatalf("status = %+v", st)
	}
	var b strings.Builder
	st.Write(&b)
	for _, want := range []string{"workers alive: 1", "w1 on ", "jobs: 1 queued, 0 running, 0 retrying", "runs: 1 running 1 waiting"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status text lacks %q:\n%s", want, b.String())
		}
	}
}
