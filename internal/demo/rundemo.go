package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/apserver/apserver/model/scripted"
)

// `apserver demo run`: a run end to end, offline. The scripted model plans
// two tasks, implements each with one command, and the validator passes
// them; apserver runs their checks in the sandbox, commits each, and
// merges the branch into main of a temp repository. The demo drives the
// apserver binary as a user does, `apserver run` on a terminal, and
// answers its plan prompt with "y".

// The run demo's request and the markers its script matches on (the text
// of each stage's request, docs/runs.md "Scripting a run").
const (
	runRequest = "add a --shout option to greet.sh"
	runTask1   = "Add --shout to greet.sh"
	runTask2   = "Test both modes in test.sh"
)

// RunScript is the run demo's model: the planner (its request says "Plan
// this request"), each task's implementer (its objective names the task's
// title), the validator ("Review task").
func RunScript() scripted.Script {
	type task struct {
		ID           string         `json:"id"`
		Title        string         `json:"title"`
		Description  string         `json:"description"`
		Kind         string         `json:"kind"`
		Dependencies []string       `json:"dependencies"`
		Risk         string         `json:"risk"`
		Acceptance   map[string]any `json:"acceptance"`
		Estimate     string         `json:"estimate"`
	}
	acc := func(check string) map[string]any {
		return map[string]any{"criteria": []string{"the check passes"}, "checks": []string{check}, "files": []string{}}
	}
	plan, _ := json.Marshal(map[string]any{
		"summary": "Add the option, then a test of both modes.",
		"tasks": []task{
			{ID: "t1", Title: runTask1, Description: "Print the greeting in capitals when the first argument is --shout.",
				Kind: "file_edit", Dependencies: []string{}, Risk: "low", Acceptance: acc("sh greet.sh --shout bob | grep -q 'HELLO, BOB'"), Estimate: "5m"},
			{ID: "t2", Title: runTask2, Description: "test.sh checks the plain and the shouted greeting.",
				Kind: "test", Dependencies: []string{"t1"}, Risk: "low", Acceptance: acc("sh test.sh"), Estimate: "5m"},
		},
		"clarification": nil,
	})
	step := func(cmd string) []scripted.Step {
		return []scripted.Step{
			{Text: "Making the change.", ToolCalls: []scripted.ToolCall{{Command: cmd}}},
			{Text: "The task is complete."},
		}
	}
	return scripted.Script{Rules: []scripted.Rule{
		{Match: "Review task", Steps: []scripted.Step{{Text: `{"pass":true,"findings":"the diff does what the task says and its check passes"}`}}},
		{Match: "Plan this request", Steps: []scripted.Step{{Text: string(plan)}}},
		{Match: runTask1, Steps: step(`printf '%s\n' '#!/bin/sh' 'if [ "$1" = "--shout" ]; then echo "Hello, $2!" | tr a-z A-Z; else echo "Hello, $1!"; fi' > greet.sh`)},
		{Match: runTask2, Steps: step(`printf '%s\n' 'set -e' 'sh greet.sh bob | grep -q "Hello, bob!"' 'sh greet.sh --shout bob | grep -q "HELLO, BOB!"' 'echo "2 tests passed"' > test.sh`)},
	}}
}

