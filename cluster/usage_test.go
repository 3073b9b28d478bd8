package cluster

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/apserver/apserver/internal/pgtest"
	"github.com/apserver/apserver/store"
)

// TestRunUsage: the PostgreSQL store keeps runs' token usage as SQLite's
// run_usage does: sums by stage and model of the runs asked for, from
// since on; a response recorded twice under its key (a retried insert)
// counts once, two responses with the same figures count twice; a row
// without a key, run or stage is refused.
func TestRunUsage(t *testing.T) {
	_, _, s := open(t)
	ctx := context.Background()
	add := func(key string, u store.RunUsage) {
		t.Helper()
		if err := s.RecordRunUsage(ctx, key, u); err != nil {
			t.Fatalf("RecordRunUsage(%q, %+v): %v", key, u, err)
		}
	}
	add("k1", store.RunUsage{RunID: "r1", Stage: "planning", Model: "m1", Input: 100, Cached: 40, Output: 10, At: 1000})
	add("k2", store.RunUsage{RunID: "r1", Stage: "task", TaskID: "t1", Model: "m1", Input: 200, Cached: 50, Output: 20, At: 2000})
	add("k3", store.RunUsage{RunID: "r1", Stage: "task", TaskID: "t1", Model: "m1", Input: 200, Cached: 50, Output: 20, At: 2001})
	add("k2", store.RunUsage{RunID: "r1", Stage: "task", TaskID: "t1", Model: "m1", Input: 200, Cached: 50, Output: 20, At: 2000}) // retried
	add("k4", store.RunUsage{RunID: "r2", Stage: "review", TaskID: "t1", Model: "m2", Input: 7, Output: 3, At: 3000})
	add("k5", store.RunUsage{RunID: "other", Stage: "task", Model: "m1", Input: 1000, Output: 1000, At: 3000})

	got, err := s.RunsUsage(ctx, []string{"r1", "r2"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.RunUsage{
		{Stage: "planning", Model: "m1", Input: 100, Cached: 40, Output: 10},
		{Stage: "review", Model: "m2", Input: 7, Output: 3},
		{Stage: "task", Model: "m1", Input: 400, Cached: 100, Output: 40},
	}
	if !slices.Equal(got, want) {
		t.Errorf("RunsUsage(r1, r2, 0) = %+v, want %+v", got, want)
	}
	got, err = s.RunsUsage(ctx, []string{"r1", "r2"}, 2001)
	if err != nil {
		t.Fatal(err)
	}
	want = []store.RunUsage{
		{Stage: "review", Model: "m2", Input: 7, Output: 3},
		{Stage: "task", Model: "m1", Input: 200, Cached: 50, Output: 20},
	}
	if !slices.Equal(got, want) {
		t.Errorf("RunsUsage(r1, r2, since 2001) = %+v, want %+v", got, want)
	}
	if got, err := s.RunsUsage(ctx, nil, 0); err != nil || len(got) != 0 {
		t.Errorf("RunsUsage(no runs) = %+v, %v; want nothing", got, err)
	}
	for _, bad := range []struct {
		key string
		u   store.RunUsage
	}{{"", store.RunUsage{RunID: "r1", Stage: "task"}}, {"k9", store.RunUsage{Stage: "task"}}, {"k9", store.RunUsage{RunID: "r1"}}} {
		if err := s.RecordRunUsage(ctx, bad.key, bad.u); err == nil {
			t.Errorf("RecordRunUsage(%q, %+v): no error", bad.key, bad.u)
		}
	}
}

// BenchmarkRecordRunUsage: what recording one model response's usage
// costs a run's thread in cluster mode (one INSERT on a local socket).
func BenchmarkRecordRunUsage(b *testing.B) {
	srv := pgtest.Start(b)
	ctx := context.Background()
	pool, err := Connect(ctx, srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if _, err := Migrate(ctx, pool); err != nil {
		b.Fatal(err)
	}
	s, err := NewStore(pool)
	if err != nil {
		b.Fatal(err)
	}
	u := store.RunUsage{RunID: "r1", Stage: "task", TaskID: "t1", Model: "m", Input: 1000, Cached: 200, Output: 100, At: 1}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.RecordRunUsage(ctx, strconv.Itoa(i), u); err != nil {
			b.Fatal(err)
		}
	}
}
