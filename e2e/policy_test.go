package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/model/scripted"
)

// TestPolicyExplain: the decision, the rule and its source for commands
// and paths, in a thread's context, including a workspace rules file.
func TestPolicyExplain(t *testing.T) {
	t.Parallel()
	c := newClient(t, nil, options{inProcess: true})
	cwd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cwd, ".apserver"), 0o755); err != nil {
		t.Fatal(err)
	}
	rules := "allow terraform plan\nforbidden terraform apply\n  reason: changes real infrastructure\n  match: terraform apply -auto-approve\n"
	if err := os.WriteFile(filepath.Join(cwd, ".apserver", "rules"), []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	threadID := c.startThreadIn(cwd, "on-request")
	for _, tc := range []struct {
		command, decision, source, effective string
	}{
		{"go test ./...", "allow", "builtin", "runSandboxed"},
		{"git push origin main", "forbidden", "builtin", "ask"},
		{"go build ./... && git push", "forbidden", "builtin", "ask"},
		// A workspace rules file only tightens: its allow rule is ignored
		// (the project is not trusted in the user config), its forbidden
		// rule applies.
		{"terraform plan", "prompt", "default", "runSandboxed"},
		{"terraform apply -auto-approve", "forbidden", ".apserver/rules:2", "ask"},
		{"frobnicate --all", "prompt", "default", "runSandboxed"},
	} {
		r := c.call("policy/explain", map[string]any{"threadId": threadID, "command": tc.command})
		if r.str("decision") != tc.decision || !strings.HasSuffix(r.str("source"), tc.source) || r.str("effective") != tc.effective {
			t.Errorf("explain %q = %s; want decision %s, source …%s, effective %s", tc.command, r.Raw, tc.decision, tc.source, tc.effective)
		}
	}
	if ws := c.find("warning", func(m *message) bool { return strings.Contains(m.str("message"), "allow rules ignored") }); len(ws) != 1 ||
		!strings.Contains(ws[0].str("message"), "allow terraform plan") {
		t.Errorf("want one warning naming the ignored allow rule, got %d: %v", len(ws), ws)
	}
	in := c.call("policy/explain", map[string]any{"threadId": threadID, "path": "src/new.go"})
	if in.str("decision") != "allow" {
		t.Errorf("a path in the workspace: %s", in.Raw)
	}
	for _, p := range []string{"../outside.txt", "/etc/passwd", ".git/hooks/pre-commit"} {
		out := c.call("policy/explain", map[string]any{"threadId": threadID, "path": p})
		if out.str("decision") != "forbidden" || out.str("effective") != "refuse" {
			t.Errorf("path %s: %s", p, out.Raw)
		}
	}
	c.callErr("policy/explain", map[string]any{"threadId": threadID}, -32602, "command")

	// A rules file whose example contradicts its rule is refused, naming the
	// file and line; the warning reaches the client and the built-ins stay.
	bad := "allow npm test\n  match: npm install\n"
	if err := os.WriteFile(filepath.Join(cwd, ".apserver", "rules"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	r := c.call("policy/explain", map[string]any{"threadId": threadID, "command": "git push"})
	if r.str("decision") != "forbidden" {
		t.Errorf("with a bad rules file: %s", r.Raw)
	}
	w := c.waitFor("warning", func(m *message) bool { return strings.Contains(m.str("message"), "not loaded") })
	if !strings.Contains(w.str("message"), "rules:2") {
		t.Errorf("the warning does not name the file and line: %s", w.Raw)
	}
}

// TestSandboxedCommands: in workspace-write under on-request, a command
// runs without asking inside the sandbox: writing in the workspace works,
// writing next to it does not, and a forbidden command is asked about.
func TestSandboxedCommands(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "sandbox", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Command: "echo in > inside.txt && cat inside.txt"}}},
		{ToolCalls: []scripted.ToolCall{{Command: "echo out > ../escaped.txt"}}},
		{ToolCalls: []scripted.ToolCall{{Command: "git push origin main"}}},
		{Text: "done"},
	}})
	c := newClient(t, model, options{inProcess: true})
	// Not under /tmp: workspace-write lets commands write /tmp (as Codex
	// does), which would hide an escape to the workspace's parent.
	base := varTmpDir(t, "apserver-e2e-")
	cwd := filepath.Join(base, "ws")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	threadID := c.startThreadIn(cwd, "on-request")
	_, turnID := c.startTurn(threadID, "try the sandbox")
	req := c.waitFor("item/commandExecution/requestApproval", nil)
	if !strings.Contains(req.str("command"), "git push") || !strings.Contains(req.str("reason"), "forbidden") {
		t.Errorf("approval request: %s", req.Raw)
	}
	c.answer(req, map[string]any{"decision": "decline"})
	c.turnDone(turnID)
	if n := len(c.find("item/commandExecution/requestApproval", nil)); n != 1 {
		t.Errorf("%d approval requests, want 1 (only the forbidden command)", n)
	}
	if s, ok := readFile(t, filepath.Join(cwd, "inside.txt")); !ok || s != "in\n" {
		t.Errorf("inside.txt = %q, %v", s, ok)
	}
	if _, err := os.Stat(filepath.Join(base, "escaped.txt")); err == nil {
		t.Error("a sandboxed command wrote outside the workspace")
	}
	items := c.find("item/completed", itemOfType(turnID, "commandExecution"))
	if len(items) != 3 || items[1].str("item.status") != "failed" || items[2].str("item.status") != "declined" {
		t.Errorf("command items: %v", items)
	}
}

// TestFsWatch: fs/watch reports changes under a directory as fs/changed;
// ids are unique per connection; fs/unwatch stops the events.
func TestFsWatch(t *testing.T) {
	t.Parallel()
	c := newClient(t, nil, options{inProcess: true})
	dir := t.TempDir()
	r := c.call("fs/watch", map[string]any{"watchId": "w1", "path": dir})
	canon, _ := filepath.EvalSymlinks(dir)
	if r.str("path") != canon {
		t.Errorf("fs/watch path = %q, want %q", r.str("path"), canon)
	}
	c.callErr("fs/watch", map[string]any{"watchId": "w1", "path": dir}, -32600, "watchId already exists: w1")
	c.callErr("fs/watch", map[string]any{"watchId": "w2", "path": "relative/path"}, -32600, "absolute")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "f.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	ev := c.waitFor("fs/changed", func(m *message) bool {
		return m.str("watchId") == "w1" && strings.Contains(m.Raw, "f.txt")
	})
	if !strings.Contains(ev.Raw, filepath.Join(canon, "sub", "f.txt")) {
		t.Errorf("fs/changed: %s", ev.Raw)
	}
	un := c.call("fs/unwatch", map[string]any{"watchId": "w1"})
	c.call("fs/unwatch", map[string]any{"watchId": "never-existed"})
	if err := os.WriteFile(filepath.Join(dir, "late.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := c.quiet(600*time.Millisecond, "fs/changed", func(m *message) bool { return m.Seq > un.Seq && strings.Contains(m.Raw, "late.txt") }); len(got) != 0 {
		t.Errorf("fs/changed after fs/unwatch: %v", got)
	}
}