// RunRun is `apserver demo run`.
func RunRun(ctx context.Context, o Options) (err error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Exe == "" {
		if o.Exe, err = os.Executable(); err != nil {
			return fmt.Errorf("finding the apserver binary: %w", err)
		}
	}
	v := &view{w: o.Out, color: o.Color}
	began := time.Now()
	root, err := os.MkdirTemp("", "apserver-demo-run-")
	if err != nil {
		return err
	}
	defer func() {
		if o.Keep {
			v.line(sg(dim, "  kept       "), sg(plain, root), sg(dim, " (repo/, data/)"))
			return
		}
		if rerr := os.RemoveAll(root); rerr != nil && err == nil {
			err = fmt.Errorf("removing the demo's temp dir: %w", rerr)
		}
	}()
	repo, data, home := filepath.Join(root, "repo"), filepath.Join(root, "data"), filepath.Join(root, "home")
	for _, d := range []string{repo, data, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	configFile := filepath.Join(root, "config.toml")
	if err := os.WriteFile(configFile, []byte("# apserver demo run: an empty config, so that yours is not read.\n"), 0o644); err != nil {
		return err
	}
	files := map[string]string{"greet.sh": "#!/bin/sh\necho \"Hello, $1!\"\n", "README.md": "# greet\n\nsh greet.sh NAME\n"}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = repo
		cmd.Env = append(childEnv(os.Environ()), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "HOME="+home)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out)), nil
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.name", "Demo User"},
		{"config", "user.email", "demo@example.com"}, {"add", "-A"}, {"commit", "-q", "-m", "greet.sh"}} {
		if _, err := git(args...); err != nil {
			return err
		}
	}

	model, err := scripted.Start(RunScript())
	if err != nil {
		return fmt.Errorf("starting the scripted model: %w", err)
	}
	defer model.Close()

	v.line(sg(boldCyn, "apserver demo run"), sg(dim, " · a run end to end, offline: plan, approve, implement, validate, merge"))
	v.linef(plain, "  This program plays the user at a terminal: it runs `apserver run` in a")
	v.linef(plain, "  fresh git repository and answers its plan prompt with \"y\". The model is a")
	v.linef(plain, "  scripted stand-in on 127.0.0.1, so nothing leaves this machine.")
	v.newline()
	v.line(sg(dim, "  repository "), sg(plain, repo), sg(dim, ": greet.sh README.md, on main"))
	v.line(sg(dim, "  model      "), sg(plain, "demo-model"), sg(dim, " (scripted) at "+model.URL()))
	v.line(sg(dim, "  command    "), sg(plain, `apserver run --input "`+runRequest+`"`))
	v.rule("apserver run")

	args := []string{"run", "--input", "--data-dir", data, "--config", configFile, "--model", "demo-model", "--base-url", model.URL(), runRequest}
	cmd := exec.CommandContext(ctx, o.Exe, args...)
	cmd.Dir = repo
	cmd.Env = append(childEnv(os.Environ()), "HOME="+home, "EDITOR=true", "VISUAL=")
	cmd.Stdin = strings.NewReader("y\n")
	out := &lockedWriter{w: o.Out}
	cmd.Stdout, cmd.Stderr = out, out
	runErr := cmd.Run()
	var ee *exec.ExitError
	if errors.As(runErr, &ee) {
		return fmt.Errorf("apserver run exited %d, the run did not merge", ee.ExitCode())
	} else if runErr != nil {
		return fmt.Errorf("running apserver run: %w", runErr)
	}
	v.rule("after the run")
	log, err := git("log", "--format=%h %s", "main")
	if err != nil {
		return err
	}
	v.linef(dim, "  $ git log --oneline main")
	for _, l := range strings.Split(log, "\n") {
		v.linef(plain, "    %s", l)
	}
	shout := exec.CommandContext(ctx, "sh", "greet.sh", "--shout", "world")
	shout.Dir = repo
	said, err := shout.Output()
	if err != nil {
		return fmt.Errorf("sh greet.sh --shout world: %w", err)
	}
	v.linef(dim, "  $ sh greet.sh --shout world")
	v.linef(plain, "    %s", strings.TrimSpace(string(said)))
	v.newline()
	v.line(sg(green, "  ✓ "), sg(plain, fmt.Sprintf("planned, approved, 2 tasks implemented and validated, merged into main in %.1fs",
		time.Since(began).Seconds())))
	v.linef(dim, "  Steer runs yourself: apserver runs --help; script a run's model: docs/runs.md")
	return nil
}

// lockedWriter serialises the child's stdout and stderr into one view.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
