package autodrive

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tools/rules"
)

func TestNormalizeResult(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"Exit code: 0\nWall time: 0.1 seconds\nOutput:\nok", "Exit code: 0\nWall time: 2.7 seconds\nOutput:\nok"},
		{"ok  \tpkg\t0.012s", "ok  \tpkg\t1.5s"},
		{"2026-11-22T00:20:10.462Z started", "2025-01-02T03:04:05Z started"},
		{"wrote /tmp/go-build12345/x.o", "wrote /tmp/go-build99/x.o"},
		{"commit 9fceb02d0ae598e95dc970b74767f19372d61af8", "commit 1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"},
		{"pid 4242 exited", "pid 17 exited"},
	} {
		if x, y := normalizeResult(tc.a), normalizeResult(tc.b); x != y {
			t.Errorf("normalizeResult(%q) = %q, normalizeResult(%q) = %q; want equal", tc.a, x, tc.b, y)
		}
	}
	if normalizeResult("FAIL: TestA") == normalizeResult("FAIL: TestB") {
		t.Error("different failures normalize to the same result")
	}
	long := strings.Repeat("line of output\n", 200)
	if r := normalizeResult(long); len(r) > resultDigestBytes+40 || !strings.Contains(r, "#") {
		t.Errorf("normalizeResult(long) = %d bytes %q…, want a clipped digest", len(r), r[:40])
	}
	if normalizeResult(long) == normalizeResult(long+"x") {
		t.Error("the digest of a long result ignores its tail")
	}
}

func TestSteps(t *testing.T) {
	hist := []model.Entry{
		{Kind: model.EntryUser, Text: "go"},
		{Kind: model.EntryToolCall, CallID: "c1", Name: "exec_command", Arguments: `{"cmd":"go test ./..."}`},
		{Kind: model.EntryToolOutput, CallID: "c1", Output: "Exit code: 1\nWall time: 1.0 seconds\nOutput:\nFAIL"},
		{Kind: model.EntryToolCall, CallID: "c2", Name: "read_file", Arguments: `{"path":"a.go","limit":5}`},
		{Kind: model.EntryToolOutput, CallID: "c2", Output: "package a"},
		{Kind: model.EntryToolCall, CallID: "c3", Name: "update_plan", Arguments: `{"plan":[]}`},
		{Kind: model.EntryToolOutput, CallID: "c3", Output: "update_plan: invalid arguments: empty"},
		{Kind: model.EntryAssistant, Text: "hm"},
	}
	items := map[string]protocol.ThreadItem{
		"c1": protocol.CommandExecutionItem{ID: "c1", Status: protocol.ItemFailed},
	}
	got := steps(hist, items)
	want := []controller.Step{
		{Tool: "exec_command", Action: "exec_command: go test ./...", Result: "Exit code: 1 Wall time: <dur> Output: FAIL", Error: true},
		{Tool: "read_file", Action: `read_file: {"limit":5,"path":"a.go"}`, Result: "package a"},
		{Tool: "update_plan", Action: `update_plan: {"plan":[]}`, Result: "update_plan: invalid arguments: empty", Error: true},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("steps =\n%v\nwant\n%v", got, want)
	}
}

func TestIsCheck(t *testing.T) {
	for cmd, want := range map[string]bool{
		"go test ./...":                          true,
		"cd x && make test":                      true,
		"npm test":                               true,
		"pytest -q":                              true,
		"touch fixed && make":                    true,
		"/bin/bash -c 'make test'":               true, // the form command items carry
		"/bin/bash -c 'cd x && go test ./...'":   true,
		"timeout 60 pytest -q":                   true,
		"set -o pipefail; make test 2>&1 | tail": true,
		"make test 2>&1":                         true,
		"make test 2>&1 | tail":                  false, // tail's status, not the tests'
		"make test || true":                      false,
		"go test ./...; echo done":               false,
		"echo go test":                           false, // mentions a check, runs none
		"grep -r tox .":                          false,
		"cat /usr/share/doc/make":                false,
		"ls -la":                                 false,
		"cat go.mod":                             false,
		"git commit -m 'testing'":                false,
		"make install":                           false,
	} {
		if got := isCheck(rules.Builtin(), rules.Context{Cwd: "/w"}, cmd); got != want {
			t.Errorf("isCheck(%q) = %t, want %t", cmd, got, want)
		}
	}
}

func TestTurnErrorRecoverable(t *testing.T) {
	for info, want := range map[string]bool{
		`"internalServerError"`: true,
		`{"responseTooManyFailedAttempts":{"httpStatusCode":429}}`: true,
		`{"responseStreamDisconnected":{"httpStatusCode":null}}`:   true,
		`"contextWindowExceeded"`:                                  false,
		`"unauthorized"`:                                           false,
		`"other"`:                                                  false,
		`null`:                                                     false,
	} {
		te := turnError(&protocol.TurnError{Message: "m", CodexErrorInfo: json.RawMessage(info)})
		if te.Recoverable != want {
			t.Errorf("turnError(%s).Recoverable = %t, want %t", info, te.Recoverable, want)
		}
	}
}

