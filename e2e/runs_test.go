package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/store"
)

// Runs (docs/runs.md) over the real binary, the model scripted at the HTTP
// level. The planner, each task and the validator are told apart by what
// their turn's input says: "Plan this request", the task's marker (S1…),
// "Review task".

const greetSh = "#!/bin/sh\necho \"Hello, $1\"\n"

// shoutRepo makes a repository with greet.sh committed on main and the
// user working on branch feature (so that a merge into main leaves the
// user's checkout alone).
func shoutRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	gitRepo(t, dir, map[string]string{"greet.sh": greetSh, "README.md": "# greet\n"})
	git(t, dir, "config", "user.name", "Test User")
	git(t, dir, "config", "user.email", "test@example.com")
	git(t, dir, "checkout", "-q", "-b", "feature")
	return dir
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return strings.TrimSpace(git(t, dir, args...))
}

func fileHash(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

type planTask struct {
	ID           string         `json:"id"`
	Title        string         `json:"title"`
	Description  string         `json:"description"`
	Kind         string         `json:"kind"`
	Dependencies []string       `json:"dependencies"`
	Risk         string         `json:"risk"`
	Acceptance   map[string]any `json:"acceptance"`
	Estimate     string         `json:"estimate"`
}

func planJSON(t *testing.T, tasks ...planTask) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"summary": "the plan", "tasks": tasks, "clarification": nil})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func accept(checks ...string) map[string]any {
	return map[string]any{"criteria": []string{"the checks pass"}, "checks": checks, "files": []string{}}
}

// The shout tasks: t1 adds the flag, t2 a test script (after t1), t3 the
// docs (after both).
var shoutTasks = []planTask{
	{ID: "t1", Title: "S1 make greet.sh accept --shout", Description: "Parse --shout and print in capitals.", Kind: "file_edit",
		Dependencies: []string{}, Risk: "low", Acceptance: accept("sh greet.sh --shout bob | grep -q 'HELLO, BOB'"), Estimate: "5m"},
	{ID: "t2", Title: "S2 add test_greet.sh", Description: "A test script for both modes.", Kind: "test",
		Dependencies: []string{"t1"}, Risk: "low", Acceptance: accept("sh test_greet.sh"), Estimate: "5m"},
	{ID: "t3", Title: "S3 document --shout", Description: "Mention --shout in README.md.", Kind: "docs",
		Dependencies: []string{"t1", "t2"}, Risk: "low", Acceptance: accept("grep -q -- --shout README.md"), Estimate: "2m"},
}

// taskRule is the implementer of one task: one command, then done.
func taskRule(marker, command string) scripted.Rule {
	return scripted.Rule{Match: marker, Steps: []scripted.Step{
		{Text: "Working on it.", ToolCalls: []scripted.ToolCall{{Command: command}}},
		{Text: "The task is complete."},
	}}
}

var reviewRule = scripted.Rule{Match: "Review task", Steps: []scripted.Step{{Text: `{"pass":true,"findings":"the diff does what the task says"}`}}}

func shoutRules(t *testing.T) []scripted.Rule {
	return []scripted.Rule{
		reviewRule,
		{Match: "Plan this request", Steps: []scripted.Step{{Text: planJSON(t, shoutTasks...)}}},
		taskRule("S1 make greet.sh", `printf '%s\n' '#!/bin/sh' 'if [ "$1" = "--shout" ]; then echo "Hello, $2" | tr a-z A-Z; else echo "Hello, $1"; fi' > greet.sh`),
		taskRule("S2 add test_greet.sh", `printf '%s\n' 'set -e' 'sh greet.sh bob | grep -q "Hello, bob"' 'sh greet.sh --shout bob | grep -q "HELLO, BOB"' > test_greet.sh`),
		taskRule("S3 document", `printf '%s\n' '' 'Use --shout to greet in capitals.' >> README.md`),
	}
}

// runEnd waits for run/completed of id.
func (c *client) runEnd(id string) *message {
	c.t.Helper()
	return c.waitFor("run/completed", func(m *message) bool { return m.str("run.id") == id })
}

// runWaiting waits for run/updated of id waiting for what.
func (c *client) runWaiting(after *message, id, what string) *message {
	c.t.Helper()
	return c.waitAfter(after, "run/updated", func(m *message) bool {
		return m.str("runId") == id && m.str("waitingFor") == what
	})
}

func TestRunAcceptance(t *testing.T) {
	t.Parallel()
	model := startModel(t, shoutRules(t)...)
	repo := shoutRepo(t)
	index, greet := fileHash(t, filepath.Join(repo, ".git", "index")), fileHash(t, filepath.Join(repo, "greet.sh"))
	c := newRunsClient(t, model, faOptions{})

	start := c.call("run/start", map[string]any{"cwd": repo, "request": "add a shout option to greet.sh", "baseBranch": "main"})
	id := start.str("run.id")
	branch := start.str("run.branch")
	if id == "" || !strings.HasPrefix(branch, "apserver/"+id[:8]+"-add-a-shout-option") {
		t.Fatalf("run/start = %s", start.Raw)
	}
	c.waitFor("run/started", nil)
	plan := c.waitFor("run/plan/updated", func(m *message) bool { return m.str("runId") == id })
	if got := plan.get("plan.tasks"); len(got.([]any)) != 3 {
		t.Fatalf("plan = %s", plan.Raw)
	}
	c.runWaiting(nil, id, "planApproval")
	attn := c.waitFor("attention", func(m *message) bool { return m.get("count") == 1.0 })
	if attn.str("items.0.runId") != id || attn.str("items.0.kind") != "approval" {
		t.Errorf("attention = %s, want the plan approval of run %s", attn.Raw, id)
	}
	// Nothing ran yet: no task thread, the plan readable in the worktree.
	wt := start.str("run.worktree")
	if b, err := os.ReadFile(filepath.Join(wt, ".apserver", "runs", id, "plan.md")); err != nil || !strings.Contains(string(b), "S2 add test_greet.sh") {
		t.Errorf("plan.md before approval: %v\n%s", err, b)
	}
	if got := c.find("run/task/updated", nil); len(got) != 0 {
		t.Errorf("tasks ran before the plan was approved: %v", got)
	}
	c.call("run/plan/approve", map[string]any{"runId": id})

	end := c.runEnd(id)
	if end.str("run.status") != "completed" || end.get("run.counts.completed") != 3.0 || end.str("run.mergeCommit") == "" {
		t.Fatalf("run/completed = %s", end.Raw)
	}
	// Tasks ran in dependency order, each as an ordinary thread.
	var order []string
	for _, m := range c.find("run/task/updated", func(m *message) bool { return m.str("task.status") == "running" && m.str("task.threadId") == "" }) {
		order = append(order, m.str("task.id"))
	}
	if strings.Join(order, ",") != "t1,t2,t3" {
		t.Errorf("tasks started in order %v, want t1,t2,t3", order)
	}
	// One commit per task with trailers, merged into main.
	for _, task := range []string{"t1", "t2", "t3"} {
		log := gitOut(t, repo, "log", "main", "--format=%H", "--grep", "Apserver-Task: "+task)
		if n := len(strings.Fields(log)); n != 1 {
			t.Errorf("main has %d commits of task %s, want 1", n, task)
		}
		body := gitOut(t, repo, "log", "-1", "main", "--format=%B", "--grep", "Apserver-Task: "+task)
		if !strings.Contains(body, "Apserver-Run: "+id) {
			t.Errorf("commit of %s lacks the run trailer:\n%s", task, body)
		}
	}
	if out := gitOut(t, repo, "show", "main:greet.sh"); !strings.Contains(out, "--shout") {
		t.Errorf("main:greet.sh = %q", out)
	}
	// Artifacts readable in the branch.
	for _, f := range []string{"state.md", "plan.md", "context.json", "validation-report.md"} {
		out := gitOut(t, repo, "show", branch+":.apserver/runs/"+id+"/"+f)
		if len(out) < 20 {
			t.Errorf("%s in the branch: %q", f, out)
		}
	}
	if st := gitOut(t, repo, "show", branch+":.apserver/runs/"+id+"/state.md"); !strings.Contains(st, "| status | completed |") || !strings.Contains(st, "t3 S3 document --shout") {
		t.Errorf("state.md in the branch:\n%s", st)
	}
	if vr := gitOut(t, repo, "show", branch+":.apserver/runs/"+id+"/validation-report.md"); !strings.Contains(vr, "grep -q -- --shout README.md`: exit 0") {
		t.Errorf("validation-report.md:\n%s", vr)
	}
	if mem := gitOut(t, repo, "show", "main:.apserver/memory.md"); !strings.Contains(mem, "## Run "+id) {
		t.Errorf("memory.md:\n%s", mem)
	}
	// The run's worktree is gone, and git forgot it; its branch stays.
	waitWorktreeGone(t, repo, wt)
	gitOut(t, repo, "rev-parse", "--verify", branch)
	// The user's checkout and index are untouched.
	if gitOut(t, repo, "status", "--porcelain") != "" || gitOut(t, repo, "branch", "--show-current") != "feature" {
		t.Errorf("the user's checkout changed: %s", gitOut(t, repo, "status"))
	}
	if fileHash(t, filepath.Join(repo, ".git", "index")) != index || fileHash(t, filepath.Join(repo, "greet.sh")) != greet {
		t.Error("the user's index or greet.sh changed")
	}
	// run/read rebuilds the same run from the events; run/list lists it.
	read := c.call("run/read", map[string]any{"runId": id})
	if read.str("run.status") != "completed" || read.get("run.counts.completed") != 3.0 {
		t.Errorf("run/read = %s", read.Raw)
	}
	if list := c.call("run/list", map[string]any{}); list.str("runs.0.id") != id {
		t.Errorf("run/list = %s", list.Raw)
	}
	c.callErr("run/read", map[string]any{"runId": "nope"}, -32600, "run not found: nope")
	c.callErr("run/plan/approve", map[string]any{"runId": id}, -32600, "not waiting for plan approval")
	c.callErr("run/start", map[string]any{"cwd": repo}, -32602, "missing field `request`")
	c.callErr("run/start", map[string]any{"cwd": t.TempDir(), "request": "x"}, -32600, "not in a git repository")
	c.callErr("run/start", map[string]any{"cwd": repo, "request": "x", "baseBranch": "nope"}, -32602, "baseBranch \"nope\" is not a branch")
	// A repository with no commit yet: say so, not that its branch is not one.
	empty := t.TempDir()
	git(t, empty, "init", "-q", "-b", "master")
	c.callErr("run/start", map[string]any{"cwd": empty, "request": "x"}, -32602, "has no commit yet")
	c.callErr("run/start", map[string]any{"cwd": empty, "request": "x", "baseBranch": "master"}, -32602, "make a first commit")
	c.callErr("run/cancel", map[string]any{"runId": id}, -32600, "already completed")
}

