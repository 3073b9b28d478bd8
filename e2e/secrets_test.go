package e2e

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// TestCommandsGetNoSecrets runs the real binary with an API key in its
// environment and its data dir where it is by default (under
// ~/.local/share, which the sandbox lets commands read), and has the model
// run, in each sandbox mode, a command that looks for them everywhere a
// command could: its own environment, /proc/<pid>/environ and cmdline of
// every process it sees (the sandbox helper is its parent and pid 1), the
// descriptors there, and the data dir's files (the store holds the
// transcript, and so the canary the prompt carries). Neither the key nor
// the canary may show up in the command's output or in a file it writes.
// Without a sandbox the command may read anything apserver can, but its
// own environment still lacks the key.
func TestCommandsGetNoSecrets(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"read-only", "workspace-write", "danger-full-access"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			base := varTmpDir(t, "apserver-e2e-secrets-")
			id := filepath.Base(base)
			key, canary := "marker-secret-key-"+id, "marker-store-canary-"+id
			home := filepath.Join(base, "home")
			data := filepath.Join(home, ".local", "share", "apserver")
			ws := filepath.Join(base, "ws")
			mkdirs(t, data, ws)
			// The shell's descriptors, numbers only, between markers.
			fds := `echo FDS:; ls /proc/$$/fd; echo :FDS; `
			script := fds + `env; echo; echo ENV-DONE; env > env.txt; ` +
				`cat /proc/$PPID/environ /proc/1/environ > environ.txt; cat environ.txt; ` +
				`for p in /proc/[0-9]*; do cat "$p/environ"; tr '\0' ' ' < "$p/cmdline"; echo; done; ` +
				`ls -l /proc/[0-9]*/fd/; ` +
				`ls -la ` + data + `; cat ` + data + `/* ; cp -r ` + data + ` data-copy; ` +
				`grep -ra "` + canary[:len(canary)-4] + `" ` + home + `/.local`
			if mode == "danger-full-access" {
				// apserver's own /proc and data dir are the user's to
				// read here; the command's environment is still scrubbed.
				script = fds + `env; echo; echo ENV-DONE; env > env.txt`
			}
			model := startModel(t, scripted.Rule{Match: "look for secrets", Steps: []scripted.Step{
				{ToolCalls: []scripted.ToolCall{{Command: script}}},
				{Text: "done"},
			}})
			c := newClient(t, model, options{dataDir: data, env: []string{
				"HOME=" + home, "OPENAI_API_KEY=" + key, "GITHUB_TOKEN=" + key, "XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
			}})
			r := c.call("thread/start", map[string]any{"cwd": ws, "approvalPolicy": "never", "sandbox": mode})
			threadID := r.str("thread.id")
			_, turnID := c.startTurn(threadID, "look for secrets; remember "+canary)
			c.turnDone(turnID)
			done := c.waitFor("item/completed", itemOfType(turnID, "commandExecution"))
			out := done.str("item.aggregatedOutput")
			if !strings.Contains(out, "ENV-DONE") || !strings.Contains(out, "PATH=") {
				t.Fatalf("the command did not run; output:\n%s", out)
			}
			// Only stdin, stdout and stderr: none of apserver's files
			// (the store, a log file, sockets) is inherited.
			if _, rest, ok := strings.Cut(out, "FDS:\n"); !ok || !strings.Contains(rest, ":FDS") {
				t.Errorf("no descriptor list in the output:\n%s", out)
			} else if list, _, _ := strings.Cut(rest, ":FDS"); strings.Fields(list) == nil || strings.Join(strings.Fields(list), " ") != "0 1 2" {
				t.Errorf("%s: the command's shell has descriptors %q, want only 0 1 2:\n%s", mode, strings.Join(strings.Fields(list), " "), out[:min(len(out), 800)])
			}
			for _, s := range []string{key, canary} {
				if strings.Contains(out, s) {
					t.Errorf("%s: the command's output has %q:\n%s", mode, s, out)
				}
			}
			var leaked []string
			filepath.WalkDir(ws, func(path string, d fs.DirEntry, err error) error {
				if err != nil || !d.Type().IsRegular() {
					return nil
				}
				b, _ := os.ReadFile(path)
				for _, s := range []string{key, canary} {
					if bytes.Contains(b, []byte(s)) {
						leaked = append(leaked, fmt.Sprintf("%s has %q", path, s))
					}
				}
				return nil
			})
			if len(leaked) > 0 {
				t.Errorf("%s: files the command wrote hold apserver's secrets: %s", mode, strings.Join(leaked, "; "))
			}
			if mode == "workspace-write" {
				if _, err := os.Stat(filepath.Join(ws, "env.txt")); err != nil {
					t.Errorf("the command wrote no env.txt (the positive control): %v", err)
				}
			}
		})
	}
}

