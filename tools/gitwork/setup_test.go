package gitwork

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apserver/apserver/internal/proctest"
)

func TestSetupCopies(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	write(t, dir, ".gitignore", "*.log\n.env\nnode_modules/\n")
	testGit(t, dir, "commit", "-q", "-am", "ignore more")
	write(t, dir, ".env", "SECRET=1\n")
	write(t, dir, "config/app.local.yml", "local: true\n")
	write(t, dir, "config/db.local.yml", "db: x\n")
	write(t, dir, "config/other.yml", "not matched\n")
	write(t, dir, "node_modules/left-pad/index.js", "module.exports = 1\n")
	write(t, dir, "greet.sh", "user's uncommitted greet.sh\n")
	os.Chmod(filepath.Join(dir, "config", "db.local.yml"), 0o600)
	os.Symlink("../.env", filepath.Join(dir, "config", "env.local.yml"))
	r := open(t, dir)
	wt, _ := addWorktree(t, r, "s")

	copy := []string{".env", "config/*.local.yml", "node_modules", "greet.sh", "nothing-*.txt", ".git"}
	if err := Setup(ctx, dir, wt, copy, "", os.Environ()); err != nil {
		t.Fatalf("Setup = %v", err)
	}
	for rel, want := range map[string]string{
		".env":                           "SECRET=1\n",
		"config/app.local.yml":           "local: true\n",
		"config/db.local.yml":            "db: x\n",
		"node_modules/left-pad/index.js": "module.exports = 1\n",
		"greet.sh":                       "#!/bin/sh\necho hello\n", // tracked: the branch's, not the user's
	} {
		if got := read(t, wt, rel); got != want {
			t.Errorf("worktree %s = %q, want %q", rel, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(wt, "config", "other.yml")); err == nil {
		t.Errorf("Setup copied an unmatched file")
	}
	if info, err := os.Stat(filepath.Join(wt, "config", "db.local.yml")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("db.local.yml mode = %v, %v; want 0600", info.Mode(), err)
	}
	if target, err := os.Readlink(filepath.Join(wt, "config", "env.local.yml")); err != nil || target != "../.env" {
		t.Errorf("symlink copied as %q, %v", target, err)
	}
	if got := testGit(t, wt, "rev-parse", "--abbrev-ref", "HEAD"); got != "apserver/s" {
		t.Errorf("the worktree's .git was replaced: HEAD %s", got)
	}

	// What Setup copied stays out of commits and diffs, ignored or not.
	write(t, wt, "task.txt", "work\n")
	d, err := Diff(ctx, wt, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(d, "local.yml") || strings.Contains(d, "SECRET") || !strings.Contains(d, "task.txt") {
		t.Errorf("Diff after Setup:\n%s", d)
	}
	sha, err := Commit(ctx, wt, "task", runTask("t1"))
	if err != nil {
		t.Fatal(err)
	}
	if got := testGit(t, wt, "show", "--name-only", "--format=", sha); got != "task.txt" {
		t.Errorf("commit after Setup holds %q, want task.txt", got)
	}

	wt2, _ := addWorktree(t, r, "bad")
	for _, bad := range []string{"../outside", "/etc/passwd", "config/../../x", "[", ""} {
		// The good pattern first: nothing is copied when one is bad.
		if err := Setup(ctx, dir, wt2, []string{".env", bad}, "", os.Environ()); err == nil {
			t.Errorf("Setup(copy %q) = nil error", bad)
		}
	}
	if _, err := os.Lstat(filepath.Join(wt2, ".env")); err == nil {
		t.Errorf("a Setup with a bad pattern copied the good one first")
	}
}

func TestSetupCommand(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	wt, _ := addWorktree(t, r, "cmd")
	counter := filepath.Join(t.TempDir(), "runs")

	cmd := fmt.Sprintf(`pwd > setup.log; echo run >> %q; test -z "$GIT_DIR"`, counter)
	t.Setenv("GIT_DIR", filepath.Join(dir, ".git")) // as in a git hook
	if err := Setup(ctx, dir, wt, nil, cmd, os.Environ()); err != nil {
		t.Fatalf("Setup = %v", err)
	}
	if got := strings.TrimSpace(read(t, wt, "setup.log")); canonical(got) != canonical(wt) {
		t.Errorf("setup ran in %s, want %s", got, wt)
	}
	// Done once: the repeat does not run the command again.
	if err := Setup(ctx, dir, wt, nil, cmd, os.Environ()); err != nil {
		t.Fatalf("Setup again = %v", err)
	}
	if got := read(t, "/", counter); got != "run\n" {
		t.Errorf("command ran %d times, want once", strings.Count(got, "run"))
	}

	// A failing command: its status and output in the error, and not
	// marked done, so that the next Setup runs it again.
	wt2, _ := addWorktree(t, r, "fail")
	fail := `echo first line; echo "npm ERR! missing thing" >&2; exit 3`
	err := Setup(ctx, dir, wt2, nil, fail, os.Environ())
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "npm ERR! missing thing") {
		t.Errorf("failing Setup = %v, want exit status 3 and the output", err)
	}
	if err := Setup(ctx, dir, wt2, nil, "echo fixed > fixed.log", os.Environ()); err != nil {
		t.Errorf("Setup after a failure = %v", err)
	}
	read(t, wt2, "fixed.log")
}

// TestSetupCopyStaysInTheRepository: a directory of the checkout that a
// command replaced with a symbolic link to somewhere else (~/.ssh, say)
// does not make Setup copy what is there into the worktree, where the
// sandboxed model could read it: the copy fails, naming the path, and
// nothing from outside arrives. A link that stays inside the repository
// is followed as before.
func TestSetupCopyStaysInTheRepository(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	outside := t.TempDir()
	write(t, outside, "id.local.yml", "private key\n")
	write(t, outside, "deep/id.local.yml", "private key\n")
	if err := os.Symlink(outside, filepath.Join(dir, "config")); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "real/app.local.yml", "local: true\n")
	if err := os.Symlink("real", filepath.Join(dir, "inside")); err != nil {
		t.Fatal(err)
	}
	r := open(t, dir)
	for i, pattern := range []string{"config/*.local.yml", "config/*/id.local.yml", "config/deep"} {
		wt, _ := addWorktree(t, r, fmt.Sprintf("out%d", i))
		err := Setup(ctx, dir, wt, []string{pattern}, "", os.Environ())
		if err == nil || !strings.Contains(err.Error(), "outside the repository") {
			t.Errorf("Setup(copy %q) through a link out of the repository = %v, want an error saying so", pattern, err)
		}
		filepath.WalkDir(wt, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !strings.Contains(p, string(filepath.Separator)+".git") {
				if data, _ := os.ReadFile(p); strings.Contains(string(data), "private key") {
					t.Errorf("Setup(copy %q) copied %s from outside the repository", pattern, p)
				}
			}
			return nil
		})
	}
	// A link in the worktree (a tracked one of the branch, say) where the
	// checkout has a directory: the copy does not write through it.
	wt, _ := addWorktree(t, r, "wtlink")
	target := t.TempDir()
	if err := os.Symlink(target, filepath.Join(wt, "real")); err != nil {
		t.Fatal(err)
	}
	if err := Setup(ctx, dir, wt, []string{"real/*.local.yml"}, "", os.Environ()); err == nil {
		t.Errorf("Setup wrote through the worktree's link without an error")
	}
	if entries, _ := os.ReadDir(target); len(entries) > 0 {
		t.Errorf("Setup wrote %s outside the worktree, through its link", entries[0].Name())
	}

	wt, _ = addWorktree(t, r, "in")
	if err := Setup(ctx, dir, wt, []string{"inside/*.local.yml"}, "", os.Environ()); err != nil {
		t.Fatalf("Setup through a link inside the repository = %v", err)
	}
	if got := read(t, wt, "inside/app.local.yml"); got != "local: true\n" {
		t.Errorf("inside/app.local.yml = %q", got)
	}
}

