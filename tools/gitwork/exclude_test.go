package gitwork

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExcludeLocally: a file the brain rewrites in the checkout, excluded
// locally, does not stop a merge that brings in a file of that name
// (without the exclusion git refuses: untracked working tree files would
// be overwritten); the exclusion is written once, with the subdirectory's
// prefix, and a directory outside any repository is left alone.
func TestExcludeLocally(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	g := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	g("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644)
	g("add", ".")
	g("commit", "-qm", "a")
	g("checkout", "-qb", "run")
	os.MkdirAll(filepath.Join(repo, ".apserver"), 0o755)
	os.WriteFile(filepath.Join(repo, ".apserver", "memory.md"), []byte("run's\n"), 0o644)
	g("add", ".")
	g("commit", "-qm", "the run's memory.md")
	g("checkout", "-q", "main")
	os.MkdirAll(filepath.Join(repo, ".apserver"), 0o755)
	os.WriteFile(filepath.Join(repo, ".apserver", "memory.md"), []byte("the brain's\n"), 0o644)

	for range 2 {
		if err := ExcludeLocally(ctx, repo, ".apserver/memory.md", ".apserver/snapshot.md"); err != nil {
			t.Fatal(err)
		}
	}
	ex, _ := os.ReadFile(filepath.Join(repo, ".git", "info", "exclude"))
	if strings.Count(string(ex), "/.apserver/memory.md\n") != 1 || strings.Count(string(ex), "/.apserver/snapshot.md\n") != 1 {
		t.Fatalf("info/exclude:\n%s", ex)
	}
	g("merge", "-q", "--no-edit", "run")

	sub := filepath.Join(repo, "pkg")
	os.MkdirAll(sub, 0o755)
	if err := ExcludeLocally(ctx, sub, "x.md"); err != nil {
		t.Fatal(err)
	}
	if ex, _ := os.ReadFile(filepath.Join(repo, ".git", "info", "exclude")); !strings.Contains(string(ex), "/pkg/x.md\n") {
		t.Fatalf("a subdirectory's path: %s", ex)
	}
	if err := ExcludeLocally(ctx, t.TempDir(), "x.md"); err != nil {
		t.Fatalf("outside a repository: %v", err)
	}
}
