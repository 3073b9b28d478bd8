package gitwork

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apserver/apserver/internal/proctest"
)

// helperEnv, set in a process of the test binary, makes it run
// runSequence (on the repository and worktree named in the variable,
// merging or not) instead of the tests.
const helperEnv = "GITWORK_KILL_HELPER"

func helperMain() {
	var repo, wt, mode string
	fmt.Sscanf(os.Getenv(helperEnv), "%s %s %s", &repo, &wt, &mode)
	var err error
	if mode == "setup-started" {
		// Killed right after the command started, before its process
		// group is on disk.
		testHookSetupStarted = func() { select {} }
		mode = "setup"
	}
	switch mode {
	case "setup":
		err = Setup(context.Background(), repo, wt, nil, `exec -a "$GITWORK_MARK" sleep 60`, os.Environ())
	case "own-group":
		err = orphanInOwnGroup(repo, wt)
	default:
		err = runSequence(context.Background(), repo, wt, mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

const killTasks = 5

// runSequence is what a run does with the git layer, every step repeated
// from the start: a replay after a crash. mode "nomerge" stops after the
// task commits; "merge" squashes the branch into main; "catchup" first
// brings the branch up to a main that moved (CatchUp's merge commit),
// then fast-forwards main to it.
func runSequence(ctx context.Context, repo, wt, mode string) error {
	r, err := Open(ctx, repo)
	if err != nil {
		return err
	}
	branch := "apserver/kill"
	if err := r.AddWorktree(ctx, wt, branch, "main"); err != nil {
		return err
	}
	if err := Setup(ctx, repo, wt, []string{".env"}, "echo set up >> setup.log", os.Environ()); err != nil {
		return err
	}
	for k := 1; k <= killTasks; k++ {
		if err := os.WriteFile(filepath.Join(wt, fmt.Sprintf("task%d.txt", k)), []byte(fmt.Sprintf("task %d\n", k)), 0o644); err != nil {
			return err
		}
		if _, err := Commit(ctx, wt, fmt.Sprintf("task %d", k), runTask(fmt.Sprint(k))); err != nil {
			return err
		}
	}
	switch mode {
	case "nomerge":
		return nil
	case "catchup":
		trailers := []Trailer{{Key: "Apserver-Run", Value: "kill"}, {Key: "Apserver-Step", Value: "catch-up"}}
		if _, err := CatchUp(ctx, wt, "main", "bring in main", trailers, nil, nil); err != nil {
			return err
		}
		if _, err := r.Merge(ctx, "main", branch, MergeFastForward, "run kill"); err != nil {
			return err
		}
	default:
		if _, err := r.Merge(ctx, "main", branch, MergeSquash, "run kill"); err != nil {
			return err
		}
	}
	return r.RemoveWorktree(ctx, wt)
}

// TestKilledAnywhere kills a process doing what a run does with the git
// layer at a random moment of its work, twice, then lets the run finish,
// and checks that the result is that of one uninterrupted run: each task
// committed once, one squash commit on main, no worktree or lock left, and
// the user's dirty checkout untouched. "apserver" kills the process alone
// (its git children finish, as after kill -9); "with git" kills its whole
// process group, leaving git's lock files behind; a stale lock on the base
// branch's ref is not ours to remove, so that mode stops before Merge.
func TestKilledAnywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns many processes")
	}
	// How long an uninterrupted run takes here: the kills land in it.
	scratch := newRepo(t)
	testGit(t, scratch, "checkout", "-q", "-b", "dev")
	start := time.Now()
	if err := runSequence(context.Background(), scratch, filepath.Join(t.TempDir(), "wt"), "merge"); err != nil {
		t.Fatal(err)
	}
	span := time.Since(start)
	// The same with a catch-up: the tasks, then the merge of a main that
	// moved, then the fast-forward.
	scratch = newRepo(t)
	testGit(t, scratch, "checkout", "-q", "-b", "dev")
	testGit(t, scratch, "branch", "apserver/kill", "main")
	testGit(t, scratch, "update-ref", "refs/heads/main", commitOn(t, scratch, "main", "base.txt", "moved\n"))
	start = time.Now()
	if err := runSequence(context.Background(), scratch, filepath.Join(t.TempDir(), "wt"), "catchup"); err != nil {
		t.Fatal(err)
	}
	spanCatchUp := time.Since(start)
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("a run takes %v, %v with a catch-up; seed %d", span, spanCatchUp, seed)
	for _, mode := range []string{"apserver", "with git", "catch-up"} {
		for round := range 4 {
			t.Run(fmt.Sprintf("%s/%d", mode, round), func(t *testing.T) {
				if mode == "catch-up" {
					killedRun(t, mode, spanCatchUp, rng)
				} else {
					killedRun(t, mode, span, rng)
				}
			})
		}
	}
}

func killedRun(t *testing.T, mode string, span time.Duration, rng *rand.Rand) {
	defer func(d time.Duration) { lockRetry = d }(lockRetry)
	lockRetry = 300 * time.Millisecond // the helpers keep the default
	dir := newRepo(t)
	testGit(t, dir, "checkout", "-q", "-b", "dev")
	write(t, dir, ".env", "SECRET=1\n")
	write(t, dir, "greet.sh", "user's edit\n")
	initial := testGit(t, dir, "rev-parse", "main")
	wt := filepath.Join(t.TempDir(), "wt")
	merge := mode != "with git"
	arg := map[string]string{"apserver": "merge", "with git": "nomerge", "catch-up": "catchup"}[mode]
	if mode == "catch-up" {
		// The run's branch starts at main; then main moves (another run
		// landed), so the run must bring main in before it lands.
		testGit(t, dir, "branch", "apserver/kill", "main")
		testGit(t, dir, "update-ref", "refs/heads/main", commitOn(t, dir, "main", "base.txt", "moved\n"))
	}
	moved := testGit(t, dir, "rev-parse", "main")
	before := snapshot(t, dir)

	var delays []time.Duration
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"="+dir+" "+wt+" "+arg)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(rng.Int64N(int64(span)))
		if mode == "catch-up" && len(delays) == 0 {
			// The first kill in the second half, where the catch-up and
			// the fast-forward are (a process also takes longer to start
			// than the in-process run that measured span).
			delay = span/2 + time.Duration(rng.Int64N(int64(span/2)))
		}
		delays = append(delays, delay)
		timer := time.AfterFunc(delay, func() {
			if mode != "with git" {
				cmd.Process.Kill()
			} else {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
		})
		err := cmd.Wait()
		timer.Stop()
		if err != nil && !strings.Contains(err.Error(), "killed") {
			t.Fatalf("run killed after %v failed by itself: %v\n%s", delay, err, out.String())
		}
	}
	t.Logf("killed after %v", delays)
	if err := runSequence(context.Background(), dir, wt, arg); err != nil {
		t.Fatalf("the run after the kills = %v", err)
	}

	log := testGit(t, dir, "log", "--format=%(trailers:key=Apserver-Task,valueonly)", initial+"..apserver/kill")
	if got := strings.Fields(log); strings.Join(got, " ") != "5 4 3 2 1" {
		t.Errorf("task commits on the branch (newest first) = %v, want 5 4 3 2 1", got)
	}
	from := initial
	if mode == "catch-up" {
		from = moved
	}
	if files := testGit(t, dir, "diff", "--name-only", from, "apserver/kill"); files != "task1.txt\ntask2.txt\ntask3.txt\ntask4.txt\ntask5.txt" {
		t.Errorf("the branch changes:\n%s", files)
	}
	list := testGit(t, dir, "worktree", "list", "--porcelain")
	if mode == "catch-up" {
		// One catch-up merge commit whatever the kills, and main
		// fast-forwarded to the branch.
		merges := testGit(t, dir, "log", "--merges", "--format=%(trailers:key=Apserver-Step,valueonly)", initial+"..main")
		if got := strings.Fields(merges); strings.Join(got, " ") != "catch-up" {
			t.Errorf("merge commits on main = %q, want one catch-up", got)
		}
		if a, b := testGit(t, dir, "rev-parse", "main"), testGit(t, dir, "rev-parse", "apserver/kill"); a != b {
			t.Errorf("main %s, the branch %s: not fast-forwarded", a, b)
		}
		if testGit(t, dir, "show", "main:base.txt") != "moved" {
			t.Errorf("main lost the commit it moved to")
		}
		if strings.Count(list, "worktree ") != 1 {
			t.Errorf("worktrees left:\n%s", list)
		}
	} else if merge {
		if n := testGit(t, dir, "rev-list", "--count", initial+"..main"); n != "1" {
			t.Errorf("main gained %s commits, want 1", n)
		}
		if a, b := testGit(t, dir, "rev-parse", "main^{tree}"), testGit(t, dir, "rev-parse", "apserver/kill^{tree}"); a != b {
			t.Errorf("main's tree %s, the branch's %s", a, b)
		}
		if strings.Count(list, "worktree ") != 1 {
			t.Errorf("worktrees left:\n%s", list)
		}
	} else {
		if st := testGit(t, wt, "status", "--porcelain"); st != "?? .env" {
			t.Errorf("worktree status %q, want only the copied .env; .gitignore %q; ls-files:\n%s", st, read(t, wt, ".gitignore"), testGit(t, wt, "ls-files", "--stage"))
		}
		if strings.Contains(list, "locked") || strings.Contains(list, "prunable") {
			t.Errorf("worktrees:\n%s", list)
		}
	}
	var locks []string
	filepath.WalkDir(filepath.Join(dir, ".git"), func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".lock") {
			locks = append(locks, p)
		}
		return nil
	})
	if len(locks) > 0 {
		t.Errorf("lock files left: %v", locks)
	}
	before.diff(t, snapshot(t, dir), "after the kills")
}

