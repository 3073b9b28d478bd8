package gitwork

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

var hookNames = []string{
	"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit",
	"post-checkout", "post-merge", "pre-merge-commit", "reference-transaction",
	"post-index-change", "pre-auto-gc", "post-rewrite",
}

// TestNoRepositoryCode: hooks in .git/hooks and in a configured
// core.hooksPath, a gpg.program, an fsmonitor command and a pager that the
// repository's config names never run, judged by the marker files they
// would leave.
func TestNoRepositoryCode(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	testGit(t, dir, "branch", "release", "main")
	markers := t.TempDir()
	script := func(name string) string {
		return "#!/bin/sh\ntouch '" + filepath.Join(markers, name) + "'\nexit 0\n"
	}
	hooksDir := filepath.Join(dir, ".git", "hooks")
	custom := filepath.Join(t.TempDir(), "custom-hooks")
	for _, d := range []string{hooksDir, custom} {
		for _, h := range hookNames {
			write(t, d, h, script(filepath.Base(d)+"-"+h))
			os.Chmod(filepath.Join(d, h), 0o755)
		}
	}
	bin := t.TempDir()
	for _, name := range []string{"gpg", "fsmonitor", "pager"} {
		write(t, bin, name, script(name))
		os.Chmod(filepath.Join(bin, name), 0o755)
	}
	testGit(t, dir, "config", "core.hooksPath", custom)
	testGit(t, dir, "config", "commit.gpgSign", "true")
	testGit(t, dir, "config", "gpg.program", filepath.Join(bin, "gpg"))
	testGit(t, dir, "config", "core.fsmonitor", filepath.Join(bin, "fsmonitor"))
	testGit(t, dir, "config", "core.pager", filepath.Join(bin, "pager"))
	testGit(t, dir, "config", "pager.log", "true")

	// The hooks work when git runs them: the test would see them.
	probe := t.TempDir()
	testGit(t, probe, "init", "-q")
	write(t, probe, ".git/hooks/post-commit", script("probe"))
	os.Chmod(filepath.Join(probe, ".git/hooks/post-commit"), 0o755)
	testGit(t, probe, "commit", "-q", "--allow-empty", "-m", "probe")
	if _, err := os.Stat(filepath.Join(markers, "probe")); err != nil {
		t.Fatalf("a hook installed the test's way does not run under git: %v", err)
	}
	os.Remove(filepath.Join(markers, "probe"))

	r := open(t, dir)
	wt, branch := addWorktree(t, r, "hooks")
	if err := Setup(ctx, dir, wt, []string{"greet.sh"}, "true", os.Environ()); err != nil {
		t.Fatal(err)
	}
	write(t, wt, "a.txt", "a\n")
	if _, err := Commit(ctx, wt, "task", runTask("t1")); err != nil {
		t.Fatalf("Commit = %v", err)
	}
	if _, _, err := FindCommit(ctx, wt, runTask("t1")); err != nil {
		t.Fatal(err)
	}
	if _, err := Diff(ctx, wt, "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Merge(ctx, "release", branch, MergeSquash, "squash"); err != nil {
		t.Fatalf("Merge(squash) = %v", err)
	}
	if _, err := r.Merge(ctx, "main", branch, MergeFastForward, ""); err != nil {
		t.Fatalf("Merge(ff into the checkout) = %v", err)
	}
	if err := r.RemoveWorktree(ctx, wt); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(markers)
	for _, e := range left {
		t.Errorf("repository code ran: %s", e.Name())
	}
}
