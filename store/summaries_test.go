package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// TestThreadSummaries: a thread's summary is stored, replaced, listed by
// project (most recent first), and goes with its thread; a missing
// thread is ErrNotFound.
func TestThreadSummaries(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, filepath.Join(t.TempDir(), FileName))
	mkThread(t, s, Thread{ID: "a"})
	mkThread(t, s, Thread{ID: "b"})
	for _, ts := range []ThreadSummary{
		{ThreadID: "a", Cwd: "/p", Summary: "first", Turns: 1, UpdatedAt: 10},
		{ThreadID: "b", Cwd: "/p", Summary: "other", Turns: 2, UpdatedAt: 20},
		{ThreadID: "a", Cwd: "/p", Summary: "rolled", Turns: 3, UpdatedAt: 30},
	} {
		if err := s.PutThreadSummary(ctx, ts); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ThreadSummaries(ctx, "/p")
	if err != nil || len(got) != 2 || got[0].ThreadID != "a" || got[0].Summary != "rolled" || got[0].Turns != 3 || got[1].ThreadID != "b" {
		t.Fatalf("ThreadSummaries = %+v, %v", got, err)
	}
	if err := s.PutThreadSummary(ctx, ThreadSummary{ThreadID: "nope", Cwd: "/p", Summary: "x"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("summary of a missing thread: %v", err)
	}
	if err := s.DeleteThread(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetThreadSummary(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the summary of a deleted thread: %v", err)
	}
}