// newRunsClient is newFAClient with a longer wait: a run's stages are many
// turns, and the machine is shared (with APSERVER_E2E_RACE the binary is
// several times slower too).
func newRunsClient(t *testing.T, model *scripted.Server, o faOptions) *client {
	t.Helper()
	c := newFAClient(t, model, o)
	c.wait = time.Minute
	return c
}

// startRun sends run/start and returns the run id.
func (c *client) startRun(params map[string]any) string {
	c.t.Helper()
	m := c.call("run/start", params)
	id := m.str("run.id")
	if id == "" {
		c.t.Fatalf("run/start = %s", m.Raw)
	}
	return id
}

// A task whose check keeps failing is tried 3 times, then blocked with a
// repair proposal; approving the repair inserts the fix task, which makes
// the check pass, and the run finishes.
func TestRunRetriesThenRepair(t *testing.T) {
	t.Parallel()
	tasks := []planTask{{ID: "t1", Title: "R1 create the flag file", Description: "Create flag.txt.", Kind: "file_create",
		Dependencies: []string{}, Risk: "low", Acceptance: accept("test -f flag.txt"), Estimate: "1m"}}
	model := startModel(t,
		reviewRule,
		scripted.Rule{Match: "Plan this request", Steps: []scripted.Step{{Text: planJSON(t, tasks...)}}},
		taskRule("Fix: R1", "echo on > flag.txt"),
		taskRule("R1 create", "echo wrong > flag.text"),
	)
	repo := shoutRepo(t)
	c := newRunsClient(t, model, faOptions{})
	id := c.startRun(map[string]any{"cwd": repo, "request": "create the flag", "baseBranch": "main", "trust": map[string]any{"planning": "auto"}})
	w := c.runWaiting(nil, id, "repair")
	if w.str("status") != "paused" || !strings.Contains(w.str("reason"), "blocked after 3 failed attempts") {
		t.Errorf("run/updated = %s", w.Raw)
	}
	read := c.call("run/read", map[string]any{"runId": id})
	if read.str("run.plan.tasks.0.status") != "blocked" || read.get("run.plan.tasks.0.retryCount") != 3.0 ||
		read.str("run.repairProposal.proposedTask.id") != "t1-fix" || !strings.Contains(read.str("run.repairProposal.failure"), "test -f flag.txt`: exit 1") {
		t.Fatalf("blocked run = %s", read.Raw)
	}
	if n := len(c.find("run/task/updated", func(m *message) bool { return m.str("task.status") == "running" && m.str("task.threadId") == "" })); n != 3 {
		t.Errorf("t1 started %d times, want 3", n)
	}
	// state.md shows the blocked task with its retries.
	if st, err := os.ReadFile(filepath.Join(read.str("run.worktree"), ".apserver", "runs", id, "state.md")); err != nil ||
		!strings.Contains(string(st), "| current task | t1 (blocked) |") || !strings.Contains(string(st), "| retry count | 3 |") {
		t.Errorf("state.md of the blocked run (%v):\n%s", err, st)
	}
	c.callErr("run/resume", map[string]any{"runId": id}, -32600, "approve its repair")
	c.callErr("run/repair/approve", map[string]any{"runId": id, "taskId": "t9"}, -32600, "repair proposal is for task \"t1\"")
	c.call("run/repair/approve", map[string]any{"runId": id, "taskId": "t1"})
	end := c.runEnd(id)
	if end.str("run.status") != "completed" || end.get("run.counts.completed") != 2.0 || end.str("run.plan.tasks.0.id") != "t1-fix" {
		t.Fatalf("run/completed = %s", end.Raw)
	}
	if out := gitOut(t, repo, "show", "main:flag.txt"); out != "on" {
		t.Errorf("main:flag.txt = %q", out)
	}
}

// A high-risk task pauses a full_auto run, with planning and
// implementation trust auto, until run/task/approve.
func TestRunHighRiskGate(t *testing.T) {
	t.Parallel()
	tasks := []planTask{
		{ID: "t1", Title: "H1 write a.txt", Kind: "file_create", Dependencies: []string{}, Risk: "low", Acceptance: accept("test -f a.txt"), Estimate: "1m"},
		{ID: "t2", Title: "H2 drop the old build directory", Description: "rm -rf old-build", Kind: "shell_command", Dependencies: []string{"t1"},
			Risk: "medium", Acceptance: accept("test -f b.txt"), Estimate: "1m"},
	}
	model := startModel(t, reviewRule,
		scripted.Rule{Match: "Plan this request", Steps: []scripted.Step{{Text: planJSON(t, tasks...)}}},
		taskRule("H1 write", "echo a > a.txt"), taskRule("H2 drop", "echo b > b.txt"))
	repo := shoutRepo(t)
	c := newRunsClient(t, model, faOptions{})
	id := c.startRun(map[string]any{"cwd": repo, "request": "tidy up", "baseBranch": "main", "autonomy": "full_auto",
		"trust": map[string]any{"planning": "auto", "implementation": "auto", "fixes": "auto"}})
	w := c.runWaiting(nil, id, "taskApproval")
	if !strings.Contains(w.str("reason"), "high-risk task t2") || !strings.Contains(w.str("reason"), "deletes directories") {
		t.Errorf("run/updated = %s", w.Raw)
	}
	// The gate names its task in the run, run/updated and attention, not
	// only in the reason's prose.
	if w.str("currentTaskId") != "t2" {
		t.Errorf("run/updated at the gate = %s, want currentTaskId t2", w.Raw)
	}
	c.waitFor("attention", func(m *message) bool {
		return m.str("items.0.runId") == id && m.str("items.0.kind") == "approval" && m.str("items.0.taskId") == "t2"
	})
	if r := c.call("run/read", map[string]any{"runId": id}); r.str("run.currentTaskId") != "t2" {
		t.Errorf("run/read at the gate = %s, want currentTaskId t2", r.Raw)
	}
	if got := c.find("run/task/updated", func(m *message) bool { return m.str("task.id") == "t2" && m.str("task.status") == "running" }); len(got) != 0 {
		t.Fatalf("t2 ran before its approval: %v", got)
	}
	c.callErr("run/task/approve", map[string]any{"runId": id, "taskId": "t1"}, -32600, `waits for approval of task "t2"`)
	c.call("run/task/approve", map[string]any{"runId": id, "taskId": "t2"})
	if end := c.runEnd(id); end.str("run.status") != "completed" || end.get("run.counts.completed") != 2.0 {
		t.Fatalf("run/completed = %s", end.Raw)
	}
}

