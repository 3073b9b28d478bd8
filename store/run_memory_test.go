package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// TestRunSections: a run's section is stored with its project marked
// dirty in the same write; a run's second section replaces its first in
// its place; adopted sections never replace stored ones nor mark the
// project; sections list oldest first, by project.
func TestRunSections(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, filepath.Join(t.TempDir(), FileName))
	for _, r := range []RunSection{{RunID: "b", Section: "b1", At: 20}, {RunID: "a", Section: "a1", At: 30}, {RunID: "b", Section: "b2", At: 40}} {
		if err := s.PutRunSection(ctx, "/p", r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutRunSection(ctx, "/q", RunSection{RunID: "c", Section: "c1", At: 5}); err != nil {
		t.Fatal(err)
	}
	dirty, err := s.BrainDirty(ctx)
	if err != nil || dirty["/p"] != 3 || dirty["/q"] != 1 {
		t.Fatalf("BrainDirty = %v, %v", dirty, err)
	}
	if err := s.AdoptRunSections(ctx, "/p", []RunSection{{RunID: "old", Section: "o", At: 1}, {RunID: "a", Section: "from the file", At: 2}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.RunSections(ctx, "/p")
	if err != nil || fmt.Sprint(got) != "[{old o 1} {b b2 20} {a a1 30}]" {
		t.Fatalf("RunSections = %v, %v", got, err)
	}
	if dirty, _ := s.BrainDirty(ctx); dirty["/p"] != 3 {
		t.Fatalf("adopting marked the project: %v", dirty)
	}
	if err := s.PutRunSection(ctx, "", RunSection{RunID: "x"}); err == nil {
		t.Fatal("a section without a project was stored")
	}
}
