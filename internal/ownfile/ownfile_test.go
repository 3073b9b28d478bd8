package ownfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestNeverThroughALink: links a repository may commit where apserver
// keeps its files are never followed: a link at the file is replaced (and
// not read), a link in a temporary file's likely name is left alone, a
// directory linked elsewhere gets nothing; a plain file is written and
// read, and left alone when unchanged.
func TestNeverThroughALink(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside")
	os.MkdirAll(outside, 0o755)
	victim := filepath.Join(outside, "bashrc")
	os.WriteFile(victim, []byte("# mine\n"), 0o644)

	root := filepath.Join(dir, "repo")
	os.MkdirAll(filepath.Join(root, ".apserver"), 0o755)
	os.Symlink(victim, filepath.Join(root, ".apserver", "memory.md"))
	os.Symlink(victim, filepath.Join(root, ".apserver", "memory.md.tmp"))
	if _, ok := Read(root, ".apserver/memory.md"); ok {
		t.Error("a link was read")
	}
	if err := Write(root, ".apserver/memory.md", []byte("run\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "# mine\n" {
		t.Fatalf("written through a link: %q", b)
	}
	if b, ok := Read(root, ".apserver/memory.md"); !ok || string(b) != "run\n" {
		t.Fatalf("Read = %q, %v", b, ok)
	}
	fi, _ := os.Stat(filepath.Join(root, ".apserver", "memory.md"))
	if err := Write(root, ".apserver/memory.md", []byte("run\n")); err != nil {
		t.Fatal(err)
	}
	if fi2, _ := os.Stat(filepath.Join(root, ".apserver", "memory.md")); !os.SameFile(fi, fi2) {
		t.Error("an unchanged file was rewritten")
	}

	linked := filepath.Join(dir, "linked")
	os.MkdirAll(linked, 0o755)
	os.Symlink(outside, filepath.Join(linked, ".apserver"))
	if err := Write(linked, ".apserver/runs/r1/state.md", []byte("x")); err == nil {
		t.Error("wrote into a directory linked outside the root")
	}
	if _, err := os.Stat(filepath.Join(outside, "runs")); err == nil {
		t.Error("a directory was made outside the root")
	}
	os.WriteFile(filepath.Join(outside, "state.md"), []byte("secret"), 0o600)
	if _, ok := Read(linked, ".apserver/state.md"); ok {
		t.Error("read through a linked directory")
	}
}
