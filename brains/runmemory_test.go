package brains

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// TestRunSectionSurvivesACrash: a run's section handed to the brain is in
// the store before memory.md is written; a process that ends before the
// projection (held here, as a kill -9 would leave it) loses nothing: the
// next start writes the section below the decisions. memory.md is a
// projection: deleted, it comes back whole from the store, the sections
// in the order the runs ended, a run's second section in its first's
// place.
func TestRunSectionSurvivesACrash(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	proj := filepath.Join(dir, "p")
	os.MkdirAll(proj, 0o755)
	db := filepath.Join(dir, "a.db")
	st := openStore(t, db)
	s := New(Options{Store: func() (*store.Store, error) { return st, nil }, Debounce: -1, HoldProjections: true})
	if _, err := s.AddDecision(ctx, protocol.ProjectDecisionAddParams{Cwd: proj, Title: "Use PostgreSQL"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ id, sec string }{
		{"run-a", "\n## Run run-a (completed): first\n\n- plan v1 approved\n"},
		{"run-b", "\n## Run run-b (completed): second\n"},
		{"run-a", "\n## Run run-a (completed): first, again\n"},
	} {
		if err := s.RunMemory(ctx, proj, r.id, r.sec); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	st.Close()
	memPath := filepath.Join(proj, ".apserver", "memory.md")
	if _, err := os.Stat(memPath); !os.IsNotExist(err) {
		t.Fatalf("memory.md written while projections were held: %v", err)
	}

	st = openStore(t, db)
	defer st.Close()
	s = New(Options{Store: func() (*store.Store, error) { return st, nil }, Debounce: -1})
	defer s.Close()
	s.Restore()
	want := "\n## Run run-a (completed): first, again\n\n## Run run-b (completed): second\n"
	mem, err := os.ReadFile(memPath)
	if err != nil || !strings.Contains(string(mem), "Use PostgreSQL") || !strings.HasSuffix(string(mem), want) {
		t.Fatalf("after the restart, memory.md = %q, %v; want the decision, then %q", mem, err, want)
	}
	if dirty, _ := st.BrainDirty(ctx); len(dirty) != 0 {
		t.Fatalf("projections written but the project stays dirty: %v", dirty)
	}
	// Deleted, memory.md comes back from the store alone.
	os.Remove(memPath)
	if err := s.Flush(ctx, proj); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(memPath); string(again) != string(mem) {
		t.Fatalf("memory.md rewritten from the store = %q, want %q", again, mem)
	}
}

// TestRunSectionsAdoptedFromTheFile: sections a run wrote into memory.md
// before the store kept them are adopted, in the file's order, before the
// sections stored since.
func TestRunSectionsAdoptedFromTheFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	proj := filepath.Join(dir, "p")
	os.MkdirAll(filepath.Join(proj, ".apserver"), 0o755)
	memPath := filepath.Join(proj, ".apserver", "memory.md")
	os.WriteFile(memPath, []byte("# apserver memory\n\n## Run z-old (completed): z\n\n- kept\n\n## Run a-old (completed): a\n"), 0o644)
	st := openStore(t, filepath.Join(dir, "a.db"))
	defer st.Close()
	s := New(Options{Store: func() (*store.Store, error) { return st, nil }, Debounce: -1})
	defer s.Close()
	if _, err := s.AddDecision(ctx, protocol.ProjectDecisionAddParams{Cwd: proj, Title: "Use PostgreSQL"}); err != nil {
		t.Fatal(err)
	}
	if err := s.RunMemory(ctx, proj, "new", "\n## Run new (completed): n\n"); err != nil {
		t.Fatal(err)
	}
	mem, _ := os.ReadFile(memPath)
	want := "\n## Run z-old (completed): z\n\n- kept\n\n## Run a-old (completed): a\n\n## Run new (completed): n\n"
	if !strings.HasSuffix(string(mem), want) || strings.Count(string(mem), "## Run ") != 3 {
		t.Fatalf("memory.md = %q, want it to end %q", mem, want)
	}
	os.Remove(memPath)
	if err := s.Flush(ctx, proj); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(memPath); string(again) != string(mem) {
		t.Fatalf("memory.md rewritten from the store = %q, want %q", again, mem)
	}
}
