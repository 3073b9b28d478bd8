package store

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestBlueprintEventSeq: the seq moves with every write of a version's
// nodes or tasks (it keys caches of what is computed from them), and is 0
// for a blueprint without events.
func TestBlueprintEventSeq(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, filepath.Join(t.TempDir(), "a.db"))
	seq := func() int64 {
		t.Helper()
		n, err := s.BlueprintEventSeq(ctx, "bp1")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := seq(); got != 0 {
		t.Fatalf("seq before any event = %d", got)
	}
	ev := json.RawMessage(`{}`)
	if err := s.CreateBlueprintVersion(ctx, BlueprintRow{ID: "bp1", Title: "S"}, BlueprintVersionRow{ID: "v1", Status: "ingesting", Document: "# A\n"}, ev); err != nil {
		t.Fatal(err)
	}
	last := seq()
	step := func(what string, write func() error) {
		t.Helper()
		if err := write(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := seq(); got <= last {
			t.Fatalf("%s: seq %d, was %d", what, got, last)
		} else {
			last = got
		}
	}
	node := json.RawMessage(`{"id":"a"}`)
	task := json.RawMessage(`{"id":"t1"}`)
	step("finish", func() error {
		return s.FinishBlueprintVersion(ctx, "v1", []BlueprintNodeRow{{Ord: 0, ID: "a", Node: node}}, nil, ev)
	})
	step("replace tasks", func() error {
		return s.ReplaceBlueprintTasks(ctx, "bp1", "v1", "a", []BlueprintTaskRow{{NodeID: "a", ID: "t1", Task: task}}, nil, ev)
	})
	step("update a task", func() error {
		return s.UpdateBlueprint(ctx, "bp1", "v1", nil, []BlueprintTaskRow{{NodeID: "a", ID: "t1", Task: json.RawMessage(`{"id":"t1","status":"done"}`)}}, "task.updated", ev)
	})
	step("update a node", func() error {
		return s.UpdateBlueprintNodes(ctx, "bp1", "v1", []BlueprintNodeRow{{ID: "a", Node: json.RawMessage(`{"id":"a","status":"done"}`)}}, "node.updated", ev)
	})
	if n, err := s.BlueprintEventSeq(ctx, "other"); err != nil || n != 0 {
		t.Fatalf("seq of an unknown blueprint = %d, %v", n, err)
	}
}