func clarificationJSON(q string) string {
	b, _ := json.Marshal(map[string]any{"summary": "", "tasks": []any{}, "clarification": map[string]any{"question": q, "context": "greet.sh", "options": []string{"-s", "--shout"}}})
	return string(b)
}

// With maxClarifications 3, the fourth question escalates: the run pauses
// with a blocker instead of asking.
func TestRunClarificationLimit(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "Plan this request", Steps: []scripted.Step{{Text: clarificationJSON("which flag name?")}}})
	repo := shoutRepo(t)
	c := newRunsClient(t, model, faOptions{})
	id := c.startRun(map[string]any{"cwd": repo, "request": "add a shout option", "maxClarifications": 3})
	var last *message
	for i := 1; i <= 3; i++ {
		q := c.waitAfter(last, "run/clarification/requested", func(m *message) bool { return m.str("runId") == id })
		if q.str("clarification.question") != "which flag name?" || q.str("clarification.id") != fmt.Sprintf("c%d", i) {
			t.Fatalf("clarification %d = %s", i, q.Raw)
		}
		if i == 1 {
			c.waitFor("attention", func(m *message) bool { return m.str("items.0.runId") == id && m.str("items.0.kind") == "question" })
		}
		last = c.call("run/clarification/answer", map[string]any{"runId": id, "clarificationId": q.str("clarification.id"), "answer": "--shout"})
	}
	w := c.waitAfter(last, "run/updated", func(m *message) bool { return m.str("runId") == id && m.str("status") == "paused" })
	if !strings.Contains(w.str("reason"), "escalated") {
		t.Errorf("run/updated = %s", w.Raw)
	}
	if n := len(c.find("run/clarification/requested", nil)); n != 3 {
		t.Errorf("%d clarifications asked, want 3", n)
	}
	c.callErr("run/clarification/answer", map[string]any{"runId": id, "clarificationId": "c4", "answer": "x"}, -32600, "not waiting for a clarification")
	read := c.call("run/read", map[string]any{"runId": id})
	if read.str("run.clarifications.2.answer") != "--shout" || len(read.get("run.clarifications").([]any)) != 3 {
		t.Errorf("run/read = %s", read.Raw)
	}
}

// Three runs at once on one repository, each in its own worktree, with
// disjoint files: all three land on main. The first to finish
// fast-forwards main; each later one brings main into its branch, checks
// again and fast-forwards. Every run's memory.md section lands too.
func TestRunsInParallel(t *testing.T) {
	t.Parallel()
	rules := []scripted.Rule{reviewRule}
	for _, p := range []string{"P1", "P2", "P3"} {
		f := strings.ToLower(p) + ".txt"
		rules = append(rules,
			scripted.Rule{Match: "graph of small tasks: " + p, Steps: []scripted.Step{{Text: planJSON(t, planTask{ID: "t1", Title: p + "-task write " + f,
				Kind: "file_create", Dependencies: []string{}, Risk: "low", Acceptance: accept("test -f " + f), Estimate: "1m"})}}},
			taskRule(p+"-task", "echo "+p+" > "+f))
	}
	model := startModel(t, rules...)
	repo := shoutRepo(t)
	c := newRunsClient(t, model, faOptions{config: "max_parallel_runs = 3\n"})
	var ids []string
	for _, p := range []string{"P1", "P2", "P3"} {
		ids = append(ids, c.startRun(map[string]any{"cwd": repo, "request": p + " write a file", "baseBranch": "main",
			"trust": map[string]any{"planning": "auto"}}))
	}
	for i, id := range ids {
		end := c.runEnd(id)
		if end.str("run.status") != "completed" || end.str("run.mergeCommit") == "" {
			t.Fatalf("run %d did not land: %s", i, end.Raw)
		}
		// The task's own commit touches only the run's file.
		want := fmt.Sprintf("p%d.txt", i+1)
		task := gitOut(t, repo, "log", "main", "--format=%H", "--grep", "Apserver-Run: "+id, "--grep", "Apserver-Task: t1", "--all-match")
		files := gitOut(t, repo, "show", "--format=", "--name-only", task)
		for _, f := range strings.Fields(files) {
			if f != want && !strings.HasPrefix(f, ".apserver/") {
				t.Errorf("task of run %d changed %s", i, f)
			}
		}
		if !strings.Contains(files, want) {
			t.Errorf("task of run %d lacks %s: %s", i, want, files)
		}
	}
	// All three landed on main, and so did every run's memory.
	memory := gitOut(t, repo, "show", "main:.apserver/memory.md")
	for i, id := range ids {
		f := fmt.Sprintf("p%d.txt", i+1)
		if out := gitOut(t, repo, "show", "main:"+f); out != fmt.Sprintf("P%d", i+1) {
			t.Errorf("main:%s = %q", f, out)
		}
		if n := strings.Count(memory, "## Run "+id); n != 1 {
			t.Errorf("main's memory.md has %d sections of run %d, want 1:\n%s", n, i, memory)
		}
	}
	if n := strings.Count(memory, "# apserver memory"); n != 1 {
		t.Errorf("main's memory.md has %d headers, want 1", n)
	}
}

// Two runs edit the same lines: the first to finish lands, the other is
// left for review, and says which file conflicts.
func TestRunsConflict(t *testing.T) {
	t.Parallel()
	rules := []scripted.Rule{reviewRule}
	for _, p := range []string{"Q1", "Q2"} {
		rules = append(rules,
			scripted.Rule{Match: "graph of small tasks: " + p, Steps: []scripted.Step{{Text: planJSON(t, planTask{ID: "t1", Title: p + "-task rewrite README.md",
				Kind: "file_edit", Dependencies: []string{}, Risk: "low", Acceptance: accept("grep -q " + p + " README.md"), Estimate: "1m"})}}},
			taskRule(p+"-task", "echo '# greet "+p+"' > README.md"))
	}
	model := startModel(t, rules...)
	repo := shoutRepo(t)
	c := newRunsClient(t, model, faOptions{config: "max_parallel_runs = 2\n"})
	var ids []string
	for _, p := range []string{"Q1", "Q2"} {
		ids = append(ids, c.startRun(map[string]any{"cwd": repo, "request": p + " rewrite the readme", "baseBranch": "main",
			"trust": map[string]any{"planning": "auto"}}))
	}
	var landed, left []*message
	for _, id := range ids {
		end := c.runEnd(id)
		if end.str("run.status") != "completed" {
			t.Fatalf("run %s = %s", id, end.Raw)
		}
		if end.str("run.mergeCommit") != "" {
			landed = append(landed, end)
		} else {
			left = append(left, end)
		}
	}
	if len(landed) != 1 || len(left) != 1 {
		t.Fatalf("%d runs landed and %d were left for review, want 1 and 1", len(landed), len(left))
	}
	if reason := left[0].str("run.reason"); !strings.Contains(reason, "conflict in README.md") || !strings.Contains(reason, "left for review") {
		t.Errorf("reason of the run left for review = %q", reason)
	}
	// The worktree goes when the run ends: the branch is what stays, and
	// its state.md says why it was not merged.
	state := gitOut(t, repo, "show", left[0].str("run.branch")+":.apserver/runs/"+left[0].str("run.id")+"/state.md")
	if !strings.Contains(state, "conflict in README.md") || !strings.Contains(state, "- reason: not merged") || strings.Contains(state, "- reason: merged") {
		t.Errorf("state.md in the branch left for review does not say why it was not merged:\n%s", state)
	}
	// main has the landed run's README; the other branch still has its own.
	win := "Q1"
	if landed[0].str("run.id") == ids[1] {
		win = "Q2"
	}
	if got := gitOut(t, repo, "show", "main:README.md"); got != "# greet "+win {
		t.Errorf("main:README.md = %q, want the landed run's", got)
	}
	if got := gitOut(t, repo, "show", left[0].str("run.branch")+":README.md"); got == "# greet "+win {
		t.Errorf("the branch left for review has the other run's README")
	}
}

