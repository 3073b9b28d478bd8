package gitwork

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A run merged into main is undone by one commit naming it: main's files
// are byte for byte what they were before, the user's checkout follows,
// and a second Revert finds the first.
func TestRevertRun(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	before := tree(t, dir)
	wt, branch := addWorktree(t, r, "rv")
	for i, f := range []string{"a.txt", "greet.sh", "b.txt"} {
		write(t, wt, f, strings.Repeat("x", i+1)+"\n")
		if _, err := Commit(ctx, wt, "task "+f, []Trailer{{"Apserver-Run", "run1"}, {"Apserver-Task", f}}); err != nil {
			t.Fatal(err)
		}
	}
	tip := testGit(t, dir, "rev-parse", branch)
	if _, err := r.Merge(ctx, "main", branch, MergeFastForward, ""); err != nil {
		t.Fatal(err)
	}
	commits, err := RunCommits(ctx, dir, tip, "run1")
	if err != nil || len(commits) != 3 {
		t.Fatalf("RunCommits = %v, %v", commits, err)
	}
	mark := []Trailer{{"Apserver-Revert-Of", "run1"}}
	sha, err := r.Revert(ctx, "main", commits, "Revert run run1", mark)
	if err != nil {
		t.Fatal(err)
	}
	if got := tree(t, dir); !reflect.DeepEqual(got, before) {
		t.Errorf("after the revert the checkout is %v, want %v", got, before)
	}
	if n := testGit(t, dir, "rev-list", "--count", tip+".."+sha); n != "1" {
		t.Errorf("%s commits on top of the run, want 1", n)
	}
	if msg := testGit(t, dir, "log", "-1", "--format=%B", sha); !strings.Contains(msg, "Revert run run1") || !strings.Contains(msg, "Apserver-Revert-Of: run1") {
		t.Errorf("revert message %q", msg)
	}
	if again, err := r.Revert(ctx, "main", commits, "Revert run run1", mark); err != nil || again != sha {
		t.Errorf("Revert again = %s, %v; want %s", again, err, sha)
	}
}

// A revert that conflicts with later work stops and names the files;
// nothing changes.
func TestRevertConflict(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	wt, branch := addWorktree(t, r, "rc")
	write(t, wt, "greet.sh", "#!/bin/sh\necho hi\n")
	c, err := Commit(ctx, wt, "task", []Trailer{{"Apserver-Run", "run2"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Merge(ctx, "main", branch, MergeFastForward, ""); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "greet.sh", "#!/bin/sh\necho hi there\n")
	testGit(t, dir, "commit", "-qam", "later work")
	head := testGit(t, dir, "rev-parse", "main")
	_, err = r.Revert(ctx, "main", []string{c}, "Revert run run2", nil)
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) || !reflect.DeepEqual(ce.Files, []string{"greet.sh"}) {
		t.Fatalf("Revert over later work = %v, want a conflict in greet.sh", err)
	}
	if got := testGit(t, dir, "rev-parse", "main"); got != head || read(t, dir, "greet.sh") != "#!/bin/sh\necho hi there\n" {
		t.Errorf("a conflicting revert changed main (%s, want %s)", got, head)
	}
}

// Reverting one task keeps the run's records as later commits left them,
// and reverts the task's own files.
func TestRevertKeep(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	wt, branch := addWorktree(t, r, "rk")
	write(t, wt, "a.txt", "a\n")
	write(t, wt, ".apserver/runs/x/state.md", "after task 1\n")
	c1, err := Commit(ctx, wt, "task 1", []Trailer{{"Apserver-Task", "1"}})
	if err != nil {
		t.Fatal(err)
	}
	write(t, wt, "b.txt", "b\n")
	write(t, wt, ".apserver/runs/x/state.md", "after task 2\n")
	c2, err := Commit(ctx, wt, "task 2", []Trailer{{"Apserver-Task", "2"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Revert(ctx, branch, []string{c1}, "revert task 1", nil); !errors.Is(err, ErrConflict) {
		t.Fatalf("Revert without keep = %v, want a conflict in state.md", err)
	}
	sha, err := r.Revert(ctx, branch, []string{c1}, "revert task 1", nil, ".apserver/runs/x")
	if err != nil {
		t.Fatal(err)
	}
	if got := testGit(t, dir, "ls-tree", "-r", "--name-only", sha); strings.Contains(got, "a.txt") || !strings.Contains(got, "b.txt") {
		t.Errorf("files after reverting task 1:\n%s", got)
	}
	if got := testGit(t, dir, "show", sha+":.apserver/runs/x/state.md"); got != "after task 2" {
		t.Errorf("state.md = %q, want it as task 2 left it", got)
	}
	if _, err := os.Stat(filepath.Join(wt, "a.txt")); !os.IsNotExist(err) || testGit(t, wt, "rev-parse", "HEAD") != sha {
		t.Errorf("the run's checkout of %s did not follow (a.txt: %v; HEAD %s, want %s after %s)", branch, err, testGit(t, wt, "rev-parse", "HEAD"), sha, c2)
	}
}

// A merge commit (GitHub's merge of a pull request) is reverted against
// its first parent.
func TestRevertMergeCommit(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	before := testGit(t, dir, "rev-parse", "main^{tree}")
	wt, branch := addWorktree(t, r, "mc")
	write(t, wt, "a.txt", "a\n")
	if _, err := Commit(ctx, wt, "task", nil); err != nil {
		t.Fatal(err)
	}
	testGit(t, dir, "merge", "-q", "--no-ff", "-m", "Merge pull request #1", branch)
	merge := testGit(t, dir, "rev-parse", "main")
	sha, err := r.Revert(ctx, "main", []string{merge}, "Revert the run", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := testGit(t, dir, "rev-parse", sha+"^{tree}"); got != before {
		t.Errorf("after reverting the merge commit the tree is %s, want %s", got, before)
	}
}