// TestSetupCommandEnvironment: the setup command gets the environment it
// is given, without the GIT_* variables that would point git elsewhere,
// and nothing of the process's own that the caller left out (the runner
// leaves out apserver's secrets: e2e TestRunSetupCommandGetsNoSecrets).
func TestSetupCommandEnvironment(t *testing.T) {
	dir := newRepo(t)
	wt, _ := addWorktree(t, open(t, dir), "env")
	t.Setenv("OPENAI_API_KEY", "canary-key")
	env := []string{"PATH=" + os.Getenv("PATH"), "SETUP_PLAIN_VALUE=kept", "GIT_DIR=" + filepath.Join(dir, ".git")}
	if err := Setup(context.Background(), dir, wt, nil, "env > env.log", env); err != nil {
		t.Fatalf("Setup = %v", err)
	}
	got := "\n" + read(t, wt, "env.log")
	if strings.Contains(got, "canary") || strings.Contains(got, "\nGIT_DIR=") {
		t.Errorf("the setup command got more than it was given:\n%s", got)
	}
	if !strings.Contains(got, "\nSETUP_PLAIN_VALUE=kept\n") || !strings.Contains(got, "\nPATH=") {
		t.Errorf("the setup command lost what it was given:\n%s", got)
	}
}

// TestSetupCancel: when ctx ends, the command and what it started in the
// background are killed, judged by looking for them in /proc.
func TestSetupCancel(t *testing.T) {
	dir := newRepo(t)
	r := open(t, dir)
	wt, _ := addWorktree(t, r, "slow")
	mark := fmt.Sprintf("gitwork-setup-%d", time.Now().UnixNano())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Cancel once the background process runs.
		deadline := time.Now().Add(10 * time.Second)
		for len(proctest.Marked(mark+"-bg")) == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	// The mark comes from the environment, so that the command line of
	// bash -c itself does not hold it.
	t.Setenv("GITWORK_MARK", mark)
	err := Setup(ctx, dir, wt, nil, `(exec -a "$GITWORK_MARK-bg" sleep 60) & exec -a "$GITWORK_MARK-fg" sleep 60`, os.Environ())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Setup = %v, want context.Canceled", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for alive := proctest.Marked(mark); len(alive) > 0; alive = proctest.Marked(mark) {
		if time.Now().After(deadline) {
			for _, pid := range alive {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("setup processes still running: %v", alive)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
