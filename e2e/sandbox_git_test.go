package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// TestSandboxedCommandCannotMakeWorkspaceARepository: in a workspace that
// is not a git repository, a sandboxed command's git init and planted
// pre-commit hook fail, so the user's own git, run afterwards outside any
// sandbox, finds no repository and runs no hook. A repository in a
// subdirectory is still the command's to make (the positive control).
func TestSandboxedCommandCannotMakeWorkspaceARepository(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	base := varTmpDir(t, "apserver-e2e-git-")
	ws := filepath.Join(base, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	hooked := filepath.Join(base, "hooked")
	script := `git init -q . ; mkdir -p .git/hooks; printf '#!/bin/sh\ntouch ` + hooked + `\n' > .git/hooks/pre-commit; ` +
		`chmod +x .git/hooks/pre-commit; git init -q sub && test -d sub/.git/hooks && echo SUB-REPO-MADE`
	model := startModel(t, scripted.Rule{Match: "plant a hook", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Command: script}}},
		{Text: "done"},
	}})
	c := newClient(t, model, options{})
	r := c.call("thread/start", map[string]any{"cwd": ws, "approvalPolicy": "never", "sandbox": "workspace-write"})
	_, turnID := c.startTurn(r.str("thread.id"), "plant a hook")
	c.turnDone(turnID)
	out := c.waitFor("item/completed", itemOfType(turnID, "commandExecution")).str("item.aggregatedOutput")
	if !strings.Contains(out, "SUB-REPO-MADE") {
		t.Errorf("git init in a subdirectory failed (the positive control); output:\n%s", out)
	}
	if _, err := os.Lstat(filepath.Join(ws, ".git")); err == nil {
		t.Errorf("the command left a .git in the workspace; output:\n%s", out)
	}
	git := exec.Command("git", "-c", "user.name=u", "-c", "user.email=u@u", "commit", "-q", "--allow-empty", "-m", "user")
	git.Dir = ws
	git.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+base)
	if b, err := git.CombinedOutput(); err == nil {
		t.Errorf("the workspace became a repository: the user's commit worked (%s)", b)
	}
	if _, err := os.Stat(hooked); err == nil {
		t.Errorf("the user's commit ran the hook the command planted")
	}
}
