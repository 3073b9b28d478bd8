package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Undoing runs (docs/runs.md, "Undo"). A merged run of three tasks
// reverted: main's files are byte for byte what they were before, in one
// commit naming the run. One task of another run reverted: its other
// tasks' changes stay. A revert that conflicts with later work stops and
// names the files.
func TestRunRevert(t *testing.T) {
	t.Parallel()
	model := startModel(t, shoutRules(t)...)
	repo := shoutRepo(t)
	c := newRunsClient(t, model, faOptions{})
	before := gitOut(t, repo, "rev-parse", "main^{tree}")
	run := func() (string, string) {
		id := c.startRun(map[string]any{"cwd": repo, "request": "add a shout option to greet.sh", "baseBranch": "main",
			"trust": map[string]any{"planning": "auto"}})
		end := c.runEnd(id)
		if end.str("run.status") != "completed" || end.str("run.mergeCommit") == "" {
			t.Fatalf("run/completed = %s", end.Raw)
		}
		return id, end.str("run.mergeCommit")
	}
	id, merged := run()
	if gitOut(t, repo, "rev-parse", "main^{tree}") == before {
		t.Fatal("the run changed nothing on main")
	}
	rv := c.call("run/revert", map[string]any{"runId": id})
	sha := rv.str("revert.commit")
	if rv.str("revert.kind") != "commit" || rv.str("revert.branch") != "main" || rv.get("revert.taskId") != nil || sha == "" {
		t.Fatalf("run/revert = %s", rv.Raw)
	}
	if got := gitOut(t, repo, "rev-parse", "main^{tree}"); got != before {
		t.Errorf("main after the revert:\n%s", gitOut(t, repo, "diff", "--stat", before, "main"))
	}
	if n := gitOut(t, repo, "rev-list", "--count", merged+"..main"); n != "1" || gitOut(t, repo, "rev-parse", "main") != sha {
		t.Errorf("%s commits after the run's merge, want the one revert %s", n, sha)
	}
	if msg := gitOut(t, repo, "log", "-1", "--format=%B", "main"); !strings.Contains(msg, "Revert apserver run "+id) || !strings.Contains(msg, "Apserver-Revert-Of: "+id) {
		t.Errorf("revert commit message:\n%s", msg)
	}
	read := c.call("run/read", map[string]any{"runId": id})
	if read.str("run.reverts.0.commit") != sha || read.str("run.status") != "completed" {
		t.Errorf("run/read = %s", read.Raw)
	}
	c.callErr("run/revert", map[string]any{"runId": id}, -32600, "already undone")
	c.callErr("run/revert", map[string]any{"runId": "nope"}, -32600, "run not found")
	c.callErr("run/task/revert", map[string]any{"runId": id}, -32602, "taskId")

	// Another run; only its docs task is undone.
	id2, _ := run()
	rv = c.call("run/task/revert", map[string]any{"runId": id2, "taskId": "t3"})
	if rv.str("revert.taskId") != "t3" || rv.str("revert.branch") != "main" {
		t.Fatalf("run/task/revert = %s", rv.Raw)
	}
	if readme := gitOut(t, repo, "show", "main:README.md"); strings.Contains(readme, "--shout") {
		t.Errorf("README.md still documents --shout:\n%s", readme)
	}
	if g := gitOut(t, repo, "show", "main:greet.sh"); !strings.Contains(g, "--shout") {
		t.Errorf("t1's change is gone too:\n%s", g)
	}
	gitOut(t, repo, "rev-parse", "--verify", "main:test_greet.sh") // t2's file stays

	// Later work on greet.sh: reverting t1 conflicts, names the file,
	// changes nothing.
	git(t, repo, "checkout", "-q", "main")
	if err := os.WriteFile(filepath.Join(repo, "greet.sh"), []byte("#!/bin/sh\necho later work\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "commit", "-q", "-am", "later work on greet.sh")
	git(t, repo, "checkout", "-q", "feature")
	head := gitOut(t, repo, "rev-parse", "main")
	c.callErr("run/task/revert", map[string]any{"runId": id2, "taskId": "t1"}, -32600, "conflicts with later work in greet.sh")
	if got := gitOut(t, repo, "rev-parse", "main"); got != head {
		t.Errorf("a conflicting revert moved main to %s", got)
	}
	if n := len(c.call("run/read", map[string]any{"runId": id2}).get("run.reverts").([]any)); n != 1 {
		t.Errorf("%d reverts recorded, want 1 (the conflict records nothing)", n)
	}
}

// An unmerged run undone: its branch closed (the tip in the record, to
// bring it back), its worktree removed, the base untouched.
func TestRunRevertUnmerged(t *testing.T) {
	t.Parallel()
	model := startModel(t, shoutRules(t)...)
	repo := shoutRepo(t)
	c := newRunsClient(t, model, faOptions{})
	main := gitOut(t, repo, "rev-parse", "main")
	st := c.call("run/start", map[string]any{"cwd": repo, "request": "add a shout option to greet.sh", "baseBranch": "main",
		"trust": map[string]any{"planning": "auto"}, "autonomy": "off"})
	id, branch := st.str("run.id"), st.str("run.branch")
	if end := c.runEnd(id); end.str("run.status") != "completed" || end.get("run.mergeCommit") != nil {
		t.Fatalf("run/completed = %s", end.Raw)
	}
	tip := gitOut(t, repo, "rev-parse", branch)
	rv := c.call("run/revert", map[string]any{"runId": id})
	if rv.str("revert.kind") != "branchClosed" || rv.str("revert.commit") != tip || rv.str("revert.branch") != branch {
		t.Fatalf("run/revert = %s", rv.Raw)
	}
	if _, err := gitErr(repo, "rev-parse", "--verify", "-q", "refs/heads/"+branch); err == nil {
		t.Errorf("branch %s still exists", branch)
	}
	if _, err := os.Stat(st.str("run.worktree")); !os.IsNotExist(err) {
		t.Errorf("the worktree is still there: %v", err)
	}
	if gitOut(t, repo, "rev-parse", "main") != main {
		t.Error("main moved")
	}
}

func gitErr(dir string, args ...string) (string, error) {
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	return string(out), err
}
