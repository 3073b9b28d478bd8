package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// runExecIn runs `apserver exec args...` against model in the workspace
// ws (a fresh one when ""), with pathFirst (if any) first on PATH.
func runExecIn(t *testing.T, model *scripted.Server, ws, pathFirst string, args ...string) execResult {
	t.Helper()
	home := t.TempDir()
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte("[full_auto]\nerror_backoff_ms = 10\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ws == "" {
		ws = t.TempDir()
	}
	r := execResult{dataDir: t.TempDir(), cwd: ws}
	full := append([]string{"exec", "--config", cfg, "--data-dir", r.dataDir, "--model", "scripted-model", "--base-url", model.URL()}, args...)
	path := os.Getenv("PATH")
	if pathFirst != "" {
		path = pathFirst + string(os.PathListSeparator) + path
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, full...)
	cmd.Dir = r.cwd
	cmd.Env = []string{"HOME=" + home, "OPENAI_API_KEY=test", "PATH=" + path}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("apserver exec: %v\n%s", err, errb.String())
	}
	r.stdout, r.stderr = out.String(), errb.String()
	return r
}

func writeWorkspaceFile(t *testing.T, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}

// testWorkspace is a workspace whose Makefile's test target, ./gradlew
// and a script leave a marker in it.
func testWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	writeWorkspaceFile(t, filepath.Join(ws, "Makefile"), "test:\n\techo ran > make-test-ran\n", 0o644)
	writeWorkspaceFile(t, filepath.Join(ws, "scripts", "check.sh"), "#!/bin/sh\necho ran > script-ran\n", 0o755)
	writeWorkspaceFile(t, filepath.Join(ws, "gradlew"), "#!/bin/sh\necho \"$@\" > gradlew-ran\n", 0o755)
	return ws
}

// TestExecFullAutoRunsWorkspaceChecks: `apserver exec --full-auto "Make
// the tests pass."` runs make test, ./gradlew test and a workspace script
// inside the kernel sandbox without a human, with the default approvals and
// with never, under approval policies on-request, untrusted and never; the
// run stops completed and exec exits 0. Judged from outside: the markers
// the Makefile and scripts write exist.
func TestExecFullAutoRunsWorkspaceChecks(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "A-checks", Steps: []scripted.Step{
		{Text: "Running the checks.", ToolCalls: []scripted.ToolCall{{Command: "make test"}}},
		{ToolCalls: []scripted.ToolCall{{Command: "./gradlew test"}}},
		{ToolCalls: []scripted.ToolCall{{Command: "./scripts/check.sh"}}},
		{ToolCalls: []scripted.ToolCall{{Command: "make test"}}},
		{Text: "The task is complete."},
	}})
	for _, tc := range []struct{ name, approvals, policy string }{
		{"policy, on-request", "policy", "on-request"},
		{"policy, untrusted", "policy", "untrusted"},
		{"never, on-request", "never", "on-request"},
		{"never, never", "never", "never"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runExecIn(t, model, testWorkspace(t), "", "--full-auto", "--approvals", tc.approvals, "-c", "approval_policy="+tc.policy,
				"-s", "workspace-write", "A-checks: Make the tests pass. Check with `make test`.")
			if r.code != 0 || !strings.Contains(r.stderr, "stopped (completed)") {
				t.Fatalf("exit %d, want 0 and completed\nstderr:\n%s", r.code, r.stderr)
			}
			for _, m := range []string{"make-test-ran", "gradlew-ran", "script-ran"} {
				if _, err := os.Stat(filepath.Join(r.cwd, m)); err != nil {
					t.Errorf("%s: the workspace's check did not run: %v\nstderr:\n%s", m, err, r.stderr)
				}
			}
			if strings.Contains(r.stderr, "declined") {
				t.Errorf("a check was declined:\n%s", r.stderr)
			}
		})
	}
}

