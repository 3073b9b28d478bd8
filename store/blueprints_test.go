package store

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
)

// TestBlueprintLifecycle: a version is created with its document, chunks
// are recorded once, the tree lands with status ready in one transaction
// (primary, replacedBy, event log), and a second version is linked to its
// parent.
func TestBlueprintLifecycle(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.db")
	s := openTest(t, path)
	ev := json.RawMessage(`{}`)
	bp := BlueprintRow{ID: "bp1", Cwd: "/w", Title: "Spec"}
	v1 := BlueprintVersionRow{ID: "v1", Status: "ingesting", ChunkTokens: 100, PageNodes: 5, ChunksTotal: 3, Document: "# A\n"}
	if err := s.CreateBlueprintVersion(ctx, bp, v1, ev); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveBlueprintChunk(ctx, "v1", 1, json.RawMessage(`[1]`), 1); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveBlueprintChunk(ctx, "v1", 1, json.RawMessage(`[2]`), 1); err != nil {
		t.Fatal(err)
	}
	if got, err := s.BlueprintChunks(ctx, "v1"); err != nil || len(got) != 1 || string(got[1]) != "[1]" {
		t.Fatalf("chunks %v %v", got, err)
	}
	// Reopened (as after kill -9): the job is found with its document.
	s.Close()
	s = openTest(t, path)
	ing, err := s.IngestingBlueprintVersions(ctx)
	if err != nil || len(ing) != 1 || ing[0].ID != "v1" || ing[0].ChunksDone != 1 || ing[0].Number != 1 {
		t.Fatalf("ingesting %+v %v", ing, err)
	}
	if v, err := s.BlueprintVersion(ctx, "v1"); err != nil || v.Document != "# A\n" || v.Bytes != 4 {
		t.Fatalf("version %+v %v", v, err)
	}
	nodes := []BlueprintNodeRow{{Ord: 0, ID: "n1", Node: json.RawMessage(`{"id":"n1"}`)}}
	if err := s.FinishBlueprintVersion(ctx, "v1", nodes, nil, ev); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishBlueprintVersion(ctx, "v1", nodes, nil, ev); err == nil {
		t.Fatal("a ready version finished twice")
	}
	v2 := BlueprintVersionRow{ID: "v2", ParentID: "v1", Status: "ingesting", ChunkTokens: 100, PageNodes: 5, ChunksTotal: 1, Document: "# B\n"}
	if err := s.CreateBlueprintVersion(ctx, bp, v2, ev); err != nil {
		t.Fatal(err)
	}
	if b, _ := s.Blueprint(ctx, "bp1"); b.Primary != "v1" {
		t.Fatalf("primary %q while v2 ingests, want v1", b.Primary)
	}
	if err := s.FinishBlueprintVersion(ctx, "v2", nodes, nil, ev); err != nil {
		t.Fatal(err)
	}
	vs, err := s.BlueprintVersions(ctx, "bp1")
	if err != nil || len(vs) != 2 || vs[0].ReplacedBy != "v2" || vs[1].Number != 2 || vs[1].NodeCount != 1 {
		t.Fatalf("versions %+v %v", vs, err)
	}
	if b, _ := s.Blueprint(ctx, "bp1"); b.Primary != "v2" {
		t.Fatalf("primary %q, want v2", b.Primary)
	}
	if err := s.UpdateBlueprintNodes(ctx, "bp1", "v2", []BlueprintNodeRow{{ID: "n1", Node: json.RawMessage(`{"id":"n1","status":"done"}`)}}, "node.updated", ev); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateBlueprintNodes(ctx, "bp1", "v2", []BlueprintNodeRow{{ID: "zz", Node: ev}}, "node.updated", ev); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown node: %v", err)
	}
	if ns, _ := s.BlueprintNodes(ctx, "v2"); len(ns) != 1 || string(ns[0]) != `{"id":"n1","status":"done"}` {
		t.Fatalf("nodes %s", ns)
	}
	evs, _ := s.BlueprintEvents(ctx, "bp1")
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	if want := "[version.created version.ready version.created version.ready node.updated]"; fmtList(types) != want {
		t.Fatalf("events %v, want %s", types, want)
	}
	if err := s.EndBlueprintVersion(ctx, "v2", "failed", "x", ev); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.BlueprintVersion(ctx, "v2"); v.Status != "ready" {
		t.Fatalf("a ready version was ended: %s", v.Status)
	}
	if _, err := s.Blueprint(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
}

func fmtList(s []string) string {
	out := "["
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out + "]"
}

func TestBlueprintTasks(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "")
	ev := json.RawMessage(`{}`)
	if err := s.CreateBlueprintVersion(ctx, BlueprintRow{ID: "bp"}, BlueprintVersionRow{ID: "v", Status: "ingesting", Document: "x"}, ev); err != nil {
		t.Fatal(err)
	}
	rows := []BlueprintTaskRow{{Ord: 0, ID: "t1", Task: json.RawMessage(`{"a":1}`)}, {Ord: 1, ID: "t2", Task: json.RawMessage(`{"a":2}`)}}
	if err := s.ReplaceBlueprintTasks(ctx, "bp", "v", "n1", rows, nil, ev); err != nil {
		t.Fatal(err)
	}
	if err := s.ReplaceBlueprintTasks(ctx, "bp", "v", "n1", rows[1:], nil, ev); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateBlueprint(ctx, "bp", "v", nil, []BlueprintTaskRow{{ID: "t2", Task: json.RawMessage(`{"a":3}`)}}, "task.updated", ev); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateBlueprint(ctx, "bp", "v", nil, []BlueprintTaskRow{{ID: "t1", Task: ev}}, "task.updated", ev); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a replaced task updated: %v", err)
	}
	if err := s.UpdateBlueprint(ctx, "bp", "v", nil, []BlueprintTaskRow{{ID: "t2", Task: json.RawMessage(`{"a":4}`)}, {ID: "t1", Task: ev}}, "x", ev); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an update naming a missing task: %v", err)
	}
	got, err := s.BlueprintTasks(ctx, "v")
	if err != nil || len(got) != 1 || got[0].ID != "t2" || string(got[0].Task) != `{"a":3}` {
		t.Fatalf("tasks %+v %v", got, err)
	}
	// A task id is unique in a version: two nodes cannot both hold t2.
	if err := s.ReplaceBlueprintTasks(ctx, "bp", "v", "n2", rows[1:], nil, ev); err == nil {
		t.Fatal("one task id under two nodes")
	}
}
