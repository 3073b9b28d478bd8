package projects

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/apserver/apserver/manager"
	"github.com/apserver/apserver/store"
)

// tickTimes are the seconds since start of the workspace's stored ticks.
func tickTimes(t *testing.T, db *store.Store, ws string, start time.Time) []int64 {
	t.Helper()
	ticks, err := db.ManagerTicks(context.Background(), ws, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, tk := range ticks {
		out = append(out, (tk.At-start.UnixMilli())/1000)
	}
	return out
}

// TestHeartbeat: on a fake clock, the heartbeat never ticks a project
// whose mode is off; under full_auto it starts the ready tasks one tick a
// second, then backs off while nothing moves (2, 4, 8 s, capped at 8).
func TestHeartbeat(t *testing.T) {
	f := newFake(map[string][]string{"b": {"a"}}, []string{"a", "b"})
	s0, db := newService(t, f, time.Now)
	ws := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{Store: s0.opts.Store, Runs: f, Blueprints: f})
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		if _, err := s.UpdateSettings(ctx, ws, func(st *manager.Settings) { st.BlueprintID = "bp" }); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { s.Heartbeat(ctx, time.Second, 8*time.Second); close(done) }()
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if got := tickTimes(t, db, ws, start); len(got) != 0 {
			t.Errorf("mode off: ticks at %v s, want none", got)
		}
		if _, err := s.UpdateSettings(ctx, ws, fullAuto(2)); err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		time.Sleep(40 * time.Second)
		synctest.Wait()
		cancel()
		<-done
		// While off, the heartbeat looked at 1, 9, 17, 25 s (the cap);
		// its next look, 3 s into full_auto, starts a; then nothing moves
		// (b waits for a): again after 1, 2, 4, 8, 8… s.
		got := tickTimes(t, db, ws, start)
		want := []int64{3, 4, 6, 10, 18, 26, 34}
		if !slices.Equal(got, want) {
			t.Errorf("ticks at %v s, want %v", got, want)
		}
		if f.starts != 1 {
			t.Errorf("%d runs started, want 1", f.starts)
		}
	})
}

// TestHeartbeatWake: a run's change (Wake) makes the heartbeat tick at
// once, not at its interval: with an interval of an hour, finishing a's
// run and waking the heartbeat starts b without the clock moving.
func TestHeartbeatWake(t *testing.T) {
	f := newFake(map[string][]string{"b": {"a"}}, []string{"a", "b"})
	s0, _ := newService(t, f, time.Now)
	ws := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{Store: s0.opts.Store, Runs: f, Blueprints: f})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go s.Heartbeat(ctx, time.Hour, time.Hour)
		if _, err := s.UpdateSettings(ctx, ws, fullAuto(2)); err != nil {
			t.Fatal(err)
		}
		s.Wake(ws)
		synctest.Wait()
		start := time.Now()
		if f.starts != 1 {
			t.Fatalf("%d runs started after a wake, want 1 (a)", f.starts)
		}
		f.finish()
		s.Wake(ws)
		synctest.Wait()
		if f.starts != 2 || time.Since(start) != 0 {
			t.Errorf("after a run's change: %d runs started, %v later; want b started at once", f.starts, time.Since(start))
		}
	})
}

// TestHeartbeatSkipsAPausedProject: on a fake clock, a paused project is
// never ticked; resumed, it is ticked at the configured interval again.
func TestHeartbeatSkipsAPausedProject(t *testing.T) {
	f := newFake(nil, []string{"a", "b"})
	s0, db := newService(t, f, time.Now)
	ws := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{Store: s0.opts.Store, Runs: f, Blueprints: f})
		ctx, cancel := context.WithCancel(context.Background())
		if _, err := s.UpdateSettings(ctx, ws, func(st *manager.Settings) { fullAuto(1)(st); st.Paused = true }); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { s.Heartbeat(ctx, 2*time.Second, 4*time.Second); close(done) }()
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if got := tickTimes(t, db, ws, time.Now()); len(got) != 0 {
			t.Errorf("paused: %d ticks, want none", len(got))
		}
		if _, err := s.UpdateSettings(ctx, ws, func(st *manager.Settings) { st.Paused = false }); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		cancel()
		<-done
		// While paused it looked at 2, 6, 10, 14, 18 s (then every 4 s, the
		// cap) and ticked nothing; resumed at 20 s, its next look (22 s)
		// starts a; at 24 s nothing moves (max_parallel_runs 1), 4 s later
		// again.
		if got := tickTimes(t, db, ws, start); !slices.Equal(got, []int64{2, 4, 8}) {
			t.Errorf("ticks at %v s after the resume, want [2 4 8]", got)
		}
		if f.starts != 1 {
			t.Errorf("%d runs started, want 1", f.starts)
		}
	})
}
