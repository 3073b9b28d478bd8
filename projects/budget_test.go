package projects

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/apserver/apserver/internal/clock"
	"github.com/apserver/apserver/manager"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// TestBudgetReadsUsageSource: with Options.Usage set (the runner, which
// reads where its run store records: PostgreSQL in cluster mode), the
// token budget counts the usage found there, not the service's own
// store's: a run whose 150 tokens were recorded elsewhere (a cluster
// worker) exhausts a budget of 100, and project/status shows them.
func TestBudgetReadsUsageSource(t *testing.T) {
	f := newFake(map[string][]string{}, []string{"a", "b"})
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	open := func(name string) *store.Store {
		db, err := store.Open(filepath.Join(t.TempDir(), name), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	own, runs := open("own.db"), open("runs.db")
	s := New(Options{Store: func() (*store.Store, error) { return own, nil }, Runs: f, Blueprints: f,
		Clock: clock.Func(func() time.Time { return now }), Usage: runs})
	ctx := context.Background()
	ws := t.TempDir()
	if _, err := s.UpdateSettings(ctx, ws, func(st *manager.Settings) {
		fullAuto(2)(st)
		st.Budget.TokensPerDay = 100
	}); err != nil {
		t.Fatal(err)
	}
	if d, err := s.Tick(ctx, ws); err != nil || d.Result != manager.ResultStartedRun {
		t.Fatalf("first Tick = %+v, %v; want started_run", d, err)
	}
	if err := runs.AddRunUsage(ctx, store.RunUsage{RunID: "r1", Stage: "task", TaskID: "a", Model: "m",
		Input: 120, Output: 30, At: now.UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	d, err := s.Tick(ctx, ws)
	if err != nil || d.Result != manager.ResultBudgetExhausted {
		t.Fatalf("Tick after 150 tokens recorded in the run store = %+v, %v; want budget_exhausted", d, err)
	}
	st, err := s.Status(ctx, protocol.ProjectCwdParams{Cwd: ws})
	if err != nil {
		t.Fatal(err)
	}
	if st.Spend.Tokens != 150 || st.Spend.Exhausted == "" {
		t.Errorf("project/status spend = %+v; want 150 tokens, exhausted", st.Spend)
	}
	if f.starts != 1 {
		t.Errorf("%d runs started, want 1", f.starts)
	}
}
