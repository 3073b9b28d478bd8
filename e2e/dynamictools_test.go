package e2e

import (
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// Editor-provided tools (Codex's dynamic tools, docs/protocol.md): declared
// on thread/start by a client that opted into the experimental API, called
// by the model, answered by the client through item/tool/call.

var dynTools = []any{
	map[string]any{"type": "function", "name": "diagnostics", "description": "The Problems of a file.",
		"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}},
	map[string]any{"type": "namespace", "name": "ed", "description": "The editor.", "tools": []any{
		map[string]any{"type": "function", "name": "open_file", "description": "Open a file.", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{}}},
	}},
}

func experimentalClient(t *testing.T, model *scripted.Server, args []string) *client {
	c := spawn(t, model, options{inProcess: true, args: args})
	c.call("initialize", map[string]any{
		"clientInfo":   map[string]any{"name": "e2e", "title": "apserver e2e", "version": "0.0.1"},
		"capabilities": map[string]any{"experimentalApi": true},
	})
	c.notify("initialized", nil)
	return c
}

func TestDynamicTools(t *testing.T) {
	t.Parallel()
	dyn := func(name, args string) scripted.Step {
		return scripted.Step{ToolCalls: []scripted.ToolCall{{Name: name, Arguments: args}}}
	}
	model := startModel(t, scripted.Rule{Match: "check problems", Steps: []scripted.Step{
		dyn("diagnostics", `{"path":"a.go"}`),
		dyn("ed__open_file", `{}`),
		dyn("diagnostics", `{"path":"b.go"}`),
		{Text: "Checked."},
	}})
	c := experimentalClient(t, model, mcpConfig(t, "dynamic_tool_timeout_sec = 1\n"))
	r := c.call("thread/start", map[string]any{"cwd": t.TempDir(), "dynamicTools": dynTools})
	threadID := r.str("thread.id")
	_, turnID := c.startTurn(threadID, "check problems")

	req := c.waitFor("item/tool/call", nil)
	started := c.waitFor("item/started", itemOfType(turnID, "dynamicToolCall"))
	if req.str("threadId") != threadID || req.str("turnId") != turnID || req.str("tool") != "diagnostics" || req.get("arguments.path") != "a.go" ||
		req.get("namespace") != nil || req.str("callId") != started.str("item.id") || started.Seq > req.Seq {
		t.Errorf("item/tool/call: %s (item/started #%d, request #%d)", req.Raw, started.Seq, req.Seq)
	}
	c.answer(req, map[string]any{"contentItems": []any{map[string]any{"type": "inputText", "text": "a.go:1: x declared and not used"}}, "success": true})
	first := c.waitFor("item/completed", func(m *message) bool { return m.str("item.id") == req.str("callId") })
	if first.str("item.status") != "completed" || first.get("item.success") != true || first.str("item.contentItems.0.text") != "a.go:1: x declared and not used" || first.get("item.durationMs") == nil {
		t.Errorf("first call: %s", first.Raw)
	}

	// Not answered: the call times out and the turn goes on.
	open := c.waitMsg("open_file request", req.Seq+1, func(m *message) bool { return m.Method == "item/tool/call" })
	if open.str("tool") != "open_file" || open.str("namespace") != "ed" {
		t.Errorf("namespaced call: %s", open.Raw)
	}
	timedOut := c.waitFor("item/completed", func(m *message) bool { return m.str("item.id") == open.str("callId") })
	if timedOut.str("item.status") != "failed" || timedOut.get("item.success") != false || timedOut.str("item.namespace") != "ed" {
		t.Errorf("timed-out call: %s", timedOut.Raw)
	}

	// An error answer fails the call.
	third := c.waitMsg("third request", open.Seq+1, func(m *message) bool { return m.Method == "item/tool/call" })
	c.answerError(third, -32000, "no such file")
	c.waitFor("item/completed", func(m *message) bool {
		return m.str("item.id") == third.str("callId") && m.str("item.status") == "failed"
	})
	done := c.turnDone(turnID)
	if done.str("turn.status") != "completed" {
		t.Errorf("turn: %s", done.Raw)
	}
	reqs := modelRequests(model)
	if !containsAll(reqs[0].Tools, "diagnostics", "ed__open_file", "exec_command") {
		t.Errorf("tools offered: %v", reqs[0].Tools)
	}
	if b := string(reqs[1].Body); !strings.Contains(b, "x declared and not used") {
		t.Error("the model did not get the editor's answer")
	}
	if b := string(reqs[2].Body); !strings.Contains(b, "did not answer within 1s") {
		t.Error("the model was not told of the timeout")
	}
	if b := string(reqs[3].Body); !strings.Contains(b, "no such file") {
		t.Error("the model was not told of the error")
	}

	// Bad declarations.
	c.callErr("thread/start", map[string]any{"cwd": t.TempDir(), "dynamicTools": []any{map[string]any{"type": "function", "name": "exec_command", "description": "x", "inputSchema": map[string]any{}}}}, -32602, "exec_command")
	c.callErr("thread/start", map[string]any{"cwd": t.TempDir(), "dynamicTools": []any{map[string]any{"type": "function", "name": "bad name", "description": "x", "inputSchema": map[string]any{}}}}, -32602, "dynamicTools[0].name")
}

// TestDynamicToolsNeedExperimentalAPI: as Codex, a client that did not opt
// in cannot declare tools.
func TestDynamicToolsNeedExperimentalAPI(t *testing.T) {
	t.Parallel()
	model := startModel(t)
	c := newClient(t, model, options{inProcess: true})
	c.callErr("thread/start", map[string]any{"cwd": t.TempDir(), "dynamicTools": dynTools}, -32600, "thread/start.dynamicTools requires experimentalApi capability")
}