func TestScriptOf(t *testing.T) {
	for line, want := range map[string]string{
		"/bin/bash -c 'make test'":       "make test",
		`/bin/bash -c 'echo '\''hi'\'''`: "echo 'hi'",
		"make test":                      "make test",
		"sh -x -c 'make'":                "sh -x -c 'make'", // a flag before -c: not the form items carry
		"/bin/bash -c 'unterminated":     "/bin/bash -c 'unterminated",
		"/bin/bash -c ''":                "", // an empty script
	} {
		if got := scriptOf(line); got != want {
			t.Errorf("scriptOf(%q) = %q, want %q", line, got, want)
		}
	}
}

func TestNormalizeAction(t *testing.T) {
	for _, tc := range []struct{ name, args, want string }{
		{"exec_command", `{"cmd":"go test ./...","workdir":"/w"}`, "exec_command: go test ./..."},
		{"shell", `{"command":"ls"}`, "shell: ls"},
		{"read_file", `{"path":"a.go","limit":5}`, `read_file: {"limit":5,"path":"a.go"}`},
		{"apply_patch", "*** Begin Patch\n  x", "apply_patch: *** Begin Patch x"},
	} {
		if got := normalizeAction(tc.name, tc.args); got != tc.want {
			t.Errorf("normalizeAction(%q, %q) = %q, want %q", tc.name, tc.args, got, tc.want)
		}
	}
}

// TestSummarize: the controller's view of a finished turn: checks passed
// or not run, the diff fingerprint only with file changes, the steps of
// the turn's history, an empty reply, the plan.
func TestSummarize(t *testing.T) {
	exit := func(n int) *int { return &n }
	test := "/bin/bash -c 'go test ./...'"
	base := FinishedTurn{ID: "t1", Status: controller.StatusCompleted, ElapsedMs: 7, Rules: rules.Builtin(), RulesContext: rules.Context{Cwd: "/w"}}
	for _, tc := range []struct {
		name string
		edit func(*FinishedTurn)
		want func(controller.TurnSummary) string // "" when right
	}{
		{"empty reply", func(*FinishedTurn) {}, func(s controller.TurnSummary) string {
			if !s.EmptyReply || s.ElapsedMs != 7 || s.TurnID != "t1" || s.Steps == nil || s.Plan == nil || s.DiffFingerprint != "" {
				return fmt.Sprintf("%+v", s)
			}
			return ""
		}},
		{"check passed", func(f *FinishedTurn) {
			f.Items = []protocol.ThreadItem{protocol.CommandExecutionItem{ID: "c", Command: test, Status: protocol.ItemCompleted, ExitCode: exit(0)}}
			f.LastAgent = "done"
		}, func(s controller.TurnSummary) string {
			if s.ChecksPassed == nil || !*s.ChecksPassed || s.EmptyReply || len(s.ChecksNotRun) != 0 || s.AgentMessage != "done" {
				return fmt.Sprintf("%+v", s)
			}
			return ""
		}},
		{"check declined then run", func(f *FinishedTurn) {
			f.Items = []protocol.ThreadItem{
				protocol.CommandExecutionItem{ID: "c1", Command: test, Status: protocol.ItemDeclined},
				protocol.CommandExecutionItem{ID: "c2", Command: "/bin/bash -c 'ls'", Status: protocol.ItemDeclined},
			}
		}, func(s controller.TurnSummary) string {
			if s.ChecksPassed != nil || fmt.Sprint(s.ChecksNotRun) != "[go test ./...]" {
				return fmt.Sprintf("checks passed %v, not run %q", s.ChecksPassed, s.ChecksNotRun)
			}
			return ""
		}},
		{"file change, steps, plan, error", func(f *FinishedTurn) {
			f.Status = "failed"
			f.Error = &protocol.TurnError{Message: "m", CodexErrorInfo: json.RawMessage(`"serverOverloaded"`)}
			f.Items = []protocol.ThreadItem{protocol.FileChangeItem{ID: "p", Status: protocol.ItemCompleted, Changes: []protocol.FileUpdateChange{{Path: "a", Diff: "+x"}}}}
			f.History = []model.Entry{{Kind: model.EntryToolCall, CallID: "p", Name: "apply_patch", Arguments: "x"}, {Kind: model.EntryToolOutput, CallID: "p", Output: "ok"}}
			f.Plan = []protocol.TurnPlanStep{{Step: "a", Status: "completed"}}
		}, func(s controller.TurnSummary) string {
			if len(s.DiffFingerprint) != 16 || len(s.Steps) != 1 || s.Steps[0].Error || len(s.Plan) != 1 || s.Error == nil || !s.Error.Recoverable || s.EmptyReply {
				return fmt.Sprintf("%+v", s)
			}
			return ""
		}},
	} {
		f := base
		tc.edit(&f)
		if why := tc.want(Summarize(f)); why != "" {
			t.Errorf("%s: Summarize = %s", tc.name, why)
		}
	}
}
