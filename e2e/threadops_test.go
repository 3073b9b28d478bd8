package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// TestThreadDelete: thread/delete removes a stored thread for good (a
// restarted server does not know it), announces thread/deleted, and
// refuses an unknown id; a loaded ephemeral thread can be deleted too.
func TestThreadDelete(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "hello", Steps: []scripted.Step{{Text: "Hi."}}})
	dataDir := t.TempDir()
	c := newClient(t, model, options{dataDir: dataDir})
	keep, _ := c.startThread("never")
	gone, _ := c.startThread("never")
	c.runTurn(gone, "hello")
	r := c.call("thread/delete", map[string]any{"threadId": gone})
	c.waitAfter(r, "thread/deleted", func(m *message) bool { return m.str("threadId") == gone })
	c.callErr("thread/read", map[string]any{"threadId": gone}, -32600, "not found")
	c.callErr("thread/delete", map[string]any{"threadId": gone}, -32600, "not found")
	c.callErr("thread/delete", map[string]any{}, -32602, "threadId")
	if m := c.call("thread/list", map[string]any{}); strings.Contains(m.Raw, gone) || !strings.Contains(m.Raw, keep) {
		t.Errorf("thread/list after delete = %s, want %s only", m.Raw, keep)
	}
	eph := c.call("thread/start", map[string]any{"cwd": t.TempDir(), "ephemeral": true}).str("thread.id")
	c.call("thread/delete", map[string]any{"threadId": eph})
	c.callErr("thread/turns/list", map[string]any{"threadId": eph}, -32600, "")
	if err := c.close(); err != nil {
		t.Fatalf("exit: %v", err)
	}

	c2 := newClient(t, model, options{dataDir: dataDir})
	c2.callErr("thread/resume", map[string]any{"threadId": gone}, -32600, "not found")
	c2.call("thread/read", map[string]any{"threadId": keep})
}

// TestThreadMetadataUpdate: gitInfo is patched field by field (absent
// keeps, null clears), kept across a restart, and bad params are refused.
func TestThreadMetadataUpdate(t *testing.T) {
	t.Parallel()
	model := startModel(t)
	dataDir := t.TempDir()
	c := newClient(t, model, options{dataDir: dataDir})
	tid, _ := c.startThread("never")
	m := c.call("thread/metadata/update", map[string]any{"threadId": tid,
		"gitInfo": map[string]any{"branch": "main", "sha": "abc123"}})
	if m.str("thread.gitInfo.branch") != "main" || m.str("thread.gitInfo.sha") != "abc123" || m.get("thread.gitInfo.originUrl") != nil {
		t.Errorf("metadata/update = %s", m.Raw)
	}
	m = c.call("thread/metadata/update", map[string]any{"threadId": tid, "gitInfo": map[string]any{"branch": nil}})
	if m.get("thread.gitInfo.branch") != nil || m.str("thread.gitInfo.sha") != "abc123" {
		t.Errorf("after clearing the branch = %s, want the sha kept", m.Raw)
	}
	c.callErr("thread/metadata/update", map[string]any{"threadId": tid, "gitInfo": map[string]any{"sha": " "}}, -32602, "gitInfo.sha")
	c.callErr("thread/metadata/update", map[string]any{"threadId": tid, "projectId": "p1"}, -32600, "project not found")
	c.callErr("thread/metadata/update", map[string]any{"gitInfo": nil}, -32602, "threadId")
	c.callErr("thread/metadata/update", map[string]any{"threadId": "nope"}, -32600, "not found")
	if err := c.close(); err != nil {
		t.Fatalf("exit: %v", err)
	}

	c2 := newClient(t, model, options{dataDir: dataDir})
	if m := c2.call("thread/read", map[string]any{"threadId": tid}); m.str("thread.gitInfo.sha") != "abc123" {
		t.Errorf("thread/read after restart = %s, want the stored sha", m.Raw)
	}
	// Updated while not loaded, then null clears it all.
	if m := c2.call("thread/metadata/update", map[string]any{"threadId": tid, "gitInfo": nil}); m.get("thread.gitInfo") != nil {
		t.Errorf("gitInfo null = %s", m.Raw)
	}
}

