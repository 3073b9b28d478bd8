package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// doubleEncoded is args as some models send them: a JSON string holding
// the JSON object.
func doubleEncoded(t *testing.T, args string) string {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExecDoubleEncodedArguments: tool calls whose arguments are a JSON
// string holding the object run like plain ones, for every kind of tool:
// the command and write_file leave their files, read_file's output reaches
// the model, and no tool call fails.
func TestExecDoubleEncodedArguments(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "E-double", Steps: []scripted.Step{
		{Text: "Working.", ToolCalls: []scripted.ToolCall{
			{Name: "exec_command", Arguments: doubleEncoded(t, `{"cmd":"echo xyzzy | tr a-z A-Z > a.txt"}`)},
			{Name: "write_file", Arguments: doubleEncoded(t, `{"path":"b.txt","content":"written by write_file\n"}`)},
			{Name: "read_file", Arguments: doubleEncoded(t, `{"path":"a.txt"}`)},
			{Name: "update_plan", Arguments: doubleEncoded(t, `{"plan":[{"step":"write the files","status":"completed"}]}`)},
		}},
		{Text: "The task is complete."},
	}})
	r := runExec(t, model, "--full-auto", "--json", "E-double: write the files")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(r.cwd, "a.txt")); err != nil || string(b) != "XYZZY\n" {
		t.Errorf("a.txt (exec_command) = %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(r.cwd, "b.txt")); err != nil || string(b) != "written by write_file\n" {
		t.Errorf("b.txt (write_file) = %q, %v", b, err)
	}
	var second *scripted.Request
	for _, req := range modelRequests(model) {
		if req.ToolOutputs > 0 {
			second = &req
			break
		}
	}
	if second == nil {
		t.Fatalf("the model got no request after the tool calls\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	if second.ToolOutputs != 4 {
		t.Errorf("tool outputs in the second request = %d, want 4", second.ToolOutputs)
	}
	body := string(second.Body)
	if !strings.Contains(body, "XYZZY") {
		t.Errorf("read_file's output (XYZZY) did not reach the model: %s", body)
	}
	for _, bad := range []string{"invalid arguments", "cannot unmarshal"} {
		if strings.Contains(body, bad) {
			t.Errorf("a tool refused its arguments (%q in the tool outputs): %s", bad, body)
		}
	}
	if strings.Contains(r.stdout, `"status":"failed"`) {
		t.Errorf("a tool call failed:\n%s", r.stdout)
	}
}
