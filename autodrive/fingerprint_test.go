package autodrive

import (
	"context"
	"os"
	"path/filepath"
	"testing"
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