// stepRequests counts the model requests whose last user message holds
// marker and that start a turn (no tool output yet): how many times a
// scripted turn began.
func stepRequests(t *testing.T, model *scripted.Server, marker string) int {
	t.Helper()
	n := 0
	for _, r := range modelRequests(model) {
		if strings.Contains(strings.ToLower(r.LastUserText), strings.ToLower(marker)) && r.ToolOutputs == 0 {
			n++
		}
	}
	return n
}

// kill -9 while the plan waits for approval; the restarted apserver shows
// the same wait, and approving it finishes the run with each task run once.
func TestRunKillDuringPlanApproval(t *testing.T) {
	t.Parallel()
	model := startModel(t, shoutRules(t)...)
	repo := shoutRepo(t)
	dataDir := t.TempDir()
	c := newRunsClient(t, model, faOptions{dataDir: dataDir})
	id := c.startRun(map[string]any{"cwd": repo, "request": "add a shout option to greet.sh", "baseBranch": "main"})
	c.runWaiting(nil, id, "planApproval")
	c.kill()

	c2 := newRunsClient(t, model, faOptions{dataDir: dataDir})
	c2.waitFor("attention", func(m *message) bool { return m.str("items.0.runId") == id && m.str("items.0.kind") == "approval" })
	if r := c2.call("run/read", map[string]any{"runId": id}); r.str("run.waitingFor") != "planApproval" || len(r.get("run.plan.tasks").([]any)) != 3 {
		t.Fatalf("run/read after the restart = %s", r.Raw)
	}
	c2.call("run/plan/approve", map[string]any{"runId": id})
	if end := c2.runEnd(id); end.str("run.status") != "completed" || end.get("run.counts.completed") != 3.0 {
		t.Fatalf("run/completed = %s", end.Raw)
	}
	if n := stepRequests(t, model, "Plan this request"); n != 1 {
		t.Errorf("the planner ran %d times, want 1", n)
	}
	for _, task := range []string{"t1", "t2", "t3"} {
		if n := len(strings.Fields(gitOut(t, repo, "log", "main", "--format=%H", "--grep", "Apserver-Task: "+task))); n != 1 {
			t.Errorf("%d commits of %s, want 1", n, task)
		}
	}
}

// kill -9 while a clarification waits; after the restart the answer goes
// to the same run, which plans and finishes; nothing is asked twice.
func TestRunKillDuringClarification(t *testing.T) {
	t.Parallel()
	rules := append([]scripted.Rule{
		{Match: "The user answered: --shout", Steps: []scripted.Step{{Text: planJSON(t, shoutTasks...)}}},
		{Match: "Plan this request", Steps: []scripted.Step{{Text: clarificationJSON("which flag name?")}}},
	}, shoutRules(t)...)
	model := startModel(t, rules...)
	repo := shoutRepo(t)
	dataDir := t.TempDir()
	c := newRunsClient(t, model, faOptions{dataDir: dataDir})
	id := c.startRun(map[string]any{"cwd": repo, "request": "add a shout option to greet.sh", "baseBranch": "main",
		"trust": map[string]any{"planning": "auto"}})
	q := c.waitFor("run/clarification/requested", nil)
	c.kill()

	c2 := newRunsClient(t, model, faOptions{dataDir: dataDir})
	c2.waitFor("attention", func(m *message) bool { return m.str("items.0.runId") == id && m.str("items.0.kind") == "question" })
	c2.call("run/clarification/answer", map[string]any{"runId": id, "clarificationId": q.str("clarification.id"), "answer": "--shout"})
	if end := c2.runEnd(id); end.str("run.status") != "completed" || end.get("run.counts.completed") != 3.0 {
		t.Fatalf("run/completed = %s", end.Raw)
	}
	if n := len(c2.find("run/clarification/requested", nil)); n != 0 {
		t.Errorf("the restarted apserver asked %d clarifications again", n)
	}
	if n := stepRequests(t, model, "Plan this request"); n != 2 {
		t.Errorf("the planner ran %d turns, want 2 (the question, the plan)", n)
	}
}

// kill -9 while a task's command runs; the restarted apserver takes the
// task up in the same thread: no task starts twice, no commit is
// duplicated.
func TestRunKillDuringImplementation(t *testing.T) {
	t.Parallel()
	rules := shoutRules(t)
	// t2's first command sleeps (and leaves a mark); run again, it writes
	// the test script and removes the mark.
	for i, r := range rules {
		if r.Match == "S2 add test_greet.sh" {
			rules[i] = taskRule(r.Match, `if [ -f .slept ]; then rm .slept; printf '%s\n' 'set -e' 'sh greet.sh --shout bob | grep -q "HELLO, BOB"' > test_greet.sh; else touch .slept; sleep 60; fi`)
		}
	}
	model := startModel(t, rules...)
	repo := shoutRepo(t)
	dataDir := t.TempDir()
	c := newRunsClient(t, model, faOptions{dataDir: dataDir})
	st := c.call("run/start", map[string]any{"cwd": repo, "request": "add a shout option to greet.sh", "baseBranch": "main",
		"trust": map[string]any{"planning": "auto"}})
	id, wt := st.str("run.id"), st.str("run.worktree")
	started := c.waitFor("run/task/updated", func(m *message) bool { return m.str("task.id") == "t2" && m.str("task.threadId") != "" })
	thread := started.str("task.threadId")
	c.waitFor("item/started", func(m *message) bool {
		return m.str("threadId") == thread && m.str("item.type") == "commandExecution"
	})
	// The command is in its sleep once its mark exists.
	for deadline := time.Now().Add(waitTimeout); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(wt, ".slept")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("t2's command never started")
		}
	}
	c.kill()

	c2 := newRunsClient(t, model, faOptions{dataDir: dataDir})
	end := c2.runEnd(id)
	if end.str("run.status") != "completed" || end.get("run.counts.completed") != 3.0 {
		t.Fatalf("run/completed = %s", end.Raw)
	}
	if got := end.str("run.plan.tasks.1.threadId"); got != thread {
		t.Errorf("t2 finished in thread %s, want its first thread %s", got, thread)
	}
	if n := len(c2.find("run/task/updated", func(m *message) bool {
		return m.str("task.status") == "running" && m.str("task.threadId") == "" && m.str("task.id") != "t3"
	})); n != 0 {
		t.Errorf("after the restart %d of t1, t2 started again", n)
	}
	if n := stepRequests(t, model, "Task: S1 make greet.sh"); n != 1 {
		t.Errorf("t1's implementer began %d turns, want 1", n)
	}
	for _, task := range []string{"t1", "t2", "t3"} {
		if n := len(strings.Fields(gitOut(t, repo, "log", "main", "--format=%H", "--grep", "Apserver-Task: "+task))); n != 1 {
			t.Errorf("%d commits of %s, want 1", n, task)
		}
	}
}

// runCmd runs `apserver run args...` in dir against model.
func runCmd(t *testing.T, model *scripted.Server, dir, dataDir string, args ...string) execResult {
	t.Helper()
	home := t.TempDir()
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := execResult{dataDir: dataDir, cwd: dir}
	full := append([]string{"run", "--config", cfg, "--data-dir", dataDir, "--model", "scripted-model", "--base-url", model.URL()}, args...)
	r.run(t, home, full)
	return r
}

