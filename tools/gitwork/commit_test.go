package gitwork

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var runTask = func(task string) []Trailer {
	return []Trailer{{"Apserver-Run", "0192f3a4"}, {"Apserver-Task", task}}
}

func TestCommit(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	wt, _ := addWorktree(t, r, "c")
	write(t, wt, "greet.sh", "#!/bin/sh\necho HELLO\n")
	write(t, wt, "new/file.txt", "new\n")
	write(t, wt, "debug.log", "ignored\n")
	os.Remove(filepath.Join(wt, ".gitignore"))
	write(t, wt, ".gitignore", "*.log\n# comment kept\n")

	msg := "Add a shout option\n\n#42 is the issue; this line starts with a hash.\n"
	sha, err := Commit(ctx, wt, msg, runTask("t1"))
	if err != nil {
		t.Fatalf("Commit = %v", err)
	}
	if head := testGit(t, wt, "rev-parse", "HEAD"); head != sha {
		t.Errorf("Commit = %s, HEAD is %s", sha, head)
	}
	if got := testGit(t, wt, "show", "--name-status", "--format=", sha); got != "M\t.gitignore\nM\tgreet.sh\nA\tnew/file.txt" {
		t.Errorf("commit changes:\n%s", got)
	}
	if got := testGit(t, wt, "log", "-1", "--format=%B", sha); got != "Add a shout option\n\n#42 is the issue; this line starts with a hash.\n\nApserver-Run: 0192f3a4\nApserver-Task: t1" {
		t.Errorf("commit message:\n%s", got)
	}
	if got := testGit(t, wt, "log", "-1", "--format=%(trailers:key=Apserver-Task,valueonly)", sha); got != "t1" {
		t.Errorf("git reads the Apserver-Task trailer as %q", got)
	}
	if got := testGit(t, wt, "log", "-1", "--format=%an <%ae>|%cn <%ce>", sha); got != "apserver <apserver@localhost>|apserver <apserver@localhost>" {
		t.Errorf("identity without user config = %s", got)
	}
	if got := testGit(t, wt, "status", "--porcelain", "--ignored"); got != "!! debug.log" {
		t.Errorf("status after Commit = %q", got)
	}

	// The replay of a commit that was made but not recorded: same SHA,
	// nothing committed, the work tree left as it is.
	write(t, wt, "later.txt", "later\n")
	again, err := Commit(ctx, wt, "a different message", runTask("t1"))
	if err != nil || again != sha {
		t.Errorf("Commit again = %s, %v; want %s", again, err, sha)
	}
	if got := testGit(t, wt, "status", "--porcelain"); got != "?? later.txt" {
		t.Errorf("status after the replay = %q", got)
	}

	// An empty change still commits.
	os.Remove(filepath.Join(wt, "later.txt"))
	empty, err := Commit(ctx, wt, "nothing to do", runTask("t2"))
	if err != nil || empty == sha {
		t.Fatalf("Commit(no change) = %s, %v", empty, err)
	}
	if got := testGit(t, wt, "rev-parse", empty+"^"); got != sha {
		t.Errorf("empty commit's parent = %s, want %s", got, sha)
	}

	// The replay of t1 after t2: still found, not committed again.
	if got, err := Commit(ctx, wt, "x", runTask("t1")); err != nil || got != sha {
		t.Errorf("Commit(t1) after t2 = %s, %v; want %s", got, err, sha)
	}
	if n := testGit(t, wt, "rev-list", "--count", "main..HEAD"); n != "2" {
		t.Errorf("commits on the branch = %s, want 2", n)
	}
}

func TestCommitIdentity(t *testing.T) {
	ctx := context.Background()
	tests := []struct{ config, want string }{
		{"", "apserver <apserver@localhost>"},
		{"user.name=Ada Lovelace", "Ada Lovelace <apserver@localhost>"},
		{"user.email=ada@example.com", "apserver <ada@example.com>"},
		{"user.name=Ada Lovelace;user.email=ada@example.com", "Ada Lovelace <ada@example.com>"},
	}
	for _, tt := range tests {
		dir := newRepo(t)
		for _, kv := range strings.Split(tt.config, ";") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				testGit(t, dir, "config", k, v)
			}
		}
		r := open(t, dir)
		wt, _ := addWorktree(t, r, "id")
		sha, err := Commit(ctx, wt, "m", nil)
		if err != nil {
			t.Fatalf("Commit with config %q = %v", tt.config, err)
		}
		if got := testGit(t, wt, "log", "-1", "--format=%an <%ae>", sha); got != tt.want {
			t.Errorf("Commit with config %q: author %s, want %s", tt.config, got, tt.want)
		}
	}
}