// TestExecFullAutoClaimIsNotCompletion: a model that says it is done
// without running the check the objective names, or whose check was
// declined (outside the sandbox, opaque, nobody to ask), does not end the
// run "completed": exec exits non-zero and the reason names the check. The
// live view shows the declined command as not run, without an exit code.
func TestExecFullAutoClaimIsNotCompletion(t *testing.T) {
	t.Parallel()
	model := startModel(t,
		scripted.Rule{Match: "A-claim", Steps: []scripted.Step{{Text: "The task is complete."}}},
		scripted.Rule{Match: "A-declined", Steps: []scripted.Step{
			{Text: "Checking.", ToolCalls: []scripted.ToolCall{{Command: "make test"}}},
			{Text: "The task is complete."},
		}},
	)
	t.Run("never ran", func(t *testing.T) {
		r := runExecIn(t, model, testWorkspace(t), "", "--full-auto", "A-claim: Make the tests pass. Check with `make test`.")
		if r.code == 0 || !strings.Contains(r.stderr, "`make test`") || strings.Contains(r.stderr, "stopped (completed)") {
			t.Fatalf("exit %d, want non-zero with a reason naming `make test`\nstderr:\n%s", r.code, r.stderr)
		}
		if _, err := os.Stat(filepath.Join(r.cwd, "make-test-ran")); err == nil {
			t.Errorf("make test ran, but the model never asked for it")
		}
	})
	t.Run("declined", func(t *testing.T) {
		// Outside the sandbox an opaque command needs a human; exec has none.
		r := runExecIn(t, model, testWorkspace(t), "", "--full-auto", "-s", "danger-full-access", "A-declined: fix the parser")
		if r.code == 0 || !strings.Contains(r.stderr, "`make test`") || !strings.Contains(r.stderr, "did not run") {
			t.Fatalf("exit %d, want non-zero with a reason naming the declined `make test`\nstderr:\n%s", r.code, r.stderr)
		}
		if _, err := os.Stat(filepath.Join(r.cwd, "make-test-ran")); err == nil {
			t.Errorf("make test ran outside the sandbox without a human")
		}
		if strings.Contains(r.stderr, "declined, exit") || !strings.Contains(r.stderr, "→ declined (not run)") {
			t.Errorf("the live view does not show the command as declined and not run:\n%s", r.stderr)
		}
	})
}

// escalationPath is a directory of fake escalation programs that leave a
// marker in the workspace (writable inside the sandbox too), as sudo would
// run its command where it needs no password.
func escalationPath(t *testing.T, ws, marker string) string {
	t.Helper()
	// In the workspace, so that sandboxed commands see the programs too
	// (the sandbox has a /tmp of its own).
	bin := filepath.Join(ws, ".fakebin")
	for _, name := range []string{"sudo", "su", "doas", "pkexec", "run0"} {
		writeWorkspaceFile(t, filepath.Join(bin, name), "#!/bin/sh\necho "+name+" \"$@\" >> "+marker+"\n", 0o755)
	}
	return bin
}

// TestExecFullAutoNeverEscalates: under full auto (approvals policy or
// never), in workspace-write and danger-full-access, under approval
// policies on-request and never, no escalation program runs: sudo -s, sudo
// bash -c 'id', sudo -i, sudo -u, env sudo, bash -c 'sudo ...', su, doas,
// pkexec, run0. Judged by the marker the fake programs would leave.
func TestExecFullAutoNeverEscalates(t *testing.T) {
	t.Parallel()
	attacks := []string{`sudo -s`, `sudo bash -c 'id'`, `sudo -i`, `sudo -u root id`, `env sudo id`, `bash -c 'sudo id'`,
		`su -c id`, `doas id`, `pkexec id`, `run0 id`, `echo id | xargs sudo`}
	var steps []scripted.Step
	for _, a := range attacks {
		steps = append(steps, scripted.Step{Text: "Need root.", ToolCalls: []scripted.ToolCall{{Command: a}}})
	}
	steps = append(steps, scripted.Step{Text: "The task is complete."})
	model := startModel(t, scripted.Rule{Match: "A-root", Steps: steps})
	for _, approvals := range []string{"policy", "never"} {
		for _, sandbox := range []string{"workspace-write", "danger-full-access"} {
			for _, policy := range []string{"on-request", "never"} {
				t.Run(approvals+","+sandbox+","+policy, func(t *testing.T) {
					ws := t.TempDir()
					marker := filepath.Join(ws, "escalated")
					r := runExecIn(t, model, ws, escalationPath(t, ws, marker),
						"--full-auto", "--approvals", approvals, "-s", sandbox, "-c", "approval_policy="+policy, "A-root: install the package")
					if data, err := os.ReadFile(marker); err == nil {
						t.Errorf("an escalation program ran without a human: %s\nstderr:\n%s", data, r.stderr)
					}
					if !strings.Contains(r.stderr, "another user") && !strings.Contains(r.stderr, "declined") {
						t.Errorf("nothing says the escalations were held:\n%s", r.stderr)
					}
				})
			}
		}
	}
}

