package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// reviewRepo makes a repository with one commit and an uncommitted change;
// it returns its directory and the commit's sha.
func reviewRepo(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644)
	run("add", ".")
	run("commit", "-q", "-m", "first")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("two\n"), 0o644)
	return dir, run("rev-parse", "HEAD")
}

// requestTools lists the tool names a model request offered.
func requestTools(body string) []string {
	var names []string
	for _, part := range strings.Split(body, `"name":"`)[1:] {
		names = append(names, part[:strings.Index(part, `"`)])
	}
	return names
}

// TestReviewStart: review/start runs a review as a read-only turn of the
// thread: enteredReviewMode first, our review instructions
// and the target's request to the thread's model, no file tools, commands
// in the read-only sandbox (the model's attempts to write leave no file),
// then exitedReviewMode carrying the review. Every target kind, and bad
// params refused.
func TestReviewStart(t *testing.T) {
	t.Parallel()
	review := "[P1] a.txt:1: the value changed from one to two without a reason.\nVerdict: the changes are incorrect, a.txt regressed."
	model := startModel(t,
		scripted.Rule{Match: "uncommitted changes", Steps: []scripted.Step{
			{ToolCalls: []scripted.ToolCall{{Name: "exec_command", Arguments: `{"cmd":"git diff HEAD"}`}}},
			{ToolCalls: []scripted.ToolCall{{Name: "exec_command", Arguments: `{"cmd":"touch review-marker"}`}}},
			{ToolCalls: []scripted.ToolCall{{Name: "exec_command", Arguments: `{"cmd":"touch escalated-marker","sandbox_permissions":"require_escalated","justification":"x"}`}}},
			{ToolCalls: []scripted.ToolCall{{Name: "write_file", Arguments: `{"path":"written.txt","content":"x"}`}}},
			{ToolCalls: []scripted.ToolCall{{Name: "exec_command", Arguments: `{"cmd":"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: patched.txt\n+x\n*** End Patch\nEOF"}`}}},
			{Text: review},
		}},
		scripted.Rule{Match: "", Steps: []scripted.Step{{Text: "Nothing to report.\nVerdict: the changes are correct."}}},
	)
	c := newClient(t, model, options{})
	dir, sha := reviewRepo(t)
	tid := c.startThreadIn(dir, "on-request")
	r := c.call("review/start", map[string]any{"threadId": tid, "target": map[string]any{"type": "uncommittedChanges"}})
	turnID := r.str("turn.id")
	if r.str("reviewThreadId") != tid || turnID == "" {
		t.Fatalf("review/start = %s", r.Raw)
	}
	started := c.waitAfter(r, "turn/started", forTurn(turnID))
	entered := c.waitAfter(r, "item/started", itemOfType(turnID, "enteredReviewMode"))
	if entered.str("item.review") != "current changes" {
		t.Errorf("enteredReviewMode = %s", entered.Raw)
	}
	if user := c.waitAfter(r, "item/started", itemOfType(turnID, "userMessage")); user.Seq < entered.Seq {
		t.Errorf("the review request came before enteredReviewMode")
	}
	exited := c.waitAfter(started, "item/completed", itemOfType(turnID, "exitedReviewMode"))
	if exited.str("item.review") != review {
		t.Errorf("exitedReviewMode = %s, want the review", exited.Raw)
	}
	if done := c.turnDone(turnID); done.str("turn.status") != "completed" {
		t.Errorf("turn/completed = %s", done.Raw)
	}
	for _, f := range []string{"review-marker", "escalated-marker", "written.txt", "patched.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("the review turn wrote %s", f)
		}
	}
	if c.find("item/commandExecution/requestApproval", nil) != nil {
		t.Errorf("a read-only review turn asked for an approval")
	}
	reqs := waitModelRequests(t, model, 2)
	body := string(reqs[0].Body)
	if !strings.Contains(body, "# Code review") || !strings.Contains(body, "Review the uncommitted changes") {
		t.Errorf("the model was not given the review instructions and request:\n%s", body)
	}
	for _, n := range requestTools(body) {
		if n == "apply_patch" || n == "edit_file" || n == "write_file" {
			t.Errorf("a review turn offered %s", n)
		}
	}

	for _, tc := range []struct {
		target map[string]any
		hint   string
		prompt string
	}{
		{map[string]any{"type": "baseBranch", "branch": "main"}, "changes against 'main'", `git merge-base HEAD \"main\"`},
		{map[string]any{"type": "commit", "sha": sha, "title": "first"}, "commit " + sha[:7] + ": first", "git show " + sha},
		{map[string]any{"type": "custom", "instructions": "Check the error handling only."}, "Check the error handling only.", "Check the error handling only."},
	} {
		r := c.call("review/start", map[string]any{"threadId": tid, "target": tc.target, "delivery": "inline"})
		id := r.str("turn.id")
		if m := c.waitAfter(r, "item/started", itemOfType(id, "enteredReviewMode")); m.str("item.review") != tc.hint {
			t.Errorf("%v: enteredReviewMode = %s, want %q", tc.target, m.Raw, tc.hint)
		}
		c.turnDone(id)
		reqs := modelRequests(model)
		if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, tc.prompt) {
			t.Errorf("%v: the model request lacks %q", tc.target, tc.prompt)
		}
	}
	c.callErr("review/start", map[string]any{"threadId": tid}, -32602, "target")
	c.callErr("review/start", map[string]any{"threadId": tid, "target": map[string]any{"type": "everything"}}, -32602, "everything")
	c.callErr("review/start", map[string]any{"threadId": tid, "target": map[string]any{"type": "baseBranch"}}, -32602, "target.branch")
	c.callErr("review/start", map[string]any{"threadId": tid, "target": map[string]any{"type": "uncommittedChanges"}, "delivery": "detached"}, -32602, "detached")
	c.callErr("review/start", map[string]any{"threadId": "nope", "target": map[string]any{"type": "uncommittedChanges"}}, -32600, "not loaded")
}