// `apserver run`: with planning trust manual it stops at the plan approval
// (exit 5); with auto trust it carries the run to its end (exit 0), and
// --json prints the run's notifications.
func TestRunHeadless(t *testing.T) {
	t.Parallel()
	model := startModel(t, shoutRules(t)...)
	repo := shoutRepo(t)
	r := runCmd(t, model, repo, t.TempDir(), "--base", "main", "add a shout option to greet.sh")
	if r.code != 5 || !strings.Contains(r.stdout, "waiting for planApproval") {
		t.Errorf("apserver run (manual planning) = exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = runCmd(t, model, repo, t.TempDir(), "--base", "main", "--trust-planning", "auto", "--json", "add a shout option to greet.sh")
	if r.code != 0 {
		t.Fatalf("apserver run = exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	var last map[string]any
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if err := json.Unmarshal([]byte(line), &last); err != nil {
			t.Fatalf("stdout line %q: %v", line, err)
		}
	}
	if last["method"] != "run/completed" || jget(last, "params.run.status") != "completed" {
		t.Errorf("last line = %v", last)
	}
	if n := len(strings.Fields(gitOut(t, repo, "log", "main", "--format=%H", "--grep", "Apserver-Task: t3"))); n != 1 {
		t.Errorf("%d commits of t3 on main, want 1", n)
	}
	// Autonomy off: the run ends with the approved plan in its branch, and
	// nothing runs or merges.
	mainBefore := gitOut(t, repo, "rev-parse", "main")
	r = runCmd(t, model, repo, t.TempDir(), "--base", "main", "--trust-planning", "auto", "--autonomy", "off", "add a shout option to greet.sh")
	if r.code != 0 || !strings.Contains(r.stdout, " completed\n") {
		t.Fatalf("apserver run --autonomy off = exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	branch := strings.TrimPrefix(strings.Split(r.stdout, "\n")[1], "branch ")
	if plan := gitOut(t, repo, "show", branch+":.apserver/runs/"+strings.Fields(r.stdout)[1]+"/plan.md"); !strings.Contains(plan, "S3 document --shout") {
		t.Errorf("plan.md in %s:\n%s", branch, plan)
	}
	if gitOut(t, repo, "rev-parse", "main") != mainBefore || strings.Contains(r.stderr, "task t1 running") {
		t.Errorf("autonomy off ran tasks or merged:\n%s", r.stderr)
	}
	if r := runCmd(t, model, repo, t.TempDir(), "--autonomy", "yolo", "x"); r.code != 2 || !strings.Contains(r.stderr, "autonomy") {
		t.Errorf("bad --autonomy = exit %d: %s", r.code, r.stderr)
	}
}

// TestRunOverhead50 is the benchmark of docs/benchmarks.md ("Runs"): a run
// of 50 small tasks with the scripted model. The overhead per task is the
// run's wall time from the plan approval to run/completed, less the time
// its turns took (every turn of every task and review thread, which run
// one after another), over 50: thread and full-auto starts, the controller,
// the diff, the commit, the events and the artifacts. Not a timed test: it
// runs only with APSERVER_BENCH_RUNS=1 and reports.
func TestRunOverhead50(t *testing.T) {
	if os.Getenv("APSERVER_BENCH_RUNS") == "" {
		t.Skip("set APSERVER_BENCH_RUNS=1 to measure")
	}
	const n = 50
	var tasks []planTask
	rules := []scripted.Rule{reviewRule}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("t%02d", i)
		deps := []string{}
		if i > 1 {
			deps = []string{fmt.Sprintf("t%02d", i-1)}
		}
		tasks = append(tasks, planTask{ID: id, Title: "B" + id + " write " + id + ".txt", Kind: "file_create", Dependencies: deps,
			Risk: "low", Acceptance: map[string]any{"criteria": []string{}, "checks": []string{}, "files": []string{id + ".txt"}}, Estimate: "1m"})
		rules = append(rules, taskRule("Task: B"+id+" ", "echo "+id+" > "+id+".txt"))
	}
	rules = append(rules, scripted.Rule{Match: "Plan this request", Steps: []scripted.Step{{Text: planJSON(t, tasks...)}}})
	model := startModel(t, rules...)
	repo := shoutRepo(t)
	c := newRunsClient(t, model, faOptions{})
	c.wait = 10 * time.Minute
	id := c.startRun(map[string]any{"cwd": repo, "request": "fifty files", "baseBranch": "main"})
	c.runWaiting(nil, id, "planApproval")
	approved := time.Now()
	c.call("run/plan/approve", map[string]any{"runId": id})
	end := c.runEnd(id)
	wall := time.Since(approved)
	if end.str("run.status") != "completed" || end.get("run.counts.completed") != float64(n) {
		t.Fatalf("run/completed = %s", end.Raw)
	}
	var turns time.Duration
	count := 0
	for _, m := range c.find("turn/completed", nil) {
		if d, ok := m.get("turn.durationMs").(float64); ok && m.Seq > end.Seq-1_000_000 {
			turns += time.Duration(d) * time.Millisecond
			count++
		}
	}
	// The planner's turn ran before the approval.
	for _, m := range c.find("turn/completed", nil) {
		if m.Seq < c.find("run/plan/updated", nil)[0].Seq {
			if d, ok := m.get("turn.durationMs").(float64); ok {
				turns -= time.Duration(d) * time.Millisecond
				count--
			}
		}
	}
	// The run's own work per task, from its event log: validated →
	// committed is the commit (and the events and artifacts around it);
	// committed → the next task's thread is the events, the artifacts and
	// starting the next thread.
	db, err := store.OpenReadOnly(filepath.Join(c.dataDir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	evs, err := db.RunEvents(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var commit, between, validate, implement int64
	var last = map[string]int64{}
	for _, e := range evs {
		switch e.Type {
		case "taskStarted":
			if c, ok := last["taskCommitted"]; ok {
				between += e.At - c
			}
		case "taskImplemented":
			implement += e.At - last["taskStarted"]
		case "taskValidated":
			validate += e.At - last["taskImplemented"]
		case "taskCommitted":
			commit += e.At - last["taskValidated"]
		}
		last[e.Type] = e.At
	}
	t.Logf("per task: implement %d ms, validate %d ms, commit %d ms, to the next task's thread %d ms",
		implement/n, validate/n, commit/n, between/(n-1))
	over := (wall - turns) / n
	t.Logf("%d tasks: wall %v from approval to completion, %d turns took %v; overhead per task %v", n, wall.Round(time.Millisecond),
		count, turns.Round(time.Millisecond), over.Round(time.Millisecond))
}

// The plan preview over the wire: a bad update is refused, an edit is
// kept, a rejection goes back to the planner with the feedback; then a
// run cancelled during a task stops the task's thread and keeps its branch.
func TestRunPlanEditRejectCancel(t *testing.T) {
	t.Parallel()
	slow := []planTask{{ID: "c1", Title: "C1 slow work", Kind: "shell_command", Dependencies: []string{}, Risk: "low", Acceptance: accept("true"), Estimate: "1h"}}
	model := startModel(t,
		scripted.Rule{Match: "feedback: use getopts", Steps: []scripted.Step{{Text: planJSON(t, slow...)}}},
		scripted.Rule{Match: "Plan this request", Steps: []scripted.Step{{Text: planJSON(t, shoutTasks...)}}},
		taskRule("Task: C1 slow", "sleep 60"),
	)
	repo := shoutRepo(t)
	mainBefore := gitOut(t, repo, "rev-parse", "main")
	c := newRunsClient(t, model, faOptions{})
	id := c.startRun(map[string]any{"cwd": repo, "request": "add a shout option to greet.sh", "baseBranch": "main"})
	c.runWaiting(nil, id, "planApproval")
	cyc := []planTask{shoutTasks[0], shoutTasks[1]}
	cyc[0].Dependencies = []string{"t2"}
	c.callErr("run/plan/update", map[string]any{"runId": id, "tasks": cyc}, -32602, "cycle")
	upd := c.call("run/plan/update", map[string]any{"runId": id, "tasks": shoutTasks[:2]})
	if upd.get("run.plan.version") != 2.0 || len(upd.get("run.plan.tasks").([]any)) != 2 {
		t.Fatalf("run/plan/update = %s", upd.Raw)
	}
	rej := c.call("run/plan/reject", map[string]any{"runId": id, "feedback": "use getopts"})
	w := c.runWaiting(rej, id, "planApproval")
	read := c.call("run/read", map[string]any{"runId": id})
	if read.str("run.plan.tasks.0.id") != "c1" || read.get("run.plan.version") != 3.0 {
		t.Fatalf("the plan after the rejection = %s (after %s)", read.Raw, w.Raw)
	}
	c.call("run/plan/approve", map[string]any{"runId": id})
	started := c.waitFor("run/task/updated", func(m *message) bool { return m.str("task.id") == "c1" && m.str("task.threadId") != "" })
	thread := started.str("task.threadId")
	c.waitFor("item/started", func(m *message) bool { return m.str("threadId") == thread && m.str("item.type") == "commandExecution" })
	c.call("run/cancel", map[string]any{"runId": id})
	end := c.runEnd(id)
	if end.str("run.status") != "cancelled" || end.str("run.plan.tasks.0.status") != "failed" {
		t.Errorf("run/completed = %s", end.Raw)
	}
	c.waitFor("fullAuto/statusChanged", func(m *message) bool { return m.str("threadId") == thread && m.str("state") == "stopped" })
	if got := gitOut(t, repo, "rev-parse", "main"); got != mainBefore {
		t.Error("a cancelled run changed main")
	}
	gitOut(t, repo, "rev-parse", "--verify", end.str("run.branch")) // the branch is kept
	c.callErr("run/resume", map[string]any{"runId": id}, -32600, "is cancelled")
}

// The task thread's full auto pauses: the run shows that it waits on that
// thread (run/updated, attention with its runId), and runs on to the end
// when the thread's full auto is resumed.
func TestRunTaskThreadPaused(t *testing.T) {
	t.Parallel()
	model := startModel(t, reviewRule,
		scripted.Rule{Match: "Plan this request", Steps: []scripted.Step{{Text: planJSON(t, planTask{ID: "t1", Title: "W1-task write w.txt",
			Kind: "file_create", Dependencies: []string{}, Risk: "low", Acceptance: accept("test -f w.txt"), Estimate: "1m"})}}},
		scripted.Rule{Match: "W1-task", Steps: []scripted.Step{
			// Slow enough to pause the thread's full auto in its first turn.
			{Text: "Working on it.", ToolCalls: []scripted.ToolCall{{Command: "echo w > w.txt"}}, TTFT: 3 * time.Second},
			{Text: "The task is complete."},
		}})
	repo := shoutRepo(t)
	c := newRunsClient(t, model, faOptions{})
	id := c.startRun(map[string]any{"cwd": repo, "request": "write w", "baseBranch": "main", "trust": map[string]any{"planning": "auto"}})
	started := c.waitFor("run/task/updated", func(m *message) bool { return m.str("task.id") == "t1" && m.str("task.threadId") != "" })
	thread := started.str("task.threadId")
	c.call("fullAuto/pause", map[string]any{"threadId": thread})

	wait := c.waitAfter(started, "run/updated", func(m *message) bool { return m.str("runId") == id && m.str("waitingFor") == "taskThread" })
	if wait.str("status") != "paused" {
		t.Errorf("run/updated while the task thread is paused = %s", wait.Raw)
	}
	// One wait, one item: the thread's own, where the user resumes it (the
	// run's item about the same wait is left out while the thread has one).
	c.waitAfter(started, "attention", func(m *message) bool {
		return m.str("items.0.threadId") == thread && m.str("items.0.kind") == "paused"
	})
	c.sync(thread)
	all := c.find("attention", nil)
	last := all[len(all)-1]
	if last.get("count") != 1.0 || last.str("items.0.threadId") != thread || last.get("items.0.runId") != nil {
		t.Errorf("attention while the task thread is paused = %s, want one item, thread %s's own", last.Raw, thread)
	}
	if r := c.call("run/read", map[string]any{"runId": id}); r.str("run.status") != "paused" || r.str("run.waitingFor") != "taskThread" {
		t.Errorf("run/read while the task thread is paused = %s", r.Raw)
	}
	c.call("fullAuto/resume", map[string]any{"threadId": thread})
	c.waitAfter(wait, "run/updated", func(m *message) bool { return m.str("runId") == id && m.str("status") == "running" })
	if end := c.runEnd(id); end.str("run.status") != "completed" || end.get("run.counts.completed") != 1.0 {
		t.Fatalf("run/completed = %s", end.Raw)
	}
}

// apserver run --resume takes up a stored run: one that waits on a human
// is reported again (exit 5), a failed one is resumed and goes to its end
// (exit 0); an unknown id exits 1, as an unknown thread id does in exec.
func TestRunHeadlessResume(t *testing.T) {
	t.Parallel()
	rules := shoutRules(t)
	for i, r := range rules {
		if r.Match == "Plan this request" {
			// The first plan is unreadable: the run fails.
			rules[i] = scripted.Rule{Match: r.Match, Sequential: true, Steps: append([]scripted.Step{{Text: "no plan today"}}, r.Steps[0], r.Steps[0])}
		}
	}
	model := startModel(t, rules...)
	repo := shoutRepo(t)
	dataDir := t.TempDir()
	r := runCmd(t, model, repo, dataDir, "--base", "main", "--trust-planning", "auto", "add a shout option to greet.sh")
	if r.code != 6 {
		t.Fatalf("apserver run (unreadable plan) = exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	id := strings.Fields(r.stdout)[1]
	r = runCmd(t, model, repo, dataDir, "--resume", id)
	if r.code != 0 || !strings.Contains(r.stdout, "run "+id+" completed") || !strings.Contains(r.stdout, "merged into main") {
		t.Fatalf("apserver run --resume %s = exit %d\nstdout:\n%s\nstderr:\n%s", id, r.code, r.stdout, r.stderr)
	}
	if n := len(strings.Fields(gitOut(t, repo, "log", "main", "--format=%H", "--grep", "Apserver-Task: t3"))); n != 1 {
		t.Errorf("%d commits of t3 on main, want 1", n)
	}
	// A run waiting for its plan's approval is reported as it waits.
	r = runCmd(t, model, repo, dataDir, "--base", "main", "add a shout option to greet.sh")
	wait := strings.Fields(r.stdout)[1]
	if r = runCmd(t, model, repo, dataDir, "--resume", wait); r.code != 5 || !strings.Contains(r.stdout, "waiting for planApproval") {
		t.Errorf("apserver run --resume (waiting) = exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if r = runCmd(t, model, repo, dataDir, "--resume", "nosuchrun"); r.code != 1 || !strings.Contains(r.stderr, "nosuchrun") {
		t.Errorf("apserver run --resume of an unknown run = exit %d: %s", r.code, r.stderr)
	}
	if r = runCmd(t, model, repo, dataDir, "--resume", id, "a request"); r.code != 2 {
		t.Errorf("apserver run --resume with a request = exit %d: %s", r.code, r.stderr)
	}
}

// A role's provider ([roles.planner] provider) is the one the role's
// thread talks to, though its model is in no [[models]] entry.
func TestRunRoleProvider(t *testing.T) {
	t.Parallel()
	main := startModel(t, shoutRules(t)...)
	planner := startModel(t, shoutRules(t)...)
	repo := shoutRepo(t)
	config := fmt.Sprintf("[providers.plans]\nbase_url = %q\n\n[roles.planner]\nmodel = \"planner-model\"\nprovider = \"plans\"\n", planner.URL()+"/v1")
	c := newRunsClient(t, main, faOptions{config: config})
	id := c.startRun(map[string]any{"cwd": repo, "request": "add a shout option", "baseBranch": "main"})
	c.waitFor("run/updated", func(m *message) bool { return m.str("runId") == id && m.str("waitingFor") == "planApproval" })
	asked := func(srv *scripted.Server) (n int, model string) {
		for _, r := range modelRequests(srv) {
			if strings.Contains(r.LastUserText, "Plan this request") {
				n++
				var body struct{ Model string }
				json.Unmarshal(r.Body, &body)
				model = body.Model
			}
		}
		return n, model
	}
	if n, model := asked(planner); n != 1 || model != "planner-model" {
		t.Errorf("the planner role's provider got %d plan requests for model %q, want 1 for planner-model", n, model)
	}
	if n, _ := asked(main); n != 0 {
		t.Errorf("the default provider got %d plan requests", n)
	}
	c.call("run/cancel", map[string]any{"runId": id})
}

// startRunCmd starts `apserver run args...` in dir against model and
// returns the process; wait collects its exit code and outputs.
func startRunCmd(t *testing.T, model *scripted.Server, dir, dataDir string, args ...string) (*exec.Cmd, func() execResult) {
	t.Helper()
	home := t.TempDir()
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	full := append([]string{"run", "--config", cfg, "--data-dir", dataDir, "--model", "scripted-model", "--base-url", model.URL()}, args...)
	cmd := exec.Command(binPath, full...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + home, "OPENAI_API_KEY=test", "PATH=" + os.Getenv("PATH")}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, func() execResult {
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(2 * waitTimeout):
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("apserver run did not end\nstdout:\n%s\nstderr:\n%s", out.String(), errb.String())
		}
		r := execResult{dataDir: dataDir, cwd: dir, stdout: out.String(), stderr: errb.String()}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

// waitGlob waits until a file matches pattern and returns it.
func waitGlob(t *testing.T, pattern string) string {
	t.Helper()
	for deadline := time.Now().Add(waitTimeout); ; time.Sleep(20 * time.Millisecond) {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			return m[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing matches %s", pattern)
		}
	}
}

// apserver run interrupted (SIGINT: exit 130) or killed (kill -9) in the
// middle of a task: apserver run --resume takes the run up and carries it
// to its end, with no task committed twice and the committed task not run
// again.
func TestRunHeadlessResumeAfterInterrupt(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			rules := shoutRules(t)
			for i, r := range rules {
				if r.Match == "S2 add test_greet.sh" {
					rules[i] = taskRule(r.Match, `if [ -f .slept ]; then rm .slept; printf '%s\n' 'set -e' 'sh greet.sh --shout bob | grep -q "HELLO, BOB"' > test_greet.sh; else touch .slept; sleep 60; fi`)
				}
			}
			model := startModel(t, rules...)
			repo := shoutRepo(t)
			dataDir := t.TempDir()
			cmd, wait := startRunCmd(t, model, repo, dataDir, "--base", "main", "--trust-planning", "auto", "add a shout option to greet.sh")
			slept := waitGlob(t, filepath.Join(dataDir, "worktrees", "*", ".slept"))
			id := filepath.Base(filepath.Dir(slept))
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			r := wait()
			if sig == syscall.SIGINT && (r.code != 130 || !strings.Contains(r.stderr, "interrupted")) {
				t.Fatalf("apserver run after SIGINT = exit %d\nstderr:\n%s", r.code, r.stderr)
			}
			r = runCmd(t, model, repo, dataDir, "--resume", id)
			if r.code != 0 || !strings.Contains(r.stdout, "run "+id+" completed") {
				t.Fatalf("apserver run --resume %s = exit %d\nstdout:\n%s\nstderr:\n%s", id, r.code, r.stdout, r.stderr)
			}
			for _, task := range []string{"t1", "t2", "t3"} {
				if n := len(strings.Fields(gitOut(t, repo, "log", "main", "--format=%H", "--grep", "Apserver-Task: "+task))); n != 1 {
					t.Errorf("%d commits of %s on main, want 1", n, task)
				}
			}
			if n := stepRequests(t, model, "Task: S1 make greet.sh"); n != 1 {
				t.Errorf("t1's implementer began %d turns, want 1 (it was committed before the interrupt)", n)
			}
		})
	}
}

// With max_parallel_runs 1, a run waiting for the slot is queued with its
// place (run/updated, run/read), moves up when a run ahead of it ends, and
// runs once it has the slot.
func TestRunQueuedForASlot(t *testing.T) {
	t.Parallel()
	model := startModel(t, shoutRules(t)...)
	repo := shoutRepo(t)
	c := newRunsClient(t, model, faOptions{config: "max_parallel_runs = 1\n"})
	start := func() string {
		return c.startRun(map[string]any{"cwd": repo, "request": "add a shout option to greet.sh", "baseBranch": "main"})
	}
	first := start()
	c.runWaiting(nil, first, "planApproval") // a run waiting on a human keeps its slot
	second := start()
	queued := func(after *message, id string, place float64) *message {
		t.Helper()
		return c.waitAfter(after, "run/updated", func(m *message) bool {
			return m.str("runId") == id && m.str("status") == "queued" && m.get("queuePosition") == place
		})
	}
	q2 := queued(nil, second, 1)
	if !strings.Contains(q2.str("reason"), "max_parallel_runs") {
		t.Errorf("run/updated of the queued run = %s", q2.Raw)
	}
	third := start()
	queued(nil, third, 2)
	if r := c.call("run/read", map[string]any{"runId": third}); r.str("run.status") != "queued" || r.get("run.queuePosition") != 2.0 {
		t.Errorf("run/read of the third run = %s", r.Raw)
	}
	cancel := c.call("run/cancel", map[string]any{"runId": first})
	// The second run gets the slot and plans; the third moves up.
	c.waitAfter(cancel, "run/updated", func(m *message) bool {
		return m.str("runId") == second && m.str("status") == "running" && m.get("queuePosition") == nil
	})
	c.runWaiting(cancel, second, "planApproval")
	queued(cancel, third, 1)
	c.call("run/cancel", map[string]any{"runId": second})
	c.runWaiting(nil, third, "planApproval")
	c.call("run/cancel", map[string]any{"runId": third})
}

// waitWorktreeGone waits until the worktree wt is removed and no longer in git
// worktree list (a run removes it once it has ended).
func waitWorktreeGone(t *testing.T, repo, wt string) {
	t.Helper()
	for deadline := time.Now().Add(waitTimeout); ; time.Sleep(20 * time.Millisecond) {
		_, err := os.Stat(wt)
		if os.IsNotExist(err) && !strings.Contains(gitOut(t, repo, "worktree", "list", "--porcelain"), wt) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worktree %s of a finished run is still there:\n%s", wt, gitOut(t, repo, "worktree", "list"))
		}
	}
}

// Worktrees that finished runs left behind (a stop between the end and
// the removal, a directory deleted by hand) are removed or pruned when
// apserver run starts.
func TestRunWorktreesTidiedAtStart(t *testing.T) {
	t.Parallel()
	model := startModel(t, shoutRules(t)...)
	repo := shoutRepo(t)
	dataDir := t.TempDir()
	r := runCmd(t, model, repo, dataDir, "--base", "main", "--trust-planning", "auto", "add a shout option to greet.sh")
	if r.code != 0 {
		t.Fatalf("apserver run = exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	id := strings.Fields(r.stdout)[1]
	wt := filepath.Join(dataDir, "worktrees", id)
	waitWorktreeGone(t, repo, wt)
	// Left behind as a killed process would: registered again with git.
	branch := strings.TrimPrefix(strings.Split(r.stdout, "\n")[1], "branch ")
	git(t, repo, "worktree", "add", "-q", wt, branch)
	stray := filepath.Join(t.TempDir(), "stray")
	git(t, repo, "worktree", "add", "-q", "-b", "stray", stray, "main")
	if err := os.RemoveAll(stray); err != nil {
		t.Fatal(err)
	}
	// Any apserver run on the data dir tidies up, here one that is over.
	if r := runCmd(t, model, repo, dataDir, "--resume", id); r.code != 0 {
		t.Fatalf("apserver run --resume = exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Errorf("the finished run's worktree is still there (%v)", err)
	}
	if list := gitOut(t, repo, "worktree", "list", "--porcelain"); strings.Contains(list, wt) || strings.Contains(list, stray) {
		t.Errorf("git worktree list still has leftovers:\n%s", list)
	}
	gitOut(t, repo, "rev-parse", "--verify", branch)
}

// The validator's answer is untrusted: one that is not {pass: boolean,
// findings: string} is asked for again once, saying what was wrong; a
// second bad answer fails the run naming it, and nothing is committed.
func TestRunValidatorAnswerChecked(t *testing.T) {
	t.Parallel()
	tasks := []planTask{{ID: "t1", Title: "V1 write v.txt", Kind: "file_create", Dependencies: []string{}, Risk: "low",
		Acceptance: accept("test -f v.txt"), Estimate: "1m"}}
	for _, tc := range []struct {
		name, again string
		code        int
	}{
		{"fixed", `{"pass":true,"findings":"v.txt is there"}`, 0},
		{"twice", `{"pass":"yes","findings":"v.txt is there"}`, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := startModel(t,
				scripted.Rule{Match: "Review task", Steps: []scripted.Step{{Text: "Looks good to me!"}}},
				scripted.Rule{Match: "Your answer is not valid", Steps: []scripted.Step{{Text: tc.again}}},
				scripted.Rule{Match: "Plan this request", Steps: []scripted.Step{{Text: planJSON(t, tasks...)}}},
				taskRule("V1 write", "echo v > v.txt"))
			repo := shoutRepo(t)
			r := runCmd(t, model, repo, t.TempDir(), "--base", "main", "--trust-planning", "auto", "write v")
			if r.code != tc.code {
				t.Fatalf("apserver run = exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			var asked string
			for _, req := range modelRequests(model) {
				if strings.Contains(req.LastUserText, "Your answer is not valid") {
					asked = req.LastUserText
				}
			}
			if !strings.Contains(asked, "not a JSON object") {
				t.Errorf("the validator was asked again with %q, want it told what was wrong", asked)
			}
			commits := len(strings.Fields(gitOut(t, repo, "log", "--all", "--format=%H", "--grep", "Apserver-Task: t1")))
			if tc.code == 0 {
				if commits != 1 {
					t.Errorf("%d commits of t1, want 1", commits)
				}
				return
			}
			if !strings.Contains(r.stdout, "is not valid, twice") || !strings.Contains(r.stdout, "pass must be a boolean") {
				t.Errorf("the failed run's reason does not name the bad answer:\n%s", r.stdout)
			}
			if commits != 0 {
				t.Errorf("%d commits of t1 after two bad reviews, want 0", commits)
			}
		})
	}
}

// The planner's answer is untrusted too: one that is not a valid plan (not
// JSON, or a decision without a title) is asked for again once in the
// planner's thread, saying what was wrong; a second bad answer fails the
// run naming it, and no task starts.
func TestRunPlannerAnswerChecked(t *testing.T) {
	t.Parallel()
	tasks := []planTask{{ID: "t1", Title: "P1 write p.txt", Kind: "file_create", Dependencies: []string{}, Risk: "low",
		Acceptance: accept("test -f p.txt"), Estimate: "1m"}}
	withDecision := func(title string) string {
		b, err := json.Marshal(map[string]any{"summary": "the plan", "tasks": tasks, "clarification": nil,
			"decisions": []map[string]any{{"title": title, "text": "Plain files only.", "why": "simple", "alternatives": []string{},
				"files": []string{}, "tags": []string{}}}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	outside := tasks[0]
	outside.Acceptance = map[string]any{"criteria": []string{"it is there"}, "checks": []string{}, "files": []string{"../../../etc/passwd"}}
	outsideFile := planJSON(t, outside)
	for _, tc := range []struct {
		name, first, again, told string
		code                     int
	}{
		{"notjson", "Here is my plan: write p.txt.", planJSON(t, tasks...), "the plan is not JSON", 0},
		{"decision", withDecision(" "), withDecision("Plain files"), "decisions[0].title: empty", 0},
		{"twice", withDecision(""), withDecision(""), "decisions[0].title: empty", 6},
		// A file outside the repository is never looked for: the plan is
		// sent back.
		{"outside", outsideFile, planJSON(t, tasks...), "tasks[0].acceptance.files[0]", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := startModel(t,
				scripted.Rule{Match: "Your plan is not valid", Steps: []scripted.Step{{Text: tc.again}}},
				scripted.Rule{Match: "Plan this request", Steps: []scripted.Step{{Text: tc.first}}},
				scripted.Rule{Match: "Review task", Steps: []scripted.Step{{Text: `{"pass":true,"findings":"p.txt is there"}`}}},
				taskRule("P1 write", "echo p > p.txt"))
			repo := shoutRepo(t)
			r := runCmd(t, model, repo, t.TempDir(), "--base", "main", "--trust-planning", "auto", "write p")
			if r.code != tc.code {
				t.Fatalf("apserver run = exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			var asked []string
			for _, req := range modelRequests(model) {
				if strings.Contains(req.LastUserText, "Your plan is not valid") {
					asked = append(asked, req.LastUserText)
				}
			}
			if len(asked) != 1 || !strings.Contains(asked[0], tc.told) {
				t.Errorf("the planner was asked again %d times (%q), want once, told %q", len(asked), asked, tc.told)
			}
			commits := len(strings.Fields(gitOut(t, repo, "log", "--all", "--format=%H", "--grep", "Apserver-Task: t1")))
			if tc.code == 0 {
				if commits != 1 {
					t.Errorf("%d commits of t1, want 1", commits)
				}
				return
			}
			if !strings.Contains(r.stdout, "is not valid, twice") || !strings.Contains(r.stdout, tc.told) {
				t.Errorf("the failed run's reason does not name the bad answer:\n%s", r.stdout)
			}
			if commits != 0 {
				t.Errorf("%d commits of t1 after two bad plans, want 0", commits)
			}
		})
	}
}

// A task whose implementer says it is done after a check of its own was
// declined (or failed, or never finished) is not done: the attempt fails
// naming the check, and after the retries the task is blocked for
// review; nothing is committed. A check the task names is run by the
// validator itself, so its own run settles it.
func TestRunTaskClaimNeedsEvidence(t *testing.T) {
	t.Parallel()
	tasks := []planTask{{ID: "t1", Title: "E1 tidy the greeting", Kind: "file_edit", Dependencies: []string{}, Risk: "low",
		Acceptance: map[string]any{"criteria": []string{"the greeting is tidy"}, "checks": []string{}, "files": []string{}}, Estimate: "1m"}}
	model := startModel(t, reviewRule,
		scripted.Rule{Match: "Plan this request", Steps: []scripted.Step{{Text: planJSON(t, tasks...)}}},
		// The implementer's check is declined (the workspace's rules
		// forbid it, and apserver run declines what asks a human), and it
		// says it is done all the same.
		taskRule("E1 tidy", "go test ./..."))
	repo := shoutRepo(t)
	if err := os.MkdirAll(filepath.Join(repo, ".apserver"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".apserver", "rules"), []byte("forbidden go test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "rules")
	git(t, repo, "branch", "-f", "main", "HEAD")
	r := runCmd(t, model, repo, t.TempDir(), "--base", "main", "--trust-planning", "auto", "tidy the greeting")
	if r.code != 5 || !strings.Contains(r.stdout, "waiting for repair") {
		t.Fatalf("apserver run = exit %d, want 5 (blocked)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	// The reason names the check (full auto itself may refuse the claim
	// first; either way it is not done).
	if !strings.Contains(r.stdout, "go test ./...") || !strings.Contains(r.stdout, "declined") {
		t.Errorf("the blocked task's reason does not name the declined check:\n%s", r.stdout)
	}
	if n := len(strings.Fields(gitOut(t, repo, "log", "--all", "--format=%H", "--grep", "Apserver-Task: t1"))); n != 0 {
		t.Errorf("%d commits of t1, want none: its check failed", n)
	}
}

// run/pause while a task works: the run is pausing (not paused) until the
// task is validated and committed, then paused; run/resume goes on.
func TestRunPausingUntilTheTaskEnds(t *testing.T) {
	t.Parallel()
	model := startModel(t, reviewRule,
		scripted.Rule{Match: "Plan this request", Steps: []scripted.Step{{Text: planJSON(t,
			planTask{ID: "t1", Title: "Z1-task write z.txt", Kind: "file_create", Dependencies: []string{}, Risk: "low", Acceptance: accept("test -f z.txt"), Estimate: "1m"},
			planTask{ID: "t2", Title: "Z2-task write y.txt", Kind: "file_create", Dependencies: []string{"t1"}, Risk: "low", Acceptance: accept("test -f y.txt"), Estimate: "1m"})}}},
		scripted.Rule{Match: "Z1-task", Steps: []scripted.Step{
			// Slow enough to pause the run in the task's first turn.
			{Text: "Working on it.", ToolCalls: []scripted.ToolCall{{Command: "echo z > z.txt"}}, TTFT: 2 * time.Second},
			{Text: "The task is complete."},
		}},
		taskRule("Z2-task", "echo y > y.txt"))
	repo := shoutRepo(t)
	c := newRunsClient(t, model, faOptions{})
	id := c.startRun(map[string]any{"cwd": repo, "request": "write z", "baseBranch": "main", "trust": map[string]any{"planning": "auto"}})
	started := c.waitFor("run/task/updated", func(m *message) bool { return m.str("task.id") == "t1" && m.str("task.threadId") != "" })
	p := c.call("run/pause", map[string]any{"runId": id})
	if p.str("run.status") != "pausing" || !strings.Contains(p.str("run.reason"), "task t1") {
		t.Fatalf("run/pause while t1 works = %s, want pausing, naming t1", p.Raw)
	}
	c.callErr("run/pause", map[string]any{"runId": id}, -32600, "already pausing")
	paused := c.waitAfter(started, "run/updated", func(m *message) bool { return m.str("runId") == id && m.str("status") == "paused" })
	done := c.find("run/task/updated", func(m *message) bool { return m.str("task.id") == "t1" && m.str("task.status") == "completed" })
	if len(done) != 1 || done[0].Seq > paused.Seq {
		t.Fatalf("paused (%s) before t1 completed (%d updates)", paused.Raw, len(done))
	}
	for _, m := range c.find("run/updated", func(m *message) bool { return m.str("runId") == id && m.Seq > p.Seq && m.Seq < paused.Seq }) {
		if m.str("status") != "pausing" {
			t.Errorf("between run/pause and the pause, run/updated = %s, want pausing", m.Raw)
		}
	}
	if got := c.find("run/task/updated", func(m *message) bool { return m.str("task.id") == "t2" }); len(got) != 0 {
		t.Fatalf("t2 started while the run pauses: %s", got[0].Raw)
	}
	c.call("run/resume", map[string]any{"runId": id})
	if end := c.runEnd(id); end.str("run.status") != "completed" || end.get("run.counts.completed") != 2.0 {
		t.Fatalf("run/completed = %s", end.Raw)
	}
}