// TestRunSetupCommandGetsNoSecrets: a run's setup command (the user's, from
// the config) runs what the repository gives it (an install's scripts,
// say), so it gets apserver's environment without the model's key or any
// variable named like a secret, and with the rest.
func TestRunSetupCommandGetsNoSecrets(t *testing.T) {
	t.Parallel()
	model := startModel(t, shoutRules(t)...)
	repo := shoutRepo(t)
	home := t.TempDir()
	seen := filepath.Join(t.TempDir(), "setup-env.txt")
	cfg := filepath.Join(home, "config.toml")
	// The user passes one variable named like a secret on (a registry's
	// token, for an install); the other stays with apserver.
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[runs]\nsetup_command = %q\n[sandbox_settings]\npass_env = [\"APSERVER_E2E_REGISTRY_TOKEN\"]\n", "env > "+seen)), 0o600); err != nil {
		t.Fatal(err)
	}
	r := execResult{dataDir: t.TempDir(), cwd: repo, env: []string{"APSERVER_E2E_REGISTRY_TOKEN=registry", "APSERVER_E2E_OTHER_TOKEN=other"}}
	r.run(t, home, []string{"run", "--config", cfg, "--data-dir", r.dataDir, "--model", "scripted-model",
		"--base-url", model.URL(), "--base", "main", "add a shout option to greet.sh"})
	if r.code != 5 {
		t.Fatalf("apserver run = exit %d, want 5 (waiting for the plan's approval)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	data, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("the setup command did not run: %v", err)
	}
	env := "\n" + string(data)
	if strings.Contains(env, "\nOPENAI_API_KEY=") {
		t.Errorf("the setup command got the model's key:\n%s", data)
	}
	if !strings.Contains(env, "\nPATH=") || !strings.Contains(env, "\nHOME="+home+"\n") {
		t.Errorf("the setup command lost the rest of the environment:\n%s", data)
	}
	if !strings.Contains(env, "\nAPSERVER_E2E_REGISTRY_TOKEN=registry\n") || strings.Contains(env, "APSERVER_E2E_OTHER_TOKEN") {
		t.Errorf("the setup command should get the variable pass_env names and no other secret:\n%s", data)
	}
}

// TestPassEnvReachesCommands: a variable the user's pass_env names
// reaches the agent's commands in every mode, though its name looks like
// a secret's; others named so, and apserver's own keys, do not.
func TestPassEnvReachesCommands(t *testing.T) {
	t.Parallel()
	base := varTmpDir(t, "apserver-e2e-passenv-")
	ws := filepath.Join(base, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(base, "config.toml")
	if err := os.WriteFile(cfg, []byte("[sandbox_settings]\npass_env = [\"APSERVER_E2E_REGISTRY_TOKEN\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	id := filepath.Base(base)
	model := startModel(t, scripted.Rule{Match: "show env", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Command: "env; echo ENV-DONE"}}},
		{Text: "done"},
	}})
	c := newClient(t, model, options{args: []string{"--config", cfg}, env: []string{
		"OPENAI_API_KEY=key-" + id, "APSERVER_E2E_REGISTRY_TOKEN=registry-" + id, "APSERVER_E2E_OTHER_TOKEN=other-" + id,
	}})
	for _, mode := range []string{"read-only", "workspace-write", "danger-full-access"} {
		threadID := c.call("thread/start", map[string]any{"cwd": ws, "approvalPolicy": "never", "sandbox": mode}).str("thread.id")
		_, turnID := c.startTurn(threadID, "show env")
		c.turnDone(turnID)
		out := c.waitFor("item/completed", itemOfType(turnID, "commandExecution")).str("item.aggregatedOutput")
		if !strings.Contains(out, "ENV-DONE") {
			t.Fatalf("%s: the command did not run:\n%s", mode, out)
		}
		if !strings.Contains(out, "APSERVER_E2E_REGISTRY_TOKEN=registry-"+id) {
			t.Errorf("%s: the variable pass_env names did not reach the command", mode)
		}
		for _, s := range []string{"key-" + id, "other-" + id} {
			if strings.Contains(out, s) {
				t.Errorf("%s: the command got %q", mode, s)
			}
		}
	}
}

