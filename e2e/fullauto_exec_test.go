package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// execResult is one `apserver exec` run.
type execResult struct {
	code           int
	stdout, stderr string
	dataDir, cwd   string
	env            []string // added to the process's environment
}

// runExec runs `apserver exec args...` in a fresh workspace against model.
func runExec(t *testing.T, model *scripted.Server, args ...string) execResult {
	t.Helper()
	home := t.TempDir()
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte("[full_auto]\nerror_backoff_ms = 10\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := execResult{dataDir: t.TempDir(), cwd: t.TempDir()}
	full := append([]string{"exec", "--config", cfg, "--data-dir", r.dataDir, "--model", "scripted-model", "--base-url", model.URL()}, args...)
	r.run(t, home, full)
	return r
}

// run runs apserver with args in r.cwd, HOME at home and nothing else of
// the test's environment, and records its exit code and outputs.
func (r *execResult) run(t *testing.T, home string, args []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Dir = r.cwd
	cmd.Env = append([]string{"HOME=" + home, "OPENAI_API_KEY=test", "PATH=" + os.Getenv("PATH")}, r.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("apserver %s: %v\n%s", args[0], err, errb.String())
	}
	r.stdout, r.stderr = out.String(), errb.String()
}

// TestExec runs the headless `apserver exec` and checks its exit codes,
// its outputs and that its runs replay.
func TestExec(t *testing.T) {
	t.Parallel()
	never := []scripted.Step{{Text: "Working on it.", ToolCalls: []scripted.ToolCall{{Command: "echo x >> log.txt && wc -l < log.txt"}}}, {Text: "More to do."}}
	var rules []scripted.Rule
	for _, turn := range []string{"2", "3", "4"} {
		rules = append(rules, scripted.Rule{Match: `turn="` + turn + `"`, Steps: []scripted.Step{never[0], {Text: "More to do, part " + turn + "."}}})
	}
	rules = append(rules,
		scripted.Rule{Match: "E-done", Steps: []scripted.Step{
			{Text: "Writing it.", ToolCalls: []scripted.ToolCall{{Command: "echo hi > out.txt"}}},
			{Text: "The task is complete."},
		}},
		scripted.Rule{Match: "E-never", Steps: never},
		scripted.Rule{Match: "E-loop", Steps: []scripted.Step{
			{Text: "Looking.", ToolCalls: []scripted.ToolCall{{Command: "ls"}}},
			{ToolCalls: []scripted.ToolCall{{Command: "ls"}}},
			{Text: "Still looking."},
		}},
		scripted.Rule{Match: "E-fail", Steps: []scripted.Step{{HTTPError: 400, ErrorMessage: "bad request"}}},
	)
	model := startModel(t, rules...)

	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   string // substring of stdout ("" = anything)
		stderr   string // substring of stderr
		receipts bool   // a run to replay
	}{
		{name: "full auto done", args: []string{"--full-auto", "E-done: write out.txt"}, code: 0, stdout: "The task is complete.", stderr: "stopped (completed)", receipts: true},
		{name: "flags after the objective", args: []string{"E-done: write out.txt", "--full-auto", "-o", "last.txt"}, code: 0, stdout: "The task is complete.", receipts: true},
		{name: "turn budget", args: []string{"--full-auto", "--budget-turns", "2", "E-never: go on forever"}, code: 3, stderr: "budgetTurns", receipts: true},
		{name: "stuck", args: []string{"--full-auto", "E-loop: find it"}, code: 4, stderr: "stuckLoop", receipts: true},
		{name: "failed", args: []string{"--full-auto", "E-fail: break"}, code: 6, stderr: "failedUnrecoverable", receipts: true},
		{name: "one turn", args: []string{"E-done: write out.txt"}, code: 0, stdout: "The task is complete."},
		{name: "one failed turn", args: []string{"E-fail: break"}, code: 6},
		{name: "no objective", args: []string{"--full-auto"}, code: 2, stderr: "objective is required"},
		{name: "bad flag", args: []string{"--budget-turns", "x", "obj"}, code: 2},
		{name: "bad approvals", args: []string{"--full-auto", "--approvals", "maybe", "obj"}, code: 2, stderr: "approvals"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runExec(t, model, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exec %q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", tc.args, r.code, tc.code, r.stdout, r.stderr)
			}
			if strings.Contains(strings.Join(tc.args, " "), "-o last.txt") {
				b, err := os.ReadFile(filepath.Join(r.cwd, "last.txt"))
				if err != nil || strings.TrimSpace(string(b)) != "The task is complete." {
					t.Errorf("-o last.txt = %q, %v", b, err)
				}
			}
			if !tc.receipts {
				return
			}
			thread := threadFromExec(t, r.stderr)
			out, err := exec.Command(binPath, "replay", "--data-dir", r.dataDir, thread).CombinedOutput()
			if err != nil || !bytes.Contains(out, []byte(" 0 differ")) {
				t.Errorf("apserver replay: %v\n%s", err, out)
			}
		})
	}
}

// threadFromExec finds the thread id exec reports on its last line.
func threadFromExec(t *testing.T, stderr string) string {
	t.Helper()
	for _, l := range strings.Split(stderr, "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "thread" {
			return f[1]
		}
	}
	t.Fatalf("no thread id in exec's stderr:\n%s", stderr)
	return ""
}

// TestExecJSON checks `apserver exec --json-apserver`: stdout is a JSON-lines event
// stream whose Codex notifications match Codex's schema, and the final
// message goes to -o.
func TestExecJSON(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "E-json", Steps: []scripted.Step{
		{Text: "Writing it.", ToolCalls: []scripted.ToolCall{{Command: "echo hi > out.txt"}}},
		{Text: "The task is complete."},
	}})
	r := runExec(t, model, "--full-auto", "--json-apserver", "-o", "final.txt", "E-json: write out.txt")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	tr := validator.NewTranscript()
	methods := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.Method == "" {
			t.Fatalf("stdout line is not an event: %q (%v)", sc.Text(), err)
		}
		methods[m.Method]++
		if err := tr.Server(sc.Bytes()); err != nil {
			t.Errorf("event does not match the schema: %v", err)
		}
	}
	for _, want := range []string{"turn/started", "item/completed", "turn/completed", "fullAuto/decision", "fullAuto/statusChanged"} {
		if methods[want] == 0 {
			t.Errorf("no %s event in the stream (got %v)", want, methods)
		}
	}
	if b, err := os.ReadFile(filepath.Join(r.cwd, "final.txt")); err != nil || strings.TrimSpace(string(b)) != "The task is complete." {
		t.Errorf("final.txt = %q, %v", b, err)
	}
}
