package gitwork

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	write(t, dir, "sub/deeper/x.txt", "x\n")
	r, err := Open(ctx, filepath.Join(dir, "sub", "deeper"))
	if err != nil {
		t.Fatalf("Open(subdir) = %v", err)
	}
	if canonical(r.Root()) != canonical(dir) {
		t.Errorf("Root() = %s, want %s", r.Root(), dir)
	}
	if b, err := r.CurrentBranch(ctx); err != nil || b != "main" {
		t.Errorf("CurrentBranch() = %q, %v; want main", b, err)
	}
	want := testGit(t, dir, "rev-parse", "HEAD")
	for _, ref := range []string{"HEAD", "main", "refs/heads/main", want[:10]} {
		if got, err := r.HeadSHA(ctx, ref); err != nil || got != want {
			t.Errorf("HeadSHA(%q) = %q, %v; want %s", ref, got, err, want)
		}
	}
	for _, ref := range []string{"nope", "", "--all", "main~5"} {
		if got, err := r.HeadSHA(ctx, ref); !errors.Is(err, ErrUnknownRef) {
			t.Errorf("HeadSHA(%q) = %q, %v; want ErrUnknownRef", ref, got, err)
		}
	}
	testGit(t, dir, "checkout", "-q", "--detach")
	if b, err := r.CurrentBranch(ctx); !errors.Is(err, ErrDetachedHead) {
		t.Errorf("CurrentBranch() detached = %q, %v; want ErrDetachedHead", b, err)
	}
}

func TestOpenNotRepository(t *testing.T) {
	ctx := context.Background()
	plain := t.TempDir()
	if _, err := Open(ctx, plain); !errors.Is(err, ErrNotRepository) {
		t.Errorf("Open(plain dir) = %v, want ErrNotRepository", err)
	}
	bare := t.TempDir()
	testGit(t, bare, "init", "-q", "--bare")
	if _, err := Open(ctx, bare); !errors.Is(err, ErrNotRepository) {
		t.Errorf("Open(bare repo) = %v, want ErrNotRepository", err)
	}
	var ge *GitError
	if _, err := Open(ctx, plain); !errors.As(err, &ge) || !strings.Contains(ge.Stderr, "not a git repository") || ge.Args[0] != "rev-parse" {
		t.Errorf("Open(plain dir) error %v does not carry git's stderr and command", err)
	}
	if _, err := Open(ctx, filepath.Join(plain, "missing")); err == nil {
		t.Errorf("Open(missing dir) = nil error")
	}
}

var branchRE = regexp.MustCompile(`^apserver/[a-z0-9]{1,8}(-[a-z0-9]+)*$`)

func TestBranchName(t *testing.T) {
	tests := []struct{ id, request, want string }{
		{"0192f3a4-5b6c-7d8e-9f00-112233445566", "add a shout option to greet.sh", "apserver/0192f3a4-add-a-shout-option-to-greet-sh"},
		{"RUN_42", "Fix the flaky date tests!!", "apserver/run42-fix-the-flaky-date-tests"},
		{"abc", "", "apserver/abc"},
		{"abc", "…", "apserver/abc"},
		{"", "x", "apserver/run-x"},
		{"---", "Ünïcode naïve café", "apserver/run-n-code-na-ve-caf"},
		{"id", "../../etc/passwd; rm -rf / @{u} ~1 ^2 :x .lock", "apserver/id-etc-passwd-rm-rf-u-1-2-x-lock"},
		{"id", strings.Repeat("word ", 20), "apserver/id-word-word-word-word-word-word-word-word"},
		{"id", strings.Repeat("x", 100), "apserver/id-" + strings.Repeat("x", 40)},
	}
	for _, tt := range tests {
		if got := BranchName(tt.id, tt.request); got != tt.want {
			t.Errorf("BranchName(%q, %q) = %q, want %q", tt.id, tt.request, got, tt.want)
		}
	}
}

// FuzzBranchName: any id and request give a bounded name that git accepts
// as a branch.
func FuzzBranchName(f *testing.F) {
	f.Add("0192f3a4", "add a shout option")
	f.Add("", "..")
	f.Add("@{", "a.lock/b//c\x00\x7f")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, id, request string) {
		got := BranchName(id, request)
		if !branchRE.MatchString(got) || len(got) > len("apserver/")+shortIDLen+1+slugLen {
			t.Fatalf("BranchName(%q, %q) = %q: not of the expected form", id, request, got)
		}
		if out, err := testGitErr(dir, "check-ref-format", "--branch", got); err != nil {
			t.Fatalf("BranchName(%q, %q) = %q: git refuses it: %s", id, request, got, out)
		}
	})
}

// A repository just made by git init has no commit; one commit on any
// branch is enough.
func TestHasCommit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	testGit(t, dir, "init", "-q", "-b", "master")
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := r.HasCommit(ctx); ok || err != nil {
		t.Fatalf("HasCommit of a fresh repository = %v, %v; want false", ok, err)
	}
	write(t, dir, "a", "a\n")
	testGit(t, dir, "add", "a")
	testGit(t, dir, "commit", "-q", "-m", "a")
	testGit(t, dir, "checkout", "-q", "--orphan", "empty")
	if ok, err := r.HasCommit(ctx); !ok || err != nil {
		t.Fatalf("HasCommit with a commit on master = %v, %v; want true", ok, err)
	}
}

// Prune makes git forget a worktree whose directory was deleted.
func TestPrune(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	testGit(t, dir, "init", "-q", "-b", "main")
	write(t, dir, "a", "a\n")
	testGit(t, dir, "add", "a")
	testGit(t, dir, "commit", "-q", "-m", "a")
	wt := filepath.Join(t.TempDir(), "wt")
	testGit(t, dir, "worktree", "add", "-q", "-b", "side", wt)
	if err := os.RemoveAll(wt); err != nil {
		t.Fatal(err)
	}
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	if list := testGit(t, dir, "worktree", "list", "--porcelain"); strings.Contains(list, wt) {
		t.Errorf("git still lists the deleted worktree:\n%s", list)
	}
	testGit(t, dir, "rev-parse", "--verify", "side") // the branch stays
}
