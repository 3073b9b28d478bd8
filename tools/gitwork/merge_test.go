package gitwork

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// runBranch makes a run branch off main in a worktree with one commit per
// file given, and returns the worktree and branch.
func runBranch(t *testing.T, r *Repo, name string, files map[string]string) (string, string) {
	t.Helper()
	wt, branch := addWorktree(t, r, name)
	i := 0
	for rel, content := range files {
		write(t, wt, rel, content)
		i++
		if _, err := Commit(context.Background(), wt, "task "+rel, []Trailer{{"Apserver-Task", rel}}); err != nil {
			t.Fatal(err)
		}
	}
	return wt, branch
}

func TestMergeNotCheckedOut(t *testing.T) {
	for _, mode := range []MergeMode{MergeFastForward, MergeSquash} {
		t.Run(string(mode), func(t *testing.T) {
			ctx := context.Background()
			dir := newRepo(t)
			testGit(t, dir, "checkout", "-q", "-b", "dev")
			write(t, dir, "greet.sh", "user's unstaged edit on dev\n")
			r := open(t, dir)
			before := tree(t, dir)
			oldMain := testGit(t, dir, "rev-parse", "main")
			_, branch := runBranch(t, r, "m", map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
			tip := testGit(t, dir, "rev-parse", branch)

			sha, err := r.Merge(ctx, "main", branch, mode, "Run 0192f3a4: add a and b")
			if err != nil {
				t.Fatalf("Merge = %v", err)
			}
			if got := testGit(t, dir, "rev-parse", "main"); got != sha {
				t.Errorf("main at %s, Merge returned %s", got, sha)
			}
			switch mode {
			case MergeFastForward:
				if sha != tip {
					t.Errorf("ff Merge = %s, want the branch tip %s", sha, tip)
				}
			case MergeSquash:
				if got := testGit(t, dir, "rev-parse", sha+"^"); got != oldMain {
					t.Errorf("squash commit's parent = %s, want %s", got, oldMain)
				}
				if got := testGit(t, dir, "rev-list", "--count", oldMain+".."+sha); got != "1" {
					t.Errorf("squash added %s commits, want 1", got)
				}
				if a, b := testGit(t, dir, "rev-parse", sha+"^{tree}"), testGit(t, dir, "rev-parse", tip+"^{tree}"); a != b {
					t.Errorf("squash tree %s, branch tree %s", a, b)
				}
				want := "Run 0192f3a4: add a and b\n\n" + SquashTrailer + ": " + tip
				if got := testGit(t, dir, "log", "-1", "--format=%B", sha); got != want {
					t.Errorf("squash message %q, want %q", got, want)
				}
			}
			if got := testGit(t, dir, "rev-parse", branch); got != tip {
				t.Errorf("branch moved to %s", got)
			}
			if after := tree(t, dir); !equalMaps(before, after) {
				t.Errorf("the user's checkout changed")
			}
			if got := testGit(t, dir, "symbolic-ref", "HEAD"); got != "refs/heads/dev" {
				t.Errorf("user's HEAD = %s", got)
			}

			// Merge done but not recorded: the repeat changes nothing.
			again, err := r.Merge(ctx, "main", branch, mode, "Run 0192f3a4: add a and b")
			if err != nil || again != sha {
				t.Errorf("Merge again = %s, %v; want %s", again, err, sha)
			}
			if got := testGit(t, dir, "rev-parse", "main"); got != sha {
				t.Errorf("main at %s after the repeat, want %s", got, sha)
			}
		})
	}
}

func TestMergeDiverged(t *testing.T) {
	for _, viaWorktree := range []bool{false, true} {
		name := "merge-tree"
		if viaWorktree {
			name = "temporary worktree"
		}
		t.Run(name, func(t *testing.T) {
			defer func(v bool) { useMergeTree = v }(useMergeTree)
			useMergeTree = !viaWorktree
			ctx := context.Background()
			dir := newRepo(t)
			r := open(t, dir)
			_, branch := runBranch(t, r, "d", map[string]string{"a.txt": "a\n"})
			_, clash := runBranch(t, r, "c", map[string]string{"main.txt": "from the run\n"})
			testGit(t, dir, "checkout", "-q", "-b", "dev")
			testGit(t, dir, "branch", "-f", "main", "dev")
			// main moves on while the run works, in a checkout elsewhere.
			other := filepath.Join(t.TempDir(), "other")
			testGit(t, dir, "worktree", "add", "-q", "--detach", other, "main")
			write(t, other, "main.txt", "from main\n")
			testGit(t, other, "add", "-A")
			testGit(t, other, "commit", "-q", "-m", "main moves on")
			moved := testGit(t, other, "rev-parse", "HEAD")
			testGit(t, dir, "update-ref", "refs/heads/main", moved)

			if _, err := r.Merge(ctx, "main", branch, MergeFastForward, ""); !errors.Is(err, ErrNotFastForward) {
				t.Errorf("ff Merge onto a moved base = %v, want ErrNotFastForward", err)
			}
			if _, err := r.Merge(ctx, "main", clash, MergeSquash, "clash"); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "main.txt") {
				t.Errorf("conflicting squash Merge = %v, want ErrConflict naming main.txt", err)
			}
			if got := testGit(t, dir, "rev-parse", "main"); got != moved {
				t.Fatalf("a failed Merge moved main to %s", got)
			}
			sha, err := r.Merge(ctx, "main", branch, MergeSquash, "squash")
			if err != nil {
				t.Fatalf("squash Merge onto a moved base = %v", err)
			}
			if got := testGit(t, dir, "rev-parse", sha+"^"); got != moved {
				t.Errorf("squash commit's parent = %s, want %s", got, moved)
			}
			if got := testGit(t, dir, "ls-tree", "--name-only", sha); got != ".gitignore\na.txt\ngreet.sh\nmain.txt" {
				t.Errorf("squash tree:\n%s", got)
			}
			if again, err := r.Merge(ctx, "main", branch, MergeSquash, "squash"); err != nil || again != sha {
				t.Errorf("squash Merge again = %s, %v; want %s", again, err, sha)
			}
			list := testGit(t, dir, "worktree", "list", "--porcelain")
			if strings.Count(list, "worktree ") != 4 {
				t.Errorf("worktrees left behind:\n%s", list)
			}
		})
	}
}

