package store

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
)

func TestDecisionEventsAndDirtyMarks(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "s.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	row := func(id, status string) DecisionRow {
		return DecisionRow{ID: id, Status: status, Decision: json.RawMessage(`{"id":"` + id + `","status":"` + status + `"}`)}
	}
	if _, err := s.AppendDecisionEvents(ctx, "/p", []DecisionChange{{Row: row("d-1", "active"), Type: "recorded", Event: json.RawMessage(`{}`)}}, 10); err != nil {
		t.Fatal(err)
	}
	seq, err := s.AppendDecisionEvents(ctx, "/p", []DecisionChange{
		{Row: row("d-2", "active"), Type: "recorded", Event: json.RawMessage(`{}`)},
		{Row: row("d-1", "superseded"), Type: "superseded", Event: json.RawMessage(`{"by":"d-2"}`)},
	}, 20)
	if err != nil || seq != 3 {
		t.Fatalf("AppendDecisionEvents = %d, %v; want 3", seq, err)
	}
	ds, err := s.Decisions(ctx, "/p")
	if err != nil || len(ds) != 2 || ds[0].ID != "d-1" || ds[0].Status != "superseded" || ds[0].CreatedAt != 10 || ds[0].UpdatedAt != 20 {
		t.Fatalf("Decisions = %+v, %v", ds, err)
	}
	evs, err := s.DecisionEvents(ctx, "/p")
	if err != nil || len(evs) != 3 || evs[2].Type != "superseded" || evs[2].DecisionID != "d-1" {
		t.Fatalf("DecisionEvents = %+v, %v", evs, err)
	}
	if _, err := s.Decision(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Decision(nope) = %v, want ErrNotFound", err)
	}
	dirty, err := s.BrainDirty(ctx)
	if err != nil || dirty["/p"] != 2 {
		t.Fatalf("BrainDirty = %v, %v; want /p marked twice", dirty, err)
	}
	// A change stored while the projection was written keeps /p dirty.
	mark := dirty["/p"]
	if _, err := s.MarkBrainDirty(ctx, "/p"); err != nil {
		t.Fatal(err)
	}
	if err := s.ClearBrainDirty(ctx, "/p", mark); err != nil {
		t.Fatal(err)
	}
	if dirty, _ := s.BrainDirty(ctx); dirty["/p"] != 3 {
		t.Fatalf("after a stale clear, BrainDirty = %v; want /p still marked", dirty)
	}
	if err := s.ClearBrainDirty(ctx, "/p", 3); err != nil {
		t.Fatal(err)
	}
	if dirty, _ := s.BrainDirty(ctx); len(dirty) != 0 {
		t.Fatalf("after clearing, BrainDirty = %v", dirty)
	}
	if _, err := s.AppendDecisionEvents(ctx, "/p", []DecisionChange{{Row: row("d-3", "active"), Type: "recorded", Event: json.RawMessage(`{`)}}, 30); err == nil {
		t.Fatal("a bad event was stored")
	}
}