// orphanInOwnGroup is a process of TestOrphanInApserversGroup, the leader
// of its own process group, standing for a restarted apserver: a process
// carrying a left-over setup token (in repo, the private git directory)
// has joined its group; stopping the orphan must kill that process alone.
func orphanInOwnGroup(gitDir, wt string) error {
	token := "own-group-token"
	orphan := exec.Command("sleep", "60")
	orphan.Env = append(os.Environ(), setupEnv+"="+token)
	if err := orphan.Start(); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(gitDir, setupPIDFile), []byte("token "+token+"\n"), 0o644); err != nil {
		return err
	}
	if err := killOrphanSetup(context.Background(), gitDir, wt); err != nil {
		return err
	}
	if err := orphan.Wait(); err == nil {
		return errors.New("the orphan was not killed")
	}
	return nil
}

// TestOrphanInApserversGroup: a left-over setup process that moved into
// apserver's own process group is killed alone; apserver (a helper
// process, its group's leader) survives.
func TestOrphanInApserversGroup(t *testing.T) {
	gitDir, wt := t.TempDir(), t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+gitDir+" "+wt+" own-group")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the helper standing for apserver: %v\n%s", err, out)
	}
}

// TestSetupAfterKill: apserver killed while Setup's command runs leaves
// the command running; the next Setup stops it before it runs the command
// again. Judged by the processes in /proc. The kill comes while the
// command runs, or right after it started, before its process group was
// recorded.
func TestSetupAfterKill(t *testing.T) {
	for _, mode := range []string{"setup", "setup-started"} {
		t.Run(mode, func(t *testing.T) { setupAfterKill(t, mode) })
	}
}

