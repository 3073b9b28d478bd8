package gitwork

import (
	"context"
	"errors"
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