// TestThreadShellCommand: the TUI's `!cmd` runs the user's command as a
// turn of its own with a userShell command item whose output streams; the
// model sees the output next turn. The rules and the sandbox still hold:
// a forbidden command does not run even with full access, and a
// read-only thread's command cannot write (judged by the files).
func TestThreadShellCommand(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "what did I run", Steps: []scripted.Step{{Text: "You ran echo."}}})
	c := newClient(t, model, options{})
	tid, cwd := c.startThread("never")
	r := c.call("thread/shellCommand", map[string]any{"threadId": tid, "command": "echo hi-from-shell"})
	started := c.waitAfter(r, "turn/started", nil)
	turnID := started.str("turn.id")
	item := c.waitAfter(started, "item/started", itemOfType(turnID, "commandExecution"))
	if item.str("item.source") != "userShell" || !strings.Contains(item.str("item.command"), "echo hi-from-shell") {
		t.Errorf("item/started = %s", item.Raw)
	}
	c.waitAfter(item, "item/commandExecution/outputDelta", func(m *message) bool { return strings.Contains(m.str("delta"), "hi-from-shell") })
	done := c.waitAfter(item, "item/completed", itemOfType(turnID, "commandExecution"))
	if done.str("item.status") != "completed" || done.get("item.exitCode") != float64(0) || !strings.Contains(done.str("item.aggregatedOutput"), "hi-from-shell") {
		t.Errorf("item/completed = %s", done.Raw)
	}
	if end := c.turnDone(turnID); end.str("turn.status") != "completed" {
		t.Errorf("turn/completed = %s", end.Raw)
	}
	c.runTurn(tid, "what did I run")
	reqs := waitModelRequests(t, model, 1)
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, "hi-from-shell") || !strings.Contains(body, "user_shell_command") {
		t.Errorf("the model was not shown the user's command: %s", body)
	}
	// The user's command is a turn like any other: thread/revert undoes
	// what it changed in the workspace.
	os.WriteFile(filepath.Join(cwd, "notes.txt"), []byte("mine\n"), 0o644)
	r = c.call("thread/shellCommand", map[string]any{"threadId": tid, "command": "echo changed > notes.txt && touch made.txt"})
	shellTurn := c.waitAfter(r, "turn/started", nil).str("turn.id")
	c.turnDone(shellTurn)
	if s, _ := readFile(t, filepath.Join(cwd, "notes.txt")); s != "changed\n" {
		t.Fatalf("the user's command did not run: notes.txt = %q", s)
	}
	rev := c.call("thread/revert", map[string]any{"threadId": tid, "beforeTurnId": shellTurn, "force": true})
	if s, _ := readFile(t, filepath.Join(cwd, "notes.txt")); s != "mine\n" {
		t.Errorf("after thread/revert notes.txt = %q, want %q: %s", s, "mine\n", rev.Raw)
	}
	if _, err := os.Stat(filepath.Join(cwd, "made.txt")); err == nil {
		t.Errorf("thread/revert left the file the user's command made")
	}
	c.callErr("thread/shellCommand", map[string]any{"threadId": tid, "command": "  "}, -32602, "command")
	c.callErr("thread/shellCommand", map[string]any{"threadId": tid, "command": "true", "timeoutMs": -1}, -32602, "timeoutMs")
	c.callErr("thread/shellCommand", map[string]any{"threadId": "nope", "command": "true"}, -32600, "not loaded")

	// Forbidden, with full access: the victim outside the workspace stays.
	victim := t.TempDir()
	os.WriteFile(filepath.Join(victim, "keep"), []byte("x"), 0o644)
	full := c.call("thread/start", map[string]any{"cwd": cwd, "approvalPolicy": "on-request", "sandbox": "danger-full-access"}).str("thread.id")
	r = c.call("thread/shellCommand", map[string]any{"threadId": full, "command": "rm -rf " + victim})
	done = c.waitAfter(r, "item/completed", func(m *message) bool { return m.str("threadId") == full })
	if done.str("item.status") != "declined" || !strings.Contains(done.str("item.aggregatedOutput"), "forbidden") {
		t.Errorf("forbidden command item = %s", done.Raw)
	}
	c.waitAfter(done, "turn/completed", func(m *message) bool { return m.str("threadId") == full })
	if _, err := os.Stat(filepath.Join(victim, "keep")); err != nil {
		t.Errorf("a forbidden user command ran: %v", err)
	}

	// Read-only sandbox: the command runs and cannot write.
	ro := c.call("thread/start", map[string]any{"cwd": cwd, "approvalPolicy": "on-request", "sandbox": "read-only"}).str("thread.id")
	r = c.call("thread/shellCommand", map[string]any{"threadId": ro, "command": "touch ro-marker"})
	done = c.waitAfter(r, "item/completed", func(m *message) bool { return m.str("threadId") == ro })
	if done.str("item.status") != "failed" {
		t.Errorf("read-only write item = %s, want failed", done.Raw)
	}
	if _, err := os.Stat(filepath.Join(cwd, "ro-marker")); err == nil {
		t.Error("a user command wrote in a read-only thread")
	}
}
