package cluster

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runner"
	"github.com/apserver/apserver/store"
)

// fakeDriver is a runner as KeepDriving sees it: it records the runs it
// is asked to take up, and says which have steps in flight.
type fakeDriver struct {
	mu    sync.Mutex
	taken []string
	busy  map[string]bool
}

func (d *fakeDriver) TakeUp(id string) runner.Call[protocol.Run] {
	return func(_ context.Context, then func(protocol.Run, error)) {
		d.mu.Lock()
		d.taken = append(d.taken, id)
		d.mu.Unlock()
		then(protocol.Run{ID: id}, nil)
	}
}

func (d *fakeDriver) Busy(_ context.Context, id string) (bool, string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, ok := d.busy[id]
	return b, "", ok
}

func (d *fakeDriver) Forget(string) {}

func (d *fakeDriver) takenUp() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.taken)
}

// Runs executed "here" by a process that dies are taken up by another,
// once: a run whose process holds its lease (taken by the append that
// left it working) is left alone; when that process's connection dies
// (kill -9) the run is taken up by the next look, and not again while the
// taker drives it. Runs waiting on a human, and runs executed by
// workers, are never taken up this way.
func TestLeaseTakeUp(t *testing.T) {
	srv, poolB, _ := open(t)
	ctx := context.Background()
	poolA, err := Connect(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(poolA.Close)
	sA, err := NewStore(poolA)
	if err != nil {
		t.Fatal(err)
	}
	leaseA := NewLease(poolA, nil)
	sA.Execute, sA.Lease = ExecuteHere, leaseA
	row := func(id, status string) store.RunRow {
		return store.RunRow{ID: id, Cwd: "/repo", Status: status, Run: json.RawMessage(`{"id":"` + id + `"}`)}
	}
	ev := json.RawMessage(`{"type":"started"}`)
	for id, status := range map[string]string{"r1": "running", "r2": "waiting"} {
		if _, err := sA.AppendRunEvent(ctx, row(id, status), "started", ev, 1000, nil); err != nil {
			t.Fatal(err)
		}
	}
	// A run of workers, working, with no lease: theirs is the job's.
	sW, err := NewStore(poolA)
	if err != nil {
		t.Fatal(err)
	}
	sW.Execute = "workers"
	if _, err := sW.AppendRunEvent(ctx, row("r3", "running"), "started", ev, 1000, nil); err != nil {
		t.Fatal(err)
	}
	if got := leaseA.Holding(); !slices.Equal(got, []string{"r1"}) {
		t.Fatalf("A holds the leases of %v, want r1 (the working run it appended to)", got)
	}

	sB, err := NewStore(poolB)
	if err != nil {
		t.Fatal(err)
	}
	leaseB := NewLease(poolB, nil)
	leaseB.settle = 0
	t.Cleanup(leaseB.Close)
	sB.Execute, sB.Lease = ExecuteHere, leaseB
	dB := &fakeDriver{busy: map[string]bool{}}
	driveOnce(ctx, sB, leaseB, dB, slog.Default())
	if got := dB.takenUp(); len(got) != 0 {
		t.Fatalf("B took up %v while A, alive, holds r1's lease", got)
	}

	// A dies: its connections go, and the server ends their sessions
	// (and their locks) a moment later.
	leaseA.Close()
	poolA.Close()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var n int
		if err := poolB.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d advisory locks still held after A's connections closed", n)
		}
	}
	driveOnce(ctx, sB, leaseB, dB, slog.Default())
	if got := dB.takenUp(); !slices.Equal(got, []string{"r1"}) {
		t.Fatalf("after A died B took up %v, want r1 only", got)
	}
	if got := leaseB.Holding(); !slices.Equal(got, []string{"r1"}) {
		t.Fatalf("B holds %v after taking r1 up", got)
	}
	// B drives r1 now: it is not taken up again, and B keeps its lease.
	dB.mu.Lock()
	dB.busy["r1"] = true
	dB.mu.Unlock()
	driveOnce(ctx, sB, leaseB, dB, slog.Default())
	if got := dB.takenUp(); len(got) != 1 {
		t.Fatalf("B took up %v: r1 twice", got)
	}
	// A third process sees r1 driven by B.
	leaseC := NewLease(poolB, nil)
	leaseC.settle = 0
	t.Cleanup(leaseC.Close)
	dC := &fakeDriver{}
	driveOnce(ctx, sB, leaseC, dC, slog.Default())
	if got := dC.takenUp(); len(got) != 0 {
		t.Fatalf("C took up %v while B drives r1", got)
	}
	// B's steps end, the run waits on a human: B lets go of the lease,
	// and no one takes the run up.
	if _, err := sB.AppendRunEvent(ctx, row("r1", "waiting"), "planReady", ev, 2000, nil); err != nil {
		t.Fatal(err)
	}
	dB.mu.Lock()
	dB.busy["r1"] = false
	dB.mu.Unlock()
	driveOnce(ctx, sB, leaseB, dB, slog.Default())
	if got := leaseB.Holding(); len(got) != 0 {
		t.Fatalf("B still holds %v with nothing in flight", got)
	}
	driveOnce(ctx, sB, leaseC, dC, slog.Default())
	if got := append(dB.takenUp(), dC.takenUp()...); len(got) != 1 {
		t.Fatalf("runs taken up: %v; want r1 once", got)
	}
}

// A job River has as running on a worker that is not working on it (its
// end could not be recorded while the database was down) is made
// available again by that worker; the jobs it works on, jobs of other
// workers and jobs claimed a moment ago are left alone.
func TestRescueLost(t *testing.T) {
	_, pool, s := open(t)
	ctx := context.Background()
	work := func(task string) []runner.Work {
		return []runner.Work{{RunID: "r-" + task, Kind: "task", TaskID: task, Effect: json.RawMessage(`{}`)}}
	}
	row := func(id string) store.RunRow {
		return store.RunRow{ID: id, Cwd: "/repo", Status: "running", Run: json.RawMessage(`{}`)}
	}
	for _, task := range []string{"lost", "working", "other", "young"} {
		if _, err := s.AppendRunEvent(ctx, row("r-"+task), "started", json.RawMessage(`{}`), 1000, work(task)); err != nil {
			t.Fatal(err)
		}
	}
	// River's claim, as its producer makes it.
	claim := func(task, worker, age string) int64 {
		var id int64
		if err := pool.QueryRow(ctx, `UPDATE river_job SET state = 'running', attempted_by = ARRAY[$2::text], attempt = 1,
			attempted_at = now() - $3::interval WHERE args->'work'->>'taskId' = $1 RETURNING id`, task, worker, age).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	lost := claim("lost", "w1", "1 minute")
	working := claim("working", "w1", "1 minute")
	claim("other", "w2", "1 minute")
	claim("young", "w1", "0 seconds")
	n, err := RescueLost(ctx, pool, "w1", []int64{working}, 10*time.Second)
	if err != nil || n != 1 {
		t.Fatalf("RescueLost = %d, %v; want the lost job only", n, err)
	}
	var state string
	if err := pool.QueryRow(ctx, `SELECT state FROM river_job WHERE id = $1`, lost).Scan(&state); err != nil || state != "available" {
		t.Fatalf("the lost job is %q (%v), want available", state, err)
	}
	var running int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'running'`).Scan(&running); err != nil || running != 3 {
		t.Fatalf("%d jobs still running (%v), want 3", running, err)
	}
}
