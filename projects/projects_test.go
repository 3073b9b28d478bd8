package projects

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apserver/apserver/internal/clock"
	"github.com/apserver/apserver/manager"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// fakeProject is a blueprint's phase and a runner, in memory: the
// driver's two ports (the product's runner and blueprints service are
// exercised end to end in e2e).
type fakeProject struct {
	mu      sync.Mutex
	deps    map[string][]string
	order   []string
	done    map[string]bool
	runs    []protocol.Run
	starts  int
	inPhase func() // called in PhaseWork, before the state is read
}

func newFake(deps map[string][]string, order []string) *fakeProject {
	return &fakeProject{deps: deps, order: order, done: map[string]bool{}}
}

func (f *fakeProject) PhaseWork(ctx context.Context, bp, phase string) (manager.PhaseWork, error) {
	if f.inPhase != nil {
		f.inPhase()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	w := manager.PhaseWork{Phase: "p1", Counts: map[protocol.NodeStatus]int{}}
	for _, id := range f.order {
		if f.done[id] {
			w.Counts[protocol.NodeDone]++
			continue
		}
		w.Counts[protocol.NodePlanned]++
		ok := true
		for _, d := range f.deps[id] {
			ok = ok && f.done[d]
		}
		if ok {
			w.Ready = append(w.Ready, id)
		}
	}
	return w, nil
}

func (f *fakeProject) Start(ctx context.Context, p protocol.RunStartParams) (protocol.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts++
	r := protocol.Run{ID: fmt.Sprintf("r%d", f.starts), Status: protocol.RunRunning, Cwd: p.Cwd,
		Blueprint: &protocol.RunBlueprint{BlueprintID: p.Blueprint.BlueprintID, TaskIDs: p.Blueprint.TaskIDs}}
	f.runs = append(f.runs, r)
	return r, nil
}

func (f *fakeProject) List(ctx context.Context, cwd string) ([]protocol.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.runs), nil
}

func (f *fakeProject) ApprovePlan(ctx context.Context, id string) error { return nil }

// finish completes the oldest running run: its tasks are done.
func (f *fakeProject) finish() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.runs {
		if f.runs[i].Status == protocol.RunRunning {
			f.runs[i].Status = protocol.RunCompleted
			for _, id := range f.runs[i].Blueprint.TaskIDs {
				f.done[id] = true
			}
			return true
		}
	}
	return false
}

func (f *fakeProject) active() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.runs {
		if r.Status == protocol.RunRunning {
			n++
		}
	}
	return n
}

func newService(t *testing.T, f *fakeProject, now func() time.Time) (*Service, *store.Store) {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := New(Options{Store: func() (*store.Store, error) { return db, nil }, Runs: f, Blueprints: f, Clock: clock.Func(now)})
	return s, db
}

func fullAuto(max int) func(*manager.Settings) {
	return func(st *manager.Settings) {
		st.Mode, st.BlueprintID, st.MaxParallelRuns = manager.ModeFullAuto, "bp", max
	}
}

// TestTwoTicksRacingStartOneRun: two ticks at once, one slot, two ready
// tasks: the second tick waits for the first and sees its run, so one run
// starts. The first tick holds until the second is blocked (or, without
// the workspace's lock, has done its whole tick on the same state).
func TestTwoTicksRacingStartOneRun(t *testing.T) {
	f := newFake(map[string][]string{}, []string{"a", "b"})
	s, _ := newService(t, f, time.Now)
	ctx := context.Background()
	ws := t.TempDir()
	if _, err := s.UpdateSettings(ctx, ws, fullAuto(1)); err != nil {
		t.Fatal(err)
	}
	// The first tick, once it reads the phase, lets the second start and
	// holds until the second waits for the lock or reads the phase too.
	waiting, entered := make(chan struct{}), make(chan struct{})
	s.mu.Lock()
	s.onWait = func() { close(waiting) }
	s.mu.Unlock()
	var wg sync.WaitGroup
	results := make([]manager.Result, 2)
	tick := func(i int) {
		defer wg.Done()
		d, err := s.Tick(ctx, ws)
		if err != nil {
			t.Errorf("Tick: %v", err)
		}
		results[i] = d.Result
	}
	calls := 0
	f.inPhase = func() {
		calls++ // under the lock, or racing without it: -race tells
		if calls == 1 {
			wg.Add(1)
			go tick(1)
			select {
			case <-waiting:
			case <-entered:
			}
		} else if calls == 2 {
			close(entered)
		}
	}
	wg.Add(1)
	tick(0)
	wg.Wait()
	if f.starts != 1 {
		t.Errorf("two racing ticks started %d runs (%v), want 1", f.starts, results)
	}
}