func TestFindCommit(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	wt, _ := addWorktree(t, r, "f")
	if _, ok, err := FindCommit(ctx, wt, runTask("t1")); ok || err != nil {
		t.Errorf("FindCommit before any task = %v, %v", ok, err)
	}
	var shas []string
	for _, task := range []string{"t1", "t2", "t3"} {
		write(t, wt, task+".txt", task)
		sha, err := Commit(ctx, wt, "task "+task, runTask(task))
		if err != nil {
			t.Fatal(err)
		}
		shas = append(shas, sha)
	}
	tests := []struct {
		trailers []Trailer
		want     string
		ok       bool
	}{
		{runTask("t1"), shas[0], true},
		{runTask("t3"), shas[2], true},
		{[]Trailer{{"apserver-task", "t2"}}, shas[1], true},
		{[]Trailer{{"Apserver-Run", "0192f3a4"}}, shas[2], true},
		{runTask("t4"), "", false},
		{[]Trailer{{"Apserver-Run", "other"}, {"Apserver-Task", "t1"}}, "", false},
		{[]Trailer{{"Apserver-Task", "T1"}}, "", false},
	}
	for _, tt := range tests {
		sha, ok, err := FindCommit(ctx, wt, tt.trailers)
		if err != nil || ok != tt.ok || sha != tt.want {
			t.Errorf("FindCommit(%v) = %s, %v, %v; want %s, %v", tt.trailers, sha, ok, err, tt.want, tt.ok)
		}
	}
	for _, bad := range [][]Trailer{nil, {{"", "x"}}, {{"Bad Key", "x"}}, {{"K", "two\nlines"}}, {{"K", ""}}, {{"K:", "v"}}} {
		if _, _, err := FindCommit(ctx, wt, bad); err == nil {
			t.Errorf("FindCommit(%q) = nil error", bad)
		}
		if bad != nil {
			if _, err := Commit(ctx, wt, "m", bad); err == nil {
				t.Errorf("Commit(%q) = nil error", bad)
			}
		}
	}
}

// TestCommitConverges repeats Commit on what a kill between its steps, or
// of git itself, leaves behind.
func TestCommitConverges(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	wt, _ := addWorktree(t, r, "k")

	// Killed after staging, before committing.
	write(t, wt, "staged.txt", "s\n")
	testGit(t, wt, "add", "-A")
	sha, err := Commit(ctx, wt, "task", runTask("t1"))
	if err != nil {
		t.Fatalf("Commit after a kill between add and commit = %v", err)
	}
	if got := testGit(t, wt, "show", "--name-only", "--format=", sha); got != "staged.txt" {
		t.Errorf("commit holds %q", got)
	}

	// git killed while it held the worktree's index lock.
	defer func(d time.Duration) { lockRetry = d }(lockRetry)
	lockRetry = 200 * time.Millisecond
	gitDir := testGit(t, wt, "rev-parse", "--absolute-git-dir")
	lock := filepath.Join(gitDir, "index.lock")
	write(t, gitDir, "index.lock", "")
	old := time.Now().Add(-time.Minute)
	os.Chtimes(lock, old, old)
	write(t, wt, "after-lock.txt", "x\n")
	sha2, err := Commit(ctx, wt, "task", runTask("t2"))
	if err != nil {
		t.Fatalf("Commit with a stale index.lock = %v", err)
	}
	if got := testGit(t, wt, "show", "--name-only", "--format=", sha2); got != "after-lock.txt" {
		t.Errorf("commit holds %q", got)
	}

	// A lock that a live process holds open is waited for, then reported
	// with git's message and the command.
	held, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	os.Chtimes(lock, old, old)
	write(t, wt, "blocked.txt", "x\n")
	_, err = Commit(ctx, wt, "task", runTask("t3"))
	var ge *GitError
	if !errors.As(err, &ge) || ge.Args[0] != "add" || !strings.Contains(ge.Stderr, "index.lock") {
		t.Errorf("Commit with a live index.lock = %v, want a GitError of git add naming the lock", err)
	}
	os.Remove(lock)
}

