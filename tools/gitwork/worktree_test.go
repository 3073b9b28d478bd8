package gitwork

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAddWorktree(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	before := tree(t, dir)
	mainSHA := testGit(t, dir, "rev-parse", "main")

	path := filepath.Join(t.TempDir(), "nested", "wt")
	if err := r.AddWorktree(ctx, path, "apserver/abc-task", "main"); err != nil {
		t.Fatalf("AddWorktree = %v", err)
	}
	if got := read(t, path, "greet.sh"); got != "#!/bin/sh\necho hello\n" {
		t.Errorf("worktree greet.sh = %q", got)
	}
	if got := testGit(t, path, "symbolic-ref", "HEAD"); got != "refs/heads/apserver/abc-task" {
		t.Errorf("worktree HEAD = %s", got)
	}
	if got := testGit(t, dir, "rev-parse", "apserver/abc-task"); got != mainSHA {
		t.Errorf("branch at %s, want main's %s", got, mainSHA)
	}
	if got, err := testGitErr(dir, "config", "--get-regexp", `^branch\.apserver`); err == nil {
		t.Errorf("branch tracks something: %s", got)
	}
	if got := testGit(t, dir, "symbolic-ref", "HEAD"); got != "refs/heads/main" {
		t.Errorf("user's HEAD = %s, want main", got)
	}

	// Again: nothing changes, not even an edit made in the worktree since.
	write(t, path, "greet.sh", "edited\n")
	write(t, path, "new.txt", "new\n")
	if err := r.AddWorktree(ctx, path, "apserver/abc-task", "main"); err != nil {
		t.Fatalf("AddWorktree again = %v", err)
	}
	if got := read(t, path, "greet.sh") + read(t, path, "new.txt"); got != "edited\nnew\n" {
		t.Errorf("second AddWorktree changed the worktree: %q", got)
	}
	if after := tree(t, dir); !equalMaps(before, after) {
		t.Errorf("user's checkout changed: %v -> %v", before, after)
	}
}

func TestAddWorktreeRefuses(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	path, _ := addWorktree(t, r, "one")

	full := t.TempDir()
	write(t, full, "keep.txt", "mine\n")
	tests := []struct {
		name, path, branch, base string
		want                     error
	}{
		{"path has another branch", path, "apserver/other", "main", ErrWorktreeConflict},
		{"main work tree", dir, "apserver/other", "main", ErrWorktreeConflict},
		{"non-empty directory", full, "apserver/other", "main", ErrWorktreeConflict},
		{"unknown base", filepath.Join(t.TempDir(), "x"), "apserver/x", "no-such-base", ErrUnknownRef},
		{"invalid branch", filepath.Join(t.TempDir(), "y"), "apserver/a..b", "main", nil},
		{"option as branch", filepath.Join(t.TempDir(), "z"), "-f", "main", nil},
	}
	for _, tt := range tests {
		err := r.AddWorktree(ctx, tt.path, tt.branch, tt.base)
		if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("%s: AddWorktree(%s, %s, %s) = %v, want %v", tt.name, tt.path, tt.branch, tt.base, err, tt.want)
		}
	}
	if got := read(t, full, "keep.txt"); got != "mine\n" {
		t.Errorf("non-empty directory changed: %q", got)
	}
	if _, err := testGitErr(dir, "rev-parse", "--verify", "apserver/other"); err == nil {
		t.Errorf("a refused AddWorktree created its branch")
	}
}