// TestMergeSquashBuiltNotRecorded: killed after the squash commit was
// written but before main was moved, a repeat adds exactly one commit.
func TestMergeSquashBuiltNotRecorded(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	testGit(t, dir, "checkout", "-q", "-b", "dev")
	r := open(t, dir)
	_, branch := runBranch(t, r, "s", map[string]string{"a.txt": "a\n"})
	oldMain := testGit(t, dir, "rev-parse", "main")
	tip := testGit(t, dir, "rev-parse", branch)
	if _, err := r.squash(ctx, oldMain, tip, true, "squash", []Trailer{{SquashTrailer, tip}}); err != nil {
		t.Fatal(err)
	}
	sha, err := r.Merge(ctx, "main", branch, MergeSquash, "squash")
	if err != nil {
		t.Fatalf("Merge = %v", err)
	}
	if got := testGit(t, dir, "rev-list", "--count", oldMain+".."+sha); got != "1" {
		t.Errorf("main gained %s commits, want 1", got)
	}
}

func TestMergeCheckedOutClean(t *testing.T) {
	for _, mode := range []MergeMode{MergeFastForward, MergeSquash} {
		t.Run(string(mode), func(t *testing.T) {
			ctx := context.Background()
			dir := newRepo(t)
			write(t, dir, "notes.txt", "untracked, the user's\n")
			write(t, dir, "debug.log", "ignored, the user's\n")
			r := open(t, dir)
			_, branch := runBranch(t, r, "c", map[string]string{"a.txt": "a\n"})
			sha, err := r.Merge(ctx, "main", branch, mode, "merge the run")
			if err != nil {
				t.Fatalf("Merge into the clean checkout = %v", err)
			}
			if got := testGit(t, dir, "rev-parse", "HEAD"); got != sha {
				t.Errorf("checkout HEAD = %s, want %s", got, sha)
			}
			if got := read(t, dir, "a.txt"); got != "a\n" {
				t.Errorf("a.txt in the checkout = %q", got)
			}
			if got := testGit(t, dir, "status", "--porcelain"); got != "?? notes.txt" {
				t.Errorf("status after Merge = %q", got)
			}
			if got := read(t, dir, "notes.txt") + read(t, dir, "debug.log"); got != "untracked, the user's\nignored, the user's\n" {
				t.Errorf("the user's files = %q", got)
			}
			if again, err := r.Merge(ctx, "main", branch, mode, "merge the run"); err != nil || again != sha {
				t.Errorf("Merge again = %s, %v; want %s", again, err, sha)
			}
		})
	}
}

func TestMergeBadInput(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	_, branch := runBranch(t, r, "b", map[string]string{"a.txt": "a\n"})
	tests := []struct {
		base, branch string
		mode         MergeMode
		want         error
	}{
		{"main", branch, "rebase", nil},
		{"main", "no-such-branch", MergeFastForward, ErrUnknownRef},
		{"no-such-base", branch, MergeFastForward, ErrUnknownRef},
		{"main", "--all", MergeFastForward, nil},
		{"main..x", branch, MergeSquash, nil},
	}
	for _, tt := range tests {
		if _, err := r.Merge(ctx, tt.base, tt.branch, tt.mode, "m"); err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("Merge(%q, %q, %q) = %v, want %v", tt.base, tt.branch, tt.mode, err, tt.want)
		}
	}
}

// TestMergeBaseInDeletedWorktree: base checked out only in a worktree
// whose directory was deleted is merged by moving the ref.
func TestMergeBaseInDeletedWorktree(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	testGit(t, dir, "checkout", "-q", "-b", "dev")
	gone := filepath.Join(t.TempDir(), "gone")
	testGit(t, dir, "worktree", "add", "-q", gone, "main")
	r := open(t, dir)
	_, branch := runBranch(t, r, "g", map[string]string{"a.txt": "a\n"})
	removeAll(t, gone)
	sha, err := r.Merge(ctx, "main", branch, MergeFastForward, "")
	if err != nil {
		t.Fatalf("Merge = %v", err)
	}
	if got := testGit(t, dir, "rev-parse", "main"); got != sha {
		t.Errorf("main at %s, want %s", got, sha)
	}
}
