package blueprints

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/manager"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// TestPhaseWorkCache: PhaseWork's cached answer follows every change of
// the blueprint, made by this service (a node marked done) or by another
// process over the same database (a generated task marked done: the tasks
// are not in the decoded tree), so the manager is never offered a done
// task; and the answer handed out is the caller's to change.
func TestPhaseWorkCache(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.CreateBlueprintVersion(ctx, store.BlueprintRow{ID: "bp", Title: "t"}, store.BlueprintVersionRow{ID: "v1", Status: "ingesting", Document: "# P\n"}, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	var rows []store.BlueprintNodeRow
	add := func(n protocol.BlueprintNode) {
		n.Order, n.Anchor = len(rows), []string{n.ID}
		if n.Status == "" {
			n.Status = protocol.NodePlanned
		}
		raw, _ := json.Marshal(n)
		rows = append(rows, store.BlueprintNodeRow{Ord: n.Order, ID: n.ID, Node: raw})
	}
	add(protocol.BlueprintNode{ID: "P", Kind: protocol.KindPhase, Title: "P"})
	add(protocol.BlueprintNode{ID: "S", Kind: protocol.KindStory, Title: "S", ParentID: "P", Depth: 1})
	add(protocol.BlueprintNode{ID: "a", Kind: protocol.KindTask, Title: "a", ParentID: "S", Depth: 2})
	add(protocol.BlueprintNode{ID: "b", Kind: protocol.KindTask, Title: "b", ParentID: "S", Depth: 2, DependsOn: []string{"a"}})
	add(protocol.BlueprintNode{ID: "n", Kind: protocol.KindTask, Title: "n", ParentID: "S", Depth: 2})
	var trows []store.BlueprintTaskRow
	for i, x := range []protocol.BlueprintTask{
		{ID: "x1", NodeID: "n", Title: "x1", Status: protocol.NodePlanned},
		{ID: "x2", NodeID: "n", Title: "x2", Status: protocol.NodePlanned, DependsOn: []string{"x1"}, Order: 1},
	} {
		raw, _ := json.Marshal(x)
		trows = append(trows, store.BlueprintTaskRow{NodeID: x.NodeID, Ord: i, ID: x.ID, Task: raw})
	}
	if err := st.FinishBlueprintVersion(ctx, "v1", rows, trows, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	open := func() (*store.Store, error) { return st, nil }
	s := New(Options{Store: open, Config: config.Default()})
	t.Cleanup(s.Close)
	other := New(Options{Store: open, Config: config.Default()}) // another process
	t.Cleanup(other.Close)

	ready := func(want ...string) manager.PhaseWork {
		t.Helper()
		w, err := s.PhaseWork(ctx, "bp", "")
		if err != nil {
			t.Fatal(err)
		}
		got := slices.Sorted(slices.Values(w.Ready))
		if !slices.Equal(got, want) {
			t.Fatalf("ready %v, want %v", got, want)
		}
		return w
	}
	done := func(svc *Service, id string) {
		t.Helper()
		d := protocol.NodeDone
		if _, err := svc.NodeUpdate(ctx, protocol.BlueprintNodeUpdateParams{BlueprintID: "bp", NodeID: id, Status: &d}); err != nil {
			t.Fatal(err)
		}
	}

	w := ready("a", "x1")
	if w.Counts[protocol.NodePlanned] != 4 {
		t.Fatalf("counts %v", w.Counts)
	}
	// The caller's copy: changing it changes nothing cached.
	w.Ready[0] = "zz"
	w.Counts[protocol.NodePlanned] = 0
	w = ready("a", "x1")
	if w.Counts[protocol.NodePlanned] != 4 {
		t.Fatalf("counts after the caller changed its copy: %v", w.Counts)
	}

	done(s, "a") // here
	ready("b", "x1")
	done(other, "x1") // in another process: only the store knows
	w = ready("b", "x2")
	if w.Counts[protocol.NodeDone] != 2 || w.Counts[protocol.NodePlanned] != 2 {
		t.Fatalf("counts %v", w.Counts)
	}
	ready("b", "x2") // unchanged: from the cache, the same
}
