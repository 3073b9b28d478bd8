package gitwork

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// checkout is what the user sees of their checkout: status, every file's
// bytes and mode, HEAD and the index file itself.
type checkout struct {
	status, head, index string
	files               map[string]string
}

func snapshot(t *testing.T, dir string) checkout {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return checkout{
		status: testGit(t, dir, "--no-optional-locks", "status", "--porcelain=v2", "--untracked-files=all", "--ignored"),
		head:   testGit(t, dir, "rev-parse", "HEAD") + " " + testGit(t, dir, "symbolic-ref", "HEAD"),
		index:  hex.EncodeToString(sum[:]),
		files:  tree(t, dir),
	}
}

func (c checkout) diff(t *testing.T, after checkout, when string) {
	t.Helper()
	if c.status != after.status {
		t.Errorf("%s: git status changed:\n%s\nwas\n%s", when, after.status, c.status)
	}
	if c.head != after.head {
		t.Errorf("%s: HEAD changed: %s, was %s", when, after.head, c.head)
	}
	if c.index != after.index {
		t.Errorf("%s: the index file changed", when)
	}
	if !equalMaps(c.files, after.files) {
		t.Errorf("%s: files changed:\n%v\nwas\n%v", when, after.files, c.files)
	}
}

// TestDirtyCheckoutUntouched: the user's checkout, with a staged new file,
// a staged edit, an unstaged edit on top of it, an unstaged edit, an
// untracked and an ignored file, keeps every byte of it (and of its index)
// through everything a run does, up to the Merge that it refuses.
func TestDirtyCheckoutUntouched(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	write(t, dir, "lib.sh", "lib v1\n")
	testGit(t, dir, "add", "lib.sh")
	testGit(t, dir, "commit", "-q", "-m", "lib")
	write(t, dir, "staged-new.txt", "staged new file\n")
	write(t, dir, "lib.sh", "lib v2 staged\n")
	testGit(t, dir, "add", "staged-new.txt", "lib.sh")
	write(t, dir, "lib.sh", "lib v3 unstaged on top\n")
	write(t, dir, "greet.sh", "#!/bin/sh\necho user edit, unstaged\n")
	write(t, dir, "scratch.txt", "untracked\n")
	write(t, dir, "run.log", "ignored\n")
	write(t, dir, ".env", "SECRET=1\n")
	// A clean tracked file whose time changed: any git status that may
	// would now rewrite the index to refresh its stat cache.
	later := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(dir, ".gitignore"), later, later)
	before := snapshot(t, dir)
	if !strings.Contains(before.status, "staged-new.txt") || !strings.Contains(before.status, " MM ") {
		t.Fatalf("the set-up is not dirty as meant:\n%s", before.status)
	}

	r := open(t, dir)
	path := filepath.Join(t.TempDir(), "run")
	branch := BranchName("0192f3a4", "add a shout option")
	if err := r.AddWorktree(ctx, path, branch, "main"); err != nil {
		t.Fatalf("AddWorktree = %v", err)
	}
	before.diff(t, snapshot(t, dir), "after AddWorktree")
	if err := Setup(ctx, r.Root(), path, []string{".env", "lib.sh"}, "echo ok > setup.out", os.Environ()); err != nil {
		t.Fatalf("Setup = %v", err)
	}
	before.diff(t, snapshot(t, dir), "after Setup")
	if got := read(t, path, "lib.sh"); got != "lib v1\n" {
		t.Errorf("Setup copied the user's uncommitted lib.sh over the committed one: %q", got)
	}
	write(t, path, "greet.sh", "#!/bin/sh\necho HELLO\n")
	sha, err := Commit(ctx, path, "shout", runTask("t1"))
	if err != nil {
		t.Fatalf("Commit = %v", err)
	}
	before.diff(t, snapshot(t, dir), "after Commit")
	if got := testGit(t, path, "show", "--name-only", "--format=", sha); got != "greet.sh" {
		t.Errorf("the task commit holds %q, want greet.sh alone (not what Setup copied)", got)
	}
	if _, err := Diff(ctx, path, "main"); err != nil {
		t.Fatalf("Diff = %v", err)
	}
	before.diff(t, snapshot(t, dir), "after Diff")
	for _, mode := range []MergeMode{MergeFastForward, MergeSquash} {
		if _, err := r.Merge(ctx, "main", branch, mode, "merge"); !errors.Is(err, ErrBaseDirty) {
			t.Errorf("Merge(%s) into the dirty checkout = %v, want ErrBaseDirty", mode, err)
		}
		before.diff(t, snapshot(t, dir), "after Merge "+string(mode))
	}
	if err := r.RemoveWorktree(ctx, path); err != nil {
		t.Fatalf("RemoveWorktree = %v", err)
	}
	before.diff(t, snapshot(t, dir), "after RemoveWorktree")
	if got := testGit(t, dir, "rev-parse", branch); got != sha {
		t.Errorf("the run's branch is at %s, want %s (kept for review)", got, sha)
	}
}
