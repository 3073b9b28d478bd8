package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apserver/apserver/runs"
)

// TestRunFilesNotThroughLinks: a repository that commits
// .apserver/memory.md as a link to a file of the user's, or .apserver as a
// link elsewhere, does not get the run's section or artifacts written
// there (the runner writes them outside the sandbox).
func TestRunFilesNotThroughLinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "bashrc")
	os.WriteFile(victim, []byte("# mine\n"), 0o644)
	wt := filepath.Join(dir, "wt")
	os.MkdirAll(filepath.Join(wt, ".apserver"), 0o755)
	os.Symlink(victim, filepath.Join(wt, filepath.FromSlash(runs.MemoryFile)))
	s := runs.Snapshot{}
	if err := writeMemory(wt, s); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "# mine\n" {
		t.Fatalf("the run's section went through the link: %q", b)
	}
	outside := filepath.Join(dir, "outside")
	os.MkdirAll(outside, 0o755)
	wt2 := filepath.Join(dir, "wt2")
	os.MkdirAll(wt2, 0o755)
	os.Symlink(outside, filepath.Join(wt2, ".apserver"))
	if err := writeArtifacts(wt2, s); err == nil && len(runs.Artifacts(s)) > 0 {
		t.Error("artifacts written into a directory linked outside the worktree")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("files outside the worktree: %v", entries)
	}
}