func setupAfterKill(t *testing.T, mode string) {
	dir := newRepo(t)
	r := open(t, dir)
	wt, _ := addWorktree(t, r, "orphan")
	mark := fmt.Sprintf("gitwork-orphan-%d", time.Now().UnixNano())
	t.Setenv("GITWORK_MARK", mark)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir+" "+wt+" "+mode)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, pid := range proctest.Marked(mark) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(proctest.Marked(mark)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the setup command did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if len(proctest.Marked(mark)) == 0 {
		t.Fatal("the setup command died with the process: nothing to test")
	}

	if err := Setup(context.Background(), dir, wt, nil, "echo ok > done.log", os.Environ()); err != nil {
		t.Fatalf("Setup after the kill = %v", err)
	}
	if alive := proctest.Marked(mark); len(alive) > 0 {
		t.Errorf("the killed Setup's command still runs: %v", alive)
	}
	if got := read(t, wt, "done.log"); got != "ok\n" {
		t.Errorf("done.log = %q", got)
	}
}

// commitOn makes a commit on top of branch that adds file with content,
// without touching any checkout (a temporary index), and returns it.
func commitOn(t *testing.T, dir, branch, file, content string) string {
	t.Helper()
	env := append(os.Environ(), "GIT_INDEX_FILE="+filepath.Join(t.TempDir(), "index"),
		"GIT_AUTHOR_NAME=Other", "GIT_AUTHOR_EMAIL=other@example.com",
		"GIT_COMMITTER_NAME=Other", "GIT_COMMITTER_EMAIL=other@example.com")
	git := func(stdin string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env, cmd.Stdin = dir, env, strings.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	git("", "read-tree", branch)
	blob := git(content, "hash-object", "-w", "--stdin")
	git("", "update-index", "--add", "--cacheinfo", "100644,"+blob+","+file)
	tree := git("", "write-tree")
	return git("", "commit-tree", tree, "-p", branch, "-m", "another run landed")
}