// TestPlanMode: collaborationMode/list offers plan mode; a turn in plan
// mode is told it is planning, is offered no file tools, writes nothing
// (commands, apply_patch, write_file all tried), and its <proposed_plan>
// becomes a plan item. The mode sticks until the default mode is chosen;
// thread/settings/update switches it as well.
func TestPlanMode(t *testing.T) {
	t.Parallel()
	model := startModel(t,
		scripted.Rule{Match: "plan the fix", Steps: []scripted.Step{
			{ToolCalls: []scripted.ToolCall{{Name: "exec_command", Arguments: `{"cmd":"touch plan-marker"}`}}},
			{ToolCalls: []scripted.ToolCall{{Name: "write_file", Arguments: `{"path":"written.txt","content":"x"}`}}},
			{Text: "Here is the plan.\n<proposed_plan>\n1. Edit a.txt.\n2. Run the tests.\n</proposed_plan>"},
		}},
		scripted.Rule{Match: "do it", Steps: []scripted.Step{
			{ToolCalls: []scripted.ToolCall{{Name: "exec_command", Arguments: `{"cmd":"touch done-marker"}`}}},
			{Text: "Done."},
		}},
	)
	c := newClient(t, model, options{})
	tid, cwd := c.startThread("never")
	m := c.call("collaborationMode/list", map[string]any{})
	if !strings.Contains(m.Raw, `"mode":"plan"`) || !strings.Contains(m.Raw, `"mode":"default"`) {
		t.Errorf("collaborationMode/list = %s, want plan and default", m.Raw)
	}
	plan := map[string]any{"mode": "plan", "settings": map[string]any{"model": "scripted-model", "reasoning_effort": nil, "developer_instructions": nil}}
	r := c.call("turn/start", map[string]any{"threadId": tid, "input": textInput("plan the fix"), "collaborationMode": plan})
	id := r.str("turn.id")
	item := c.waitAfter(r, "item/completed", itemOfType(id, "plan"))
	if item.str("item.text") != "1. Edit a.txt.\n2. Run the tests." {
		t.Errorf("plan item = %s", item.Raw)
	}
	c.turnDone(id)
	for _, f := range []string{"plan-marker", "written.txt"} {
		if _, err := os.Stat(filepath.Join(cwd, f)); err == nil {
			t.Errorf("a plan-mode turn wrote %s", f)
		}
	}
	body := string(modelRequests(model)[0].Body)
	if !strings.Contains(body, "# Plan mode") {
		t.Errorf("the model was not told it is planning:\n%s", body)
	}
	for _, n := range requestTools(body) {
		if n == "apply_patch" || n == "edit_file" || n == "write_file" {
			t.Errorf("a plan-mode turn offered %s", n)
		}
	}
	// Back to the default mode: the work is done.
	def := map[string]any{"mode": "default", "settings": map[string]any{"model": "scripted-model"}}
	c.runTurn2(tid, "do it", def)
	if _, err := os.Stat(filepath.Join(cwd, "done-marker")); err != nil {
		t.Errorf("a default-mode turn could not write: %v", err)
	}
	c.callErr("turn/start", map[string]any{"threadId": tid, "input": textInput("x"), "collaborationMode": map[string]any{"mode": "yolo", "settings": map[string]any{"model": "m"}}}, -32602, "collaborationMode.mode")

	// Codex's TUI switches with thread/settings/update (Shift+Tab); the
	// next turn/start carries no mode.
	c.call("thread/settings/update", map[string]any{"threadId": tid, "collaborationMode": plan})
	r = c.call("turn/start", map[string]any{"threadId": tid, "input": textInput("plan the fix again")})
	c.waitAfter(r, "item/completed", itemOfType(r.str("turn.id"), "plan"))
	c.turnDone(r.str("turn.id"))
	c.callErr("thread/settings/update", map[string]any{"threadId": tid, "cwd": "relative"}, -32602, "absolute")
	c.callErr("thread/settings/update", map[string]any{"threadId": tid, "collaborationMode": map[string]any{"mode": "yolo", "settings": map[string]any{"model": "m"}}}, -32602, "collaborationMode.mode")
}

// runTurn2 runs a turn with a collaboration mode and waits for its end.
func (c *client) runTurn2(threadID, text string, mode map[string]any) {
	c.t.Helper()
	r := c.call("turn/start", map[string]any{"threadId": threadID, "input": textInput(text), "collaborationMode": mode})
	c.turnDone(r.str("turn.id"))
}