func TestDiff(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	wt, _ := addWorktree(t, r, "d")
	write(t, wt, "committed.txt", "one\n")
	if _, err := Commit(ctx, wt, "task", runTask("t1")); err != nil {
		t.Fatal(err)
	}
	write(t, wt, "greet.sh", "#!/bin/sh\necho HELLO\n")
	write(t, wt, "untracked.txt", "fresh\n")
	write(t, wt, "skip.log", "ignored\n")
	write(t, wt, "staged.txt", "staged\n")
	testGit(t, wt, "add", "staged.txt")
	indexBefore := testGit(t, wt, "ls-files", "--stage")
	statusBefore := testGit(t, wt, "status", "--porcelain")

	d, err := Diff(ctx, wt, "main")
	if err != nil {
		t.Fatalf("Diff = %v", err)
	}
	for _, want := range []string{"+++ b/committed.txt", "-echo hello", "+echo HELLO", "+++ b/untracked.txt", "+fresh", "+++ b/staged.txt"} {
		if !strings.Contains(d, want) {
			t.Errorf("Diff lacks %q:\n%s", want, d)
		}
	}
	if strings.Contains(d, "skip.log") {
		t.Errorf("Diff shows an ignored file:\n%s", d)
	}
	if got := testGit(t, wt, "ls-files", "--stage"); got != indexBefore {
		t.Errorf("Diff changed the worktree's index:\n%s\nwas\n%s", got, indexBefore)
	}
	if got := testGit(t, wt, "status", "--porcelain"); got != statusBefore {
		t.Errorf("status after Diff = %q, was %q", got, statusBefore)
	}
	gitDir := testGit(t, wt, "rev-parse", "--absolute-git-dir")
	if left, _ := filepath.Glob(filepath.Join(gitDir, "apserver-diff-index-*")); len(left) > 0 {
		t.Errorf("Diff left %v", left)
	}
	if d, err := Diff(ctx, wt, "HEAD"); err != nil || strings.Contains(d, "committed.txt") {
		t.Errorf("Diff(HEAD) = %v, shows committed.txt:\n%s", err, d)
	}
	if _, err := Diff(ctx, wt, "nope"); !errors.Is(err, ErrUnknownRef) {
		t.Errorf("Diff(unknown ref) = %v, want ErrUnknownRef", err)
	}
}

// TestReadHead: the SHA Commit reads from the ref files is git's, and when
// the files are not laid out as expected it says so ("") rather than guess.
func TestReadHead(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	wt, _ := addWorktree(t, r, "h")
	write(t, wt, "a.txt", "a\n")
	sha, err := Commit(ctx, wt, "task", runTask("t1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{wt, dir} {
		if got, want := readHead(ctx, d), testGit(t, d, "rev-parse", "HEAD"); got != want {
			t.Errorf("readHead(%s) = %q, git says %s", d, got, want)
		}
	}
	testGit(t, dir, "pack-refs", "--all")
	if got := readHead(ctx, wt); got != "" {
		t.Errorf("readHead with packed refs = %q, want \"\"", got)
	}
	if got, err := Commit(ctx, wt, "again", runTask("t1")); err != nil || got != sha {
		t.Errorf("Commit replay with packed refs = %s, %v; want %s", got, err, sha)
	}
	write(t, wt, "b.txt", "b\n")
	sha2, err := Commit(ctx, wt, "task 2", runTask("t2"))
	if err != nil || sha2 != testGit(t, wt, "rev-parse", "HEAD") {
		t.Errorf("Commit after pack-refs = %s, %v; HEAD is %s", sha2, err, testGit(t, wt, "rev-parse", "HEAD"))
	}
	testGit(t, wt, "checkout", "-q", "--detach")
	if got := readHead(ctx, wt); got != sha2 {
		t.Errorf("readHead(detached) = %q, want %s", got, sha2)
	}
}

// TestFindCommitDepth: FindCommit looks FindDepth commits back from HEAD,
// HEAD included, and no further.
func TestFindCommitDepth(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		above int // commits on top of the one with the trailers
		found bool
	}{{FindDepth - 1, true}, {FindDepth, false}} {
		dir := newRepo(t)
		write(t, dir, "a.txt", "a\n")
		testGit(t, dir, "add", "-A")
		testGit(t, dir, "commit", "-q", "-m", "task\n\nApserver-Task: deep")
		var stream strings.Builder
		for i := 1; i <= tt.above; i++ {
			msg := fmt.Sprintf("later %d\n", i)
			fmt.Fprintf(&stream, "commit refs/heads/main\ncommitter U <u@example.com> %d +0000\ndata %d\n%s", 1700000000+i, len(msg), msg)
			if i == 1 {
				stream.WriteString("from refs/heads/main^0\n")
			}
			stream.WriteString("\n")
		}
		cmd := exec.Command("git", "fast-import", "--quiet")
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(stream.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("fast-import: %v\n%s", err, out)
		}
		testGit(t, dir, "reset", "-q", "--hard", "main")
		if n := testGit(t, dir, "rev-list", "--count", "HEAD"); n != fmt.Sprint(tt.above+2) {
			t.Fatalf("history holds %s commits, want %d", n, tt.above+2)
		}
		_, found, err := FindCommit(ctx, dir, []Trailer{{"Apserver-Task", "deep"}})
		if err != nil || found != tt.found {
			t.Errorf("FindCommit with %d commits above = %v, %v; want %v", tt.above, found, err, tt.found)
		}
	}
}