// TestTicksBuildADiamond: ticks (and runs finishing between them) build
// a diamond a → {b, c} → d with max_parallel_runs 2: runs start in
// dependency order, never more than 2 at once, each task once; the phase
// is marked done; every tick is stored and replays to the same decision.
func TestTicksBuildADiamond(t *testing.T) {
	deps := map[string][]string{"a": nil, "b": {"a"}, "c": {"a"}, "d": {"b", "c"}}
	f := newFake(deps, []string{"a", "b", "c", "d"})
	s, db := newService(t, f, time.Now)
	ctx := context.Background()
	ws := t.TempDir()
	if _, err := s.UpdateSettings(ctx, ws, fullAuto(2)); err != nil {
		t.Fatal(err)
	}
	var started []string
	for step := 0; step < 40; step++ {
		d, err := s.Tick(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		if d.Result == manager.ResultStartedRun {
			for _, dep := range deps[d.TaskIDs[0]] {
				if !f.done[dep] {
					t.Fatalf("started %s before %s is done", d.TaskIDs[0], dep)
				}
			}
			started = append(started, d.TaskIDs...)
			if d.RunID == "" {
				t.Errorf("started_run without a run id: %+v", d)
			}
			if n := f.active(); n > 2 {
				t.Fatalf("%d runs at once", n)
			}
			continue
		}
		if !f.finish() {
			break
		}
	}
	if want := []string{"a", "b", "c", "d"}; !slices.Equal(started, want) {
		t.Errorf("started %v, want %v", started, want)
	}
	st, err := s.Settings(ctx, ws)
	if err != nil || st.Phase != "p1" || !slices.Equal(st.DonePhases, []string{"p1"}) {
		t.Errorf("settings after the phase = %+v, %v; want phase p1 marked done", st, err)
	}
	n, diffs, err := s.Replay(ctx, ws)
	if err != nil || n == 0 || len(diffs) > 0 {
		t.Errorf("Replay = %d ticks, %v, %v", n, diffs, err)
	}
	ticks, _ := db.ManagerTicks(ctx, ws, 0)
	if len(ticks) != n {
		t.Errorf("%d ticks stored, replayed %d", len(ticks), n)
	}
}

// TestTickModesAndBudget: off is idle and starts nothing; a budget of one
// run a day stops the second with budget_exhausted; the next day it
// starts again.
func TestTickModesAndBudget(t *testing.T) {
	f := newFake(map[string][]string{}, []string{"a", "b"})
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	s, _ := newService(t, f, func() time.Time { return now })
	ctx := context.Background()
	ws := t.TempDir()
	if d, err := s.Tick(ctx, ws); err != nil || d.Result != manager.ResultIdle {
		t.Fatalf("Tick in a new workspace = %+v, %v; want idle", d, err)
	}
	if _, err := s.UpdateSettings(ctx, ws, func(st *manager.Settings) {
		fullAuto(2)(st)
		st.Budget.RunsPerDay = 1
	}); err != nil {
		t.Fatal(err)
	}
	want := []manager.Result{manager.ResultStartedRun, manager.ResultBudgetExhausted}
	for _, w := range want {
		if d, err := s.Tick(ctx, ws); err != nil || d.Result != w {
			t.Fatalf("Tick = %+v, %v; want %s", d, err, w)
		}
	}
	now = now.Add(24 * time.Hour)
	if d, err := s.Tick(ctx, ws); err != nil || d.Result != manager.ResultStartedRun {
		t.Fatalf("Tick the next day = %+v, %v; want started_run", d, err)
	}
	if _, err := s.UpdateSettings(ctx, ws, func(st *manager.Settings) { st.Mode = "fast" }); err == nil {
		t.Error("UpdateSettings with mode fast: no error")
	}
	if f.starts != 2 {
		t.Errorf("%d runs started, want 2", f.starts)
	}
}

// TestTickAfterACrash: a task claimed by a process that died before its
// run started (a claim with no run) is never started again; the next
// ready task is.
func TestTickAfterACrash(t *testing.T) {
	f := newFake(map[string][]string{}, []string{"a", "b"})
	s, db := newService(t, f, time.Now)
	ctx := context.Background()
	ws := t.TempDir()
	if _, err := s.UpdateSettings(ctx, ws, fullAuto(2)); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(ws)
	if err := db.ClaimTask(ctx, store.ManagerClaim{BlueprintID: "bp", TaskID: "a", Cwd: abs}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.Tick(ctx, ws); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.runs) != 1 || !slices.Equal(f.runs[0].Blueprint.TaskIDs, []string{"b"}) {
		t.Errorf("runs after a crash: %+v, want one for b", f.runs)
	}
}
