package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/brains"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// TestProjectHeadless: decisions recorded in the data dir are listed by
// `apserver project decisions` run in the project, and the snapshot is
// printed and, with --write, written with memory.md.
func TestProjectHeadless(t *testing.T) {
	data, proj := t.TempDir(), t.TempDir()
	st, err := store.Open(filepath.Join(data, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc := brains.New(brains.Options{Store: func() (*store.Store, error) { return st, nil }, Debounce: 1 << 40})
	old, err := svc.AddDecision(context.Background(), protocol.ProjectDecisionAddParams{Cwd: proj, Title: "Use MySQL"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddDecision(context.Background(), protocol.ProjectDecisionAddParams{Cwd: proj, Title: "Use PostgreSQL", Alternatives: []string{"MySQL"}, Supersedes: old.Decision.ID}); err != nil {
		t.Fatal(err)
	}
	svc.Close()
	st.Close()

	run := func(args ...string) string {
		cmd := exec.Command(os.Args[0], append(args, "--data-dir", data)...)
		cmd.Dir = proj
		cmd.Env = append(os.Environ(), "APSERVER_TEST_MAIN=1", "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("apserver %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := run("project", "decisions"); !strings.Contains(out, "active\tUse PostgreSQL\trejected: MySQL") || strings.Contains(out, "Use MySQL") {
		t.Errorf("project decisions:\n%s", out)
	}
	if out := run("project", "decisions", "--all"); !strings.Contains(out, "superseded\tUse MySQL\t(superseded by ") {
		t.Errorf("project decisions --all:\n%s", out)
	}
	out := run("project", "snapshot", "--write")
	if !strings.Contains(out, "## Recent decisions") || !strings.Contains(out, "Use PostgreSQL") {
		t.Errorf("project snapshot:\n%s", out)
	}
	b, err := os.ReadFile(filepath.Join(proj, ".apserver", "snapshot.md"))
	if err != nil || string(b) != out {
		t.Errorf("snapshot.md differs from what was printed: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(proj, ".apserver", "memory.md")); err != nil || !strings.Contains(string(b), "Use PostgreSQL") {
		t.Errorf("memory.md: %q %v", b, err)
	}
}
