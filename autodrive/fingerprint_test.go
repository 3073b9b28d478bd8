package autodrive

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestWorkspaceFingerprint(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.go", "package a")
	write("sub/b.txt", "b")
	write(".git/HEAD", "ref")
	ctx := context.Background()
	fp1, cache := WorkspaceFingerprint(ctx, dir, nil)
	fp2, cache := WorkspaceFingerprint(ctx, dir, cache)
	if fp1 != fp2 || len(cache) != 2 {
		t.Fatalf("unchanged tree: %s then %s (cache %d files, want 2: .git skipped)", fp1, fp2, len(cache))
	}
	write(".git/HEAD", "other")
	if fp, _ := WorkspaceFingerprint(ctx, dir, cache); fp != fp1 {
		t.Errorf("a change inside .git changed the fingerprint")
	}
	write("sub/b.txt", "B")
	fp3, cache := WorkspaceFingerprint(ctx, dir, cache)
	if fp3 == fp1 {
		t.Errorf("a content change left the fingerprint unchanged")
	}
	write("sub/b.txt", "b")
	if fp, _ := WorkspaceFingerprint(ctx, dir, cache); fp != fp1 {
		t.Errorf("restoring the content did not restore the fingerprint")
	}
	if err := os.Rename(filepath.Join(dir, "a.go"), filepath.Join(dir, "c.go")); err != nil {
		t.Fatal(err)
	}
	if fp, _ := WorkspaceFingerprint(ctx, dir, nil); fp == fp1 {
		t.Errorf("a rename left the fingerprint unchanged")
	}
}

// TestHashFileNeverBlocks: commands may still run while the workspace is
// walked, so a file can turn into a named pipe or a link between the walk's
// Lstat and the open. Hashing it must return (the pipe has no writer, so a
// plain open would wait for one for ever) and must not follow the link.
func TestHashFileNeverBlocks(t *testing.T) {
	dir := t.TempDir()
	fifo, link, secret := filepath.Join(dir, "pipe"), filepath.Join(dir, "link"), filepath.Join(t.TempDir(), "secret")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	empty := sha256.Sum256(nil)
	done := make(chan [2][sha256.Size]byte, 1)
	go func() { done <- [2][sha256.Size]byte{hashFile(fifo), hashFile(link)} }()
	select {
	case got := <-done:
		if got[0] != empty || got[1] != empty {
			t.Errorf("hashFile of a pipe and of a link = %x, %x; want the hash of nothing", got[0], got[1])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("hashFile blocked on a named pipe")
	}
}
