package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// TestBadParamsRefused: requests the server used to accept with settings
// it cannot honour get -32602 naming the field, and the server keeps
// serving: a good request right after each one succeeds.
func TestBadParamsRefused(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte(`
[[models]]
id = "scripted-model"
reasoning_efforts = ["low", "high"]
[[models]]
id = "other-model"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	model := startModel(t, scripted.Rule{Match: "", Steps: []scripted.Step{{Text: "ok"}}})
	c := newClient(t, model, options{args: []string{"--config", cfg}, inProcess: true})
	cwd := t.TempDir()
	file := filepath.Join(cwd, "file.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(cwd, "missing")
	threadID := c.startThreadIn(cwd, "")
	turn := func(extra map[string]any) map[string]any {
		p := map[string]any{"threadId": threadID, "input": textInput("hi")}
		for k, v := range extra {
			p[k] = v
		}
		return p
	}
	settings := func(extra map[string]any) []struct {
		method string
		params map[string]any
	} {
		var out []struct {
			method string
			params map[string]any
		}
		for _, m := range []string{"thread/start", "thread/resume", "thread/fork"} {
			p := map[string]any{}
			if m != "thread/start" {
				p["threadId"] = threadID
			}
			for k, v := range extra {
				p[k] = v
			}
			out = append(out, struct {
				method string
				params map[string]any
			}{m, p})
		}
		return out
	}

	type bad struct {
		method string
		params map[string]any
		field  string // the message must name it
	}
	var cases []bad
	for _, tc := range []struct {
		extra map[string]any
		field string
	}{
		{map[string]any{"modelProvider": "nope"}, "modelProvider"},
		{map[string]any{"cwd": missing}, "cwd"},
		{map[string]any{"cwd": file}, "cwd"},
		{map[string]any{"cwd": "relative/dir"}, "cwd"},
		{map[string]any{"model": "no-such-model"}, "model"},
		{map[string]any{"sandbox": "none"}, "sandbox"},
		{map[string]any{"approvalPolicy": "sometimes"}, "approvalPolicy"},
		{map[string]any{"approvalPolicy": 5}, "approvalPolicy"},
	} {
		for _, s := range settings(tc.extra) {
			cases = append(cases, bad{s.method, s.params, tc.field})
		}
	}
	cases = append(cases,
		bad{"turn/start", turn(map[string]any{"cwd": missing}), "cwd"},
		bad{"turn/start", turn(map[string]any{"cwd": file}), "cwd"},
		bad{"turn/start", turn(map[string]any{"cwd": "relative"}), "cwd"},
		bad{"turn/start", turn(map[string]any{"outputSchema": "a string"}), "outputSchema"},
		bad{"turn/start", turn(map[string]any{"outputSchema": []any{1}}), "outputSchema"},
		bad{"turn/start", turn(map[string]any{"outputSchema": 3}), "outputSchema"},
		bad{"turn/start", turn(map[string]any{"outputSchema": map[string]any{"type": "banana"}}), "outputSchema"},
		bad{"turn/start", turn(map[string]any{"outputSchema": map[string]any{"type": "object", "properties": []any{}}}), "outputSchema"},
		bad{"turn/start", turn(map[string]any{"effort": "ludicrous"}), "effort"},
		bad{"turn/start", turn(map[string]any{"effort": ""}), "effort"},
		bad{"turn/start", turn(map[string]any{"model": "scripted-model", "effort": "medium"}), "effort"},
		bad{"turn/start", turn(map[string]any{"model": "no-such-model"}), "model"},
		bad{"turn/start", turn(map[string]any{"summary": "verbose"}), "summary"},
		bad{"turn/start", turn(map[string]any{"approvalPolicy": "sometimes"}), "approvalPolicy"},
		bad{"turn/start", turn(map[string]any{"sandboxPolicy": map[string]any{"type": "open"}}), "sandboxPolicy"},
		bad{"turn/start", turn(map[string]any{"sandboxPolicy": "workspaceWrite"}), "sandboxPolicy"},
	)
	for _, tc := range cases {
		r := c.request(tc.method, tc.params)
		if r.Error == nil {
			t.Errorf("%s %v: accepted: %s", tc.method, tc.params, r.Raw)
		} else if r.Error.Code != -32602 || !strings.Contains(r.Error.Message, tc.field) {
			t.Errorf("%s %v: error %d %q; want -32602 naming %s", tc.method, tc.params, r.Error.Code, r.Error.Message, tc.field)
		}
		// Still serving, and the thread is still usable.
		c.call("thread/read", map[string]any{"threadId": threadID})
	}

	// The good forms of the same fields are accepted.
	c.call("thread/start", map[string]any{"cwd": cwd, "modelProvider": "openai", "model": "other-model", "sandbox": "read-only", "approvalPolicy": "untrusted"})
	c.call("thread/resume", map[string]any{"threadId": threadID, "cwd": cwd})
	r := c.call("thread/start", map[string]any{"cwd": cwd})
	other := r.str("thread.id")
	c.waitAfter(r, "thread/started", func(m *message) bool { return m.str("thread.id") == other })
	c.turnDone(c.startTurnWith(other, map[string]any{
		"cwd": cwd, "effort": "high", "summary": "concise", "model": "scripted-model",
		"outputSchema":  map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": []any{"string", "null"}}}},
		"sandboxPolicy": map[string]any{"type": "readOnly"},
	}))
}

// startTurnWith starts a turn with extra turn/start params and returns its id.
func (c *client) startTurnWith(threadID string, extra map[string]any) string {
	c.t.Helper()
	p := map[string]any{"threadId": threadID, "input": textInput("hello")}
	for k, v := range extra {
		p[k] = v
	}
	r := c.call("turn/start", p)
	id := r.str("turn.id")
	if id == "" {
		c.t.Fatalf("turn/start result has no turn.id: %s", r.Raw)
	}
	return id
}