// TestAddWorktreeConverges repeats AddWorktree on each state a kill of
// apserver (and its git) can leave behind.
func TestAddWorktreeConverges(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// crash leaves the state behind for path and branch.
		crash func(t *testing.T, dir, path, branch string)
		// keep is a file that must survive (a commit of the branch).
		keep string
	}{
		{"branch created, no worktree yet", func(t *testing.T, dir, path, branch string) {
			testGit(t, dir, "branch", branch, "main")
		}, ""},
		{"branch with commits, worktree removed", func(t *testing.T, dir, path, branch string) {
			testGit(t, dir, "worktree", "add", "-q", "-b", branch, path, "main")
			write(t, path, "done.txt", "task 1\n")
			testGit(t, path, "add", "-A")
			testGit(t, path, "commit", "-q", "-m", "task 1")
			testGit(t, dir, "worktree", "remove", path)
		}, "done.txt"},
		{"killed before checkout", func(t *testing.T, dir, path, branch string) {
			testGit(t, dir, "worktree", "add", "-q", "--no-checkout", "--lock", "--reason", "initializing", "-b", branch, path, "main")
		}, ""},
		{"killed half-way through checkout", func(t *testing.T, dir, path, branch string) {
			testGit(t, dir, "worktree", "add", "-q", "--lock", "--reason", "initializing", "-b", branch, path, "main")
			os.Remove(filepath.Join(path, "greet.sh"))
			gitDir := testGit(t, path, "rev-parse", "--absolute-git-dir")
			os.Remove(filepath.Join(gitDir, "index"))
		}, ""},
		{"killed before the worktree's .git was written", func(t *testing.T, dir, path, branch string) {
			testGit(t, dir, "worktree", "add", "-q", "--no-checkout", "--lock", "--reason", "initializing", "-b", branch, path, "main")
			os.Remove(filepath.Join(path, ".git"))
		}, ""},
		{"killed before the directory was made", func(t *testing.T, dir, path, branch string) {
			testGit(t, dir, "worktree", "add", "-q", "--no-checkout", "--lock", "--reason", "initializing", "-b", branch, path, "main")
			os.RemoveAll(path)
		}, ""},
		{"killed half-way through RemoveWorktree", func(t *testing.T, dir, path, branch string) {
			testGit(t, dir, "worktree", "add", "-q", "-b", branch, path, "main")
			write(t, path, "done.txt", "task 1\n")
			testGit(t, path, "add", "-A")
			testGit(t, path, "commit", "-q", "-m", "task 1")
			testGit(t, dir, "worktree", "lock", "--reason", removing, path)
			os.Remove(filepath.Join(path, "greet.sh"))
		}, "done.txt"},
		{"killed half-way through RemoveWorktree, .git gone", func(t *testing.T, dir, path, branch string) {
			testGit(t, dir, "worktree", "add", "-q", "-b", branch, path, "main")
			testGit(t, dir, "worktree", "lock", "--reason", removing, path)
			os.Remove(filepath.Join(path, ".git"))
		}, ""},
		{"directory deleted", func(t *testing.T, dir, path, branch string) {
			testGit(t, dir, "worktree", "add", "-q", "-b", branch, path, "main")
			os.RemoveAll(path)
		}, ""},
		{"empty directory made", func(t *testing.T, dir, path, branch string) {
			os.MkdirAll(path, 0o755)
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t)
			r := open(t, dir)
			path := filepath.Join(t.TempDir(), "wt")
			branch := "apserver/run-x"
			tt.crash(t, dir, path, branch)
			if err := r.AddWorktree(ctx, path, branch, "main"); err != nil {
				t.Fatalf("AddWorktree after the crash = %v", err)
			}
			if err := r.AddWorktree(ctx, path, branch, "main"); err != nil {
				t.Fatalf("AddWorktree once more = %v", err)
			}
			if got := testGit(t, path, "status", "--porcelain"); got != "" {
				t.Errorf("worktree status = %q, want clean", got)
			}
			if got := read(t, path, "greet.sh"); got != "#!/bin/sh\necho hello\n" {
				t.Errorf("greet.sh = %q", got)
			}
			if tt.keep != "" {
				read(t, path, tt.keep)
			}
			list := testGit(t, dir, "worktree", "list", "--porcelain")
			if strings.Contains(list, "locked") || strings.Contains(list, "prunable") {
				t.Errorf("worktree list after AddWorktree:\n%s", list)
			}
			if got := strings.Count(list+"\n", "branch refs/heads/"+branch+"\n"); got != 1 {
				t.Errorf("worktrees of %s = %d, want 1:\n%s", branch, got, list)
			}
		})
	}
}

func TestRemoveWorktree(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	path, branch := addWorktree(t, r, "rm")
	write(t, path, "a.txt", "a\n")
	sha, err := Commit(ctx, path, "task", []Trailer{{"Apserver-Task", "1"}})
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, "uncommitted.txt", "x\n")
	if err := r.RemoveWorktree(ctx, path); err != nil {
		t.Fatalf("RemoveWorktree = %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("worktree directory still there: %v", err)
	}
	if got := testGit(t, dir, "rev-parse", branch); got != sha {
		t.Errorf("branch at %s after removal, want %s", got, sha)
	}
	if err := r.RemoveWorktree(ctx, path); err != nil {
		t.Errorf("RemoveWorktree again = %v", err)
	}
	if err := r.RemoveWorktree(ctx, dir); err == nil {
		t.Errorf("RemoveWorktree(main work tree) = nil")
	}
	read(t, dir, "greet.sh")

	// A half-created one.
	half := filepath.Join(t.TempDir(), "half")
	testGit(t, dir, "worktree", "add", "-q", "--no-checkout", "--lock", "--reason", "initializing", "-b", "apserver/half", half, "main")
	if err := r.RemoveWorktree(ctx, half); err != nil {
		t.Errorf("RemoveWorktree(half-created) = %v", err)
	}
	if list := testGit(t, dir, "worktree", "list", "--porcelain"); strings.Contains(list, "half") {
		t.Errorf("half-created worktree still listed:\n%s", list)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
