package store

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestCompactionTombstone: a compaction keeps every item; the prompt
// source starts at the latest compaction; dropping its turn undoes it; a
// fork keeps it, pointing at the copied item's new seq.
func TestCompactionTombstone(t *testing.T) {
	s := openTest(t, "")
	mkThread(t, s, Thread{ID: "a"})
	item := func(turn, id string) {
		t.Helper()
		if _, err := s.AppendItem(ctx, Item{ThreadID: "a", TurnID: turn, ID: id, Type: "agentMessage",
			Item: json.RawMessage(`{"type":"agentMessage","id":"` + id + `"}`), History: json.RawMessage(`[{"Text":"` + id + `"}]`)}); err != nil {
			t.Fatal(err)
		}
	}
	compact := func(turn, id, summary string) Compaction {
		t.Helper()
		c, err := s.AppendCompaction(ctx, Item{ThreadID: "a", TurnID: turn, ID: id, Type: "contextCompaction", Item: json.RawMessage(`{"type":"contextCompaction","id":"` + id + `"}`)},
			Compaction{Summary: summary, History: json.RawMessage(`[{"Text":"` + summary + `"}]`), TokensBefore: 100, TokensAfter: 10})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for i, turn := range []string{"t1", "t2", "t3"} {
		if _, err := s.StartTurn(ctx, Turn{ThreadID: "a", ID: turn, StartedAt: int64(i)}); err != nil {
			t.Fatal(err)
		}
		item(turn, turn+"-a")
		switch turn {
		case "t1":
			compact(turn, "c1", "s1")
		case "t2":
			if c := compact(turn, "c2", "s2"); c.ItemSeq != 5 {
				t.Errorf("c2 at seq %d, want 5", c.ItemSeq)
			}
		}
		item(turn, turn+"-b")
		if err := s.FinishTurn(ctx, Turn{ThreadID: "a", ID: turn, Status: StatusCompleted}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutHiddenInput(ctx, "a", "t2", "hidden t2"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutHiddenInput(ctx, "a", "t3", "hidden t3"); err != nil {
		t.Fatal(err)
	}
	src := func(thread string) string {
		t.Helper()
		ps, err := s.PromptSource(ctx, thread)
		if err != nil {
			t.Fatal(err)
		}
		out := "none"
		if ps.Compaction != nil {
			out = ps.Compaction.Summary
		}
		for _, it := range ps.Items {
			out += " " + it.ID
		}
		return out + fmt.Sprint(" ", ps.Hidden)
	}
	if got, want := src("a"), "s2 t2-b t3-a t3-b map[t3:hidden t3]"; got != want {
		t.Errorf("PromptSource = %q, want %q", got, want)
	}
	if items, _ := s.Items(ctx, "a"); len(items) != 8 {
		t.Errorf("%d items stored, want all 8", len(items))
	}
	if ok, err := s.ItemExists(ctx, "a", "t1-a"); !ok || err != nil {
		t.Errorf("ItemExists(t1-a) = %v, %v", ok, err)
	}

	if err := s.Fork(ctx, "a", Thread{ID: "f", CreatedAt: 1, UpdatedAt: 1}, "t2"); err != nil {
		t.Fatal(err)
	}
	if got, want := src("f"), "s2 t2-b map[]"; got != want {
		t.Errorf("fork's PromptSource = %q, want %q", got, want)
	}
	if err := s.DropTurnsFrom(ctx, "a", "t2"); err != nil {
		t.Fatal(err)
	}
	if got, want := src("a"), "s1 t1-b map[]"; got != want {
		t.Errorf("after dropping t2, PromptSource = %q, want %q", got, want)
	}
	if cs, _ := s.Compactions(ctx, "a"); len(cs) != 1 || cs[0].ItemID != "c1" {
		t.Errorf("compactions after the drop: %+v", cs)
	}
}