// TestAgentsLinkOutOfTheWorkspace: a sandboxed command cannot read
// ~/.ssh, but it can make a symbolic link to it; apserver, which reads
// AGENTS.md itself, unsandboxed, must not follow a link out of the
// workspace and carry what is there to the model. The command makes
// AGENTS.md a link to a private file; the next turn's request to the
// model holds nothing of it.
func TestAgentsLinkOutOfTheWorkspace(t *testing.T) {
	t.Parallel()
	base := varTmpDir(t, "apserver-e2e-agents-")
	ws, private := filepath.Join(base, "ws"), filepath.Join(base, "private")
	mkdirs(t, ws, private)
	canary := "marker-private-key-" + filepath.Base(base)
	key := filepath.Join(private, "id_rsa")
	if err := os.WriteFile(key, []byte(canary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	model := startModel(t,
		scripted.Rule{Match: "make the link", Steps: []scripted.Step{
			{ToolCalls: []scripted.ToolCall{{Command: "ln -s " + key + " AGENTS.md && ls -l AGENTS.md"}}},
			{Text: "linked"},
		}},
		scripted.Rule{Match: "next turn", Steps: []scripted.Step{{Text: "done"}}})
	c := newClient(t, model, options{})
	threadID := c.call("thread/start", map[string]any{"cwd": ws, "approvalPolicy": "never", "sandbox": "workspace-write"}).str("thread.id")
	_, turnID := c.startTurn(threadID, "make the link")
	c.turnDone(turnID)
	if target, err := os.Readlink(filepath.Join(ws, "AGENTS.md")); err != nil || target != key {
		t.Fatalf("the sandboxed command did not make the link: %q, %v", target, err)
	}
	_, turnID = c.startTurn(threadID, "next turn")
	c.turnDone(turnID)
	reqs := modelRequests(model)
	if len(reqs) < 3 {
		t.Fatalf("%d model requests, want at least 3", len(reqs))
	}
	for i, r := range reqs {
		if strings.Contains(string(r.Body), canary) {
			t.Errorf("model request %d carries the private file that AGENTS.md links to", i)
		}
	}
	// The user is told why AGENTS.md was not read, and how to have it read,
	// once: a third turn repeats nothing.
	skipped := func(m *message) bool {
		return strings.Contains(m.str("message"), "AGENTS.md") && strings.Contains(m.str("message"), "readable_roots")
	}
	c.waitFor("warning", skipped)
	_, turnID = c.startTurn(threadID, "next turn again")
	c.turnDone(turnID)
	if n := len(c.find("warning", skipped)); n != 1 {
		t.Errorf("%d warnings that AGENTS.md was not read over two turns, want 1", n)
	}
}

// TestAgentsInReadableRoot: a shared AGENTS.md that the workspace links
// to, in a directory the user made a readable root, is read: read_file
// could read it too, so the model gains nothing it could not have.
// Everyday use of a shared instructions file keeps working, with one
// setting, and its thread lists it as an instruction source.
func TestAgentsInReadableRoot(t *testing.T) {
	t.Parallel()
	base := varTmpDir(t, "apserver-e2e-agents-shared-")
	ws, shared := filepath.Join(base, "ws"), filepath.Join(base, "dotfiles")
	mkdirs(t, ws, shared)
	rule := "SHARED-RULE-" + filepath.Base(base)
	if err := os.WriteFile(filepath.Join(shared, "AGENTS.md"), []byte(rule+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(shared, "AGENTS.md"), filepath.Join(ws, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(base, "config.toml")
	if err := os.WriteFile(cfg, []byte("[sandbox_settings]\nreadable_roots = [\""+shared+"\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	model := startModel(t, scripted.Rule{Match: "hello", Steps: []scripted.Step{{Text: "hi"}}})
	c := newClient(t, model, options{args: []string{"--config", cfg}})
	start := c.call("thread/start", map[string]any{"cwd": ws, "approvalPolicy": "never", "sandbox": "workspace-write"})
	if got := start.str("instructionSources.0"); got != filepath.Join(ws, "AGENTS.md") {
		t.Errorf("instructionSources.0 = %q, want the workspace's AGENTS.md", got)
	}
	_, turnID := c.startTurn(start.str("thread.id"), "hello")
	c.turnDone(turnID)
	reqs := modelRequests(model)
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), rule) {
		t.Errorf("the model request does not carry the shared AGENTS.md (%d requests)", len(reqs))
	}
	if w := c.find("warning", func(m *message) bool { return strings.Contains(m.str("message"), "AGENTS.md") }); len(w) != 0 {
		t.Errorf("warned that AGENTS.md was not read: %s", w[0].str("message"))
	}
}

// mkdirs makes each directory, with its parents.
func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
