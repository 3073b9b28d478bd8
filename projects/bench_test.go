package projects

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apserver/apserver/blueprints"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/internal/specgen"
	"github.com/apserver/apserver/manager"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// BenchmarkTick10k is a whole tick as apserver does it (docs/benchmarks.md):
// the settings read, the blueprint's phase of 10,000 tasks read from the
// store and ordered (blueprints.Service.PhaseWork, blueprint.Next's page of
// 500), the runs listed (20 of the blueprint, 10 active: the runner is an
// in-memory list here), the claims and today's token usage summed, the
// pure decision, and the tick's receipt stored. The 10 active runs fill
// max_parallel_runs, so every tick decides the same (nothing_to_do) and
// starts nothing. Target: < 10 ms.
func BenchmarkTick10k(b *testing.B) { benchTick10k(b, false) }

// BenchmarkTick10kChanged is BenchmarkTick10k where the blueprint changed
// before every tick (an event appended, as when a run moves a task on):
// the phase is read and ordered again (blueprint.Next) instead of coming
// from the cache; the append is part of the time.
func BenchmarkTick10kChanged(b *testing.B) { benchTick10k(b, true) }

func benchTick10k(b *testing.B, changed bool) {
	ctx := context.Background()
	st, err := store.Open(filepath.Join(b.TempDir(), store.FileName), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	open := func() (*store.Store, error) { return st, nil }
	bpID := "bp_bench"
	if err := specgen.StoreTenThousandTasks(ctx, st, bpID); err != nil {
		b.Fatal(err)
	}
	bs := blueprints.New(blueprints.Options{Store: open, Config: config.Default()})
	b.Cleanup(bs.Close)

	ws := b.TempDir()
	fake := newFake(nil, nil)
	for i := range 20 {
		status := protocol.RunCompleted
		if i%2 == 0 {
			status = protocol.RunRunning
		}
		id, task := fmt.Sprintf("r%d", i), fmt.Sprintf("t%d", 1000+i*10)
		fake.runs = append(fake.runs, protocol.Run{ID: id, Status: status, Cwd: ws, Blueprint: &protocol.RunBlueprint{BlueprintID: bpID, TaskIDs: []string{task}}})
		if err := st.ClaimTask(ctx, store.ManagerClaim{BlueprintID: bpID, TaskID: task, Cwd: ws, RunID: id}); err != nil {
			b.Fatal(err)
		}
		for _, stage := range []string{"planning", "task", "task", "review"} {
			if err := st.AddRunUsage(ctx, store.RunUsage{RunID: id, Stage: stage, TaskID: task, Model: "m", Input: 1000, Output: 100}); err != nil {
				b.Fatal(err)
			}
		}
	}
	s := New(Options{Store: open, Runs: fake, Blueprints: bs, Prices: map[string]manager.Price{"m": {InputPerMTok: 1, OutputPerMTok: 2}}})
	if _, err := s.UpdateSettings(ctx, ws, func(st *manager.Settings) {
		st.Mode, st.BlueprintID, st.MaxParallelRuns = manager.ModeFullAuto, bpID, 10
		st.Budget = manager.Budget{TokensPerDay: 1e9, CostPerDay: 100, RunsPerDay: 1000}
	}); err != nil {
		b.Fatal(err)
	}
	d, err := s.Tick(ctx, ws)
	if err != nil || d.Result != manager.ResultNothingToDo || !strings.Contains(d.Reason, "10 runs in progress, max_parallel_runs is 10") {
		b.Fatalf("tick: %+v %v", d, err)
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	n := 0
	for b.Loop() {
		if changed {
			if err := st.UpdateBlueprint(ctx, bpID, "v1", nil, nil, "bench.changed", json.RawMessage(`{}`)); err != nil {
				b.Fatal(err)
			}
		}
		if d, err := s.Tick(ctx, ws); err != nil || d.Result != manager.ResultNothingToDo {
			b.Fatal(d, err)
		}
		n++
	}
	// The process's CPU time (user + system, GC included) per tick: on a
	// loaded machine the wall time (ns/op) also counts the waits for a
	// core, which are not apserver's.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(n), "cpu-ms/op")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
