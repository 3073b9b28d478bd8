package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// TestTUIStartupMethods: every method the Codex 0.169 TUI calls besides
// threads and turns is answered (shapes checked by wirecheck), with the
// data apserver has: a workspace skill, the loaded thread, its turns and
// items, every sort key of thread/list.
func TestTUIStartupMethods(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "hello", Steps: []scripted.Step{{Text: "Hi."}}})
	c := newClient(t, model, options{inProcess: true})
	tid, cwd := c.startThread("never")
	skill := filepath.Join(cwd, ".apserver", "skills", "deploy")
	os.MkdirAll(skill, 0o755)
	os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: deploy\ndescription: Ship it.\n---\nSteps.\n"), 0o644)

	if m := c.call("account/read", map[string]any{}); m.get("requiresOpenaiAuth") != false || m.get("account") != nil {
		t.Errorf("account/read = %s", m.Raw)
	}
	m := c.call("config/read", map[string]any{"includeLayers": true})
	if m.str("config.approval_policy") == "" || m.str("config.model") != "scripted-model" ||
		m.str("origins.model.name.type") != "sessionFlags" || m.str("layers.0.name.type") != "user" {
		t.Errorf("config/read = %s, want the model from the flags and the user file as the first layer", m.Raw)
	}
	c.call("configRequirements/read", nil)
	m = c.call("skills/list", map[string]any{"cwds": []string{cwd}})
	if m.str("data.0.skills.0.name") != "deploy" || m.str("data.0.skills.0.description") != "Ship it." || m.str("data.0.skills.0.scope") != "repo" {
		t.Errorf("skills/list = %s, want the workspace's deploy skill", m.Raw)
	}
	c.call("hooks/list", map[string]any{"cwds": []string{cwd}})
	c.call("plugin/installed", map[string]any{})
	if m := c.call("thread/loaded/list", map[string]any{}); !strings.Contains(m.Raw, tid) {
		t.Errorf("thread/loaded/list = %s, want %s", m.Raw, tid)
	}
	turn := c.call("turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "hello"}}}).str("turn.id")
	c.turnDone(turn)
	if m := c.call("thread/turns/list", map[string]any{"threadId": tid}); m.str("data.0.id") != turn || m.str("data.0.items.1.text") != "Hi." {
		t.Errorf("thread/turns/list = %s", m.Raw)
	}
	if m := c.call("thread/items/list", map[string]any{"threadId": tid, "turnId": turn, "limit": 1}); m.str("data.0.item.type") != "userMessage" || m.str("data.0.turnId") != turn || m.str("nextCursor") == "" {
		t.Errorf("thread/items/list = %s, want the user message and a cursor", m.Raw)
	}
	for _, k := range []string{"created_at", "updated_at", "recency_at", "section_position"} {
		if m := c.call("thread/list", map[string]any{"sortKey": k}); m.str("data.0.id") != tid || !strings.Contains(m.Raw, `"readStates":null`) {
			t.Errorf("thread/list sortKey %s = %s", k, m.Raw)
		}
	}
	if m := c.call("thread/unsubscribe", map[string]any{"threadId": "nope"}); m.str("status") != "notLoaded" {
		t.Errorf("thread/unsubscribe of an unknown thread = %s", m.Raw)
	}
	c.callErr("thread/turns/list", map[string]any{}, -32602, "threadId")
}

// TestTitleThreadToolsOff: the TUI's throwaway title thread turns tools
// off through `config` and asks for structured output; the model is
// offered none of those tools, a call to one anyway runs nothing and asks
// nobody, and the request carries the schema.
func TestTitleThreadToolsOff(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "title", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Name: "exec_command", Arguments: `{"cmd":"touch title-marker","sandbox_permissions":"require_escalated","justification":"x"}`}}},
		{Text: `{"title":"A title"}`},
	}})
	c := newClient(t, model, options{inProcess: true})
	cwd := t.TempDir()
	cfg := map[string]any{"features.shell_tool": false, "tools.update_plan.enabled": false,
		"tools.experimental_request_user_input.enabled": false, "default_permissions": ":read-only"}
	tid := c.call("thread/start", map[string]any{"cwd": cwd, "ephemeral": true, "threadSource": "thread_title",
		"sandbox": "read-only", "config": cfg}).str("thread.id")
	schema := json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"],"additionalProperties":false}`)
	turn := c.call("turn/start", map[string]any{"threadId": tid, "outputSchema": schema,
		"input": []any{map[string]any{"type": "text", "text": "make a title"}}}).str("turn.id")
	done := c.turnDone(turn)
	if done.str("turn.status") != "completed" {
		t.Errorf("turn = %s", done.Raw)
	}
	if reqs := c.find("item/commandExecution/requestApproval", nil); len(reqs) > 0 {
		t.Errorf("the title thread asked for an approval: %s", reqs[0].Raw)
	}
	if _, err := os.Stat(filepath.Join(cwd, "title-marker")); err == nil {
		t.Errorf("a command ran in the title thread")
	}
	reqs := modelRequests(model)
	for _, off := range []string{"exec_command", "update_plan", "request_user_input", "apply_patch", "edit_file", "write_file"} {
		if slices.Contains(reqs[0].Tools, off) {
			t.Errorf("the title thread was offered %s (tools %v)", off, reqs[0].Tools)
		}
	}
	if !strings.Contains(string(reqs[0].Body), `"json_schema"`) || !strings.Contains(string(reqs[0].Body), `"title"`) {
		t.Errorf("model request without the output schema: %s", reqs[0].Body)
	}
	if len(reqs) < 2 || !strings.Contains(string(reqs[1].Body), "turned off") {
		t.Errorf("the model was not told the tool is off")
	}
}

// TestFuzzyFileSearch: the @-mention picker finds a file by the letters of
// its path, best first, never looks inside .git, and refuses a relative
// root.
func TestFuzzyFileSearch(t *testing.T) {
	t.Parallel()
	c := newClient(t, nil, options{inProcess: true})
	root := t.TempDir()
	for _, p := range []string{"src/server/listen.go", "src/server/conn.go", "docs/listening.md", ".git/listen.go", "README.md"} {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(root, p), nil, 0o644)
	}
	m := c.call("fuzzyFileSearch", map[string]any{"query": "srvlisten", "roots": []string{root}})
	if m.str("files.0.path") != "src/server/listen.go" || m.str("files.0.file_name") != "listen.go" ||
		m.str("files.0.match_type") != "file" || m.str("files.0.root") != root {
		t.Errorf("fuzzyFileSearch srvlisten = %s, want src/server/listen.go first", m.Raw)
	}
	m = c.call("fuzzyFileSearch", map[string]any{"query": "listen", "roots": []string{root}})
	if strings.Contains(m.Raw, ".git") || !strings.Contains(m.Raw, "docs/listening.md") {
		t.Errorf("fuzzyFileSearch listen = %s, want docs/listening.md and nothing under .git", m.Raw)
	}
	c.callErr("fuzzyFileSearch", map[string]any{"query": "x", "roots": []string{"rel"}}, -32602, "absolute")
}