// TestExecFullAutoGitAlias: under danger-full-access with approvals
// policy, no git alias runs git push without a human, however the alias
// is set: git config alias.*, the global config, -c, GIT_CONFIG_*
// variables, an include. The fake git records pushes, alias writes and
// configuration given through the environment.
func TestExecFullAutoGitAlias(t *testing.T) {
	t.Parallel()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	attacks := []string{
		`git config alias.p push && git p origin main`,
		`git config --global alias.p push; git p origin main`,
		`git p origin main`,
		`git -c alias.p=push p origin main`,
		`GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.p GIT_CONFIG_VALUE_0=push git p origin main`,
		`env GIT_CONFIG_PARAMETERS="'alias.p=push'" git p origin main`,
		`git config include.path ../evil.cfg && git p origin main`,
	}
	var steps []scripted.Step
	for _, a := range attacks {
		steps = append(steps, scripted.Step{Text: "Publishing.", ToolCalls: []scripted.ToolCall{{Command: a}}})
	}
	steps = append(steps, scripted.Step{Text: "The task is complete."})
	model := startModel(t, scripted.Rule{Match: "A-alias", Steps: steps})
	bin := t.TempDir()
	marker := filepath.Join(t.TempDir(), "git-ran")
	script := "#!/bin/sh\n" +
		"case \" $* \" in *\" push \"*|*alias.*|*\" p \"*|*include.path*) echo \"$@\" >> " + marker + "; exit 0;; esac\n" +
		"if [ -n \"$GIT_CONFIG_COUNT$GIT_CONFIG_PARAMETERS\" ]; then echo env \"$@\" >> " + marker + "; exit 0; fi\n" +
		"exec " + real + " \"$@\"\n"
	writeWorkspaceFile(t, filepath.Join(bin, "git"), script, 0o755)
	for _, approvals := range []string{"policy", "never"} {
		t.Run(approvals, func(t *testing.T) {
			r := runExecIn(t, model, "", bin, "--full-auto", "--approvals", approvals, "-s", "danger-full-access", "A-alias: publish the work")
			if data, err := os.ReadFile(marker); err == nil {
				t.Errorf("git ran an alias, a push or an alias write without a human: %s\nstderr:\n%s", data, r.stderr)
			}
		})
	}
}

// TestExplainPrivilegedAndOpaque: policy/explain, over the wire (checked
// against the schema), reports a privileged command as asked for with
// `privileged` saying why, and make test or a git alias as running in the
// sandbox of a workspace-write thread.
func TestExplainPrivilegedAndOpaque(t *testing.T) {
	t.Parallel()
	c := newClient(t, startModel(t), options{inProcess: true})
	threadID := c.startThreadIn(t.TempDir(), "on-request")
	for _, tc := range []struct {
		command, effective string
		privileged, opaque bool
	}{
		{"sudo -s", "ask", true, false},
		{"env sudo bash -c 'id'", "ask", true, false},
		{"make test", "runSandboxed", false, true},
		{"./gradlew test", "runSandboxed", false, true},
		{"git p origin main", "runSandboxed", false, true},
		{"go test ./...", "runSandboxed", false, false},
	} {
		r := c.call("policy/explain", map[string]any{"threadId": threadID, "command": tc.command})
		if r.str("effective") != tc.effective || (r.str("privileged") != "") != tc.privileged || (r.str("opaque") != "") != tc.opaque {
			t.Errorf("explain %q = %s; want effective %s, privileged %v, opaque %v", tc.command, r.Raw, tc.effective, tc.privileged, tc.opaque)
		}
	}
}
