package e2e

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// TestHandshake checks initialize gating (protocol/codex/CORE.md §3).
func TestHandshake(t *testing.T) {
	t.Parallel()
	model := startModel(t)
	c := spawn(t, model, options{})

	c.notify("initialized", nil) // before initialize: silently ignored
	c.callErr("thread/list", map[string]any{}, -32600, "Not initialized")
	if n := len(c.find("", func(m *message) bool { return m.isResponse() })); n != 1 {
		t.Errorf("got %d responses before initialize, want 1 (a notification gets no answer): %s", n, c.dump(0))
	}

	init := c.initialize()
	for _, k := range []string{"userAgent", "codexHome", "platformFamily", "platformOs"} {
		if init.str(k) == "" {
			t.Errorf("initialize result %s = %v, want a non-empty string", k, init.get(k))
		}
	}
	if got := init.str("platformOs"); got != runtime.GOOS {
		t.Errorf("initialize platformOs = %q, want %q", got, runtime.GOOS)
	}
	if got := init.str("platformFamily"); got != "unix" {
		t.Errorf("initialize platformFamily = %q, want \"unix\"", got)
	}
	if ua := init.str("userAgent"); !strings.HasPrefix(ua, "e2e/") {
		t.Errorf("initialize userAgent = %q, want it to start with the client name \"e2e/\"", ua)
	}

	c.callErr("initialize", map[string]any{
		"clientInfo": map[string]any{"name": "again", "version": "1"},
	}, -32600, "Already initialized")

	// Still serving.
	r := c.call("thread/list", map[string]any{})
	if _, ok := r.get("data").([]any); !ok {
		t.Errorf("thread/list after the second initialize = %s, want {data: [...]}", r.Raw)
	}
}

// TestBadInput sends malformed and invalid messages, each followed by a
// valid request that must still be answered (protocol/codex/CORE.md §2).
func TestBadInput(t *testing.T) {
	t.Parallel()
	model := startModel(t)
	c := newClient(t, model, options{})
	threadID, _ := c.startThread("never")

	// alive sends a valid request and returns its response.
	alive := func(after string) *message {
		t.Helper()
		r := c.request("thread/list", map[string]any{"limit": 1})
		if r.Error != nil {
			t.Errorf("after %s: thread/list = error %d %q, want a result", after, r.Error.Code, r.Error.Message)
		}
		return r
	}
	// nullIDErrors returns the null-id error responses between from and to.
	nullIDErrors := func(from, to *message) []*message {
		var out []*message
		for _, m := range c.snapshot() {
			if m.Seq > from.Seq && m.Seq < to.Seq && m.isResponse() && string(m.ID) == "null" {
				out = append(out, m)
			}
		}
		return out
	}

	// Unparseable lines: an error with a null id, then the next request
	// is served.
	for _, tc := range []struct {
		name, line string
		code       int
	}{
		{"non-JSON", "this is {not json", -32700},
		{"array", "[1,2]", -32600},
		{"object without method or id", `{"foo":1}`, -32600},
	} {
		mark := alive("mark")
		c.write(tc.line)
		next := alive(tc.name)
		errs := nullIDErrors(mark, next)
		if len(errs) != 1 {
			t.Errorf("%s %q: got %d null-id error responses, want 1 with code %d", tc.name, tc.line, len(errs), tc.code)
			continue
		}
		if errs[0].Error.Code != tc.code {
			t.Errorf("%s %q: error code %d (%q), want %d", tc.name, tc.line, errs[0].Error.Code, errs[0].Error.Message, tc.code)
		}
	}

	// A float or null id gets no reply at all (protocol/codex/CORE.md §2).
	for _, line := range []string{
		`{"id":1.5,"method":"thread/list","params":{}}`,
		`{"id":null,"method":"thread/list","params":{}}`,
	} {
		mark := alive("mark")
		c.write(line)
		next := alive(line)
		if got := c.labelsBetween(mark, next); len(got) != 0 {
			t.Errorf("%s: got %v, want no reply", line, got)
		}
	}

	// Requests that parse but are invalid.
	const unknownThread = "01a20000-0000-7000-8000-000000000000"
	c.callErr("thread/read", map[string]any{"threadId": unknownThread}, -32600, unknownThread)
	alive("unknown thread")

	c.callErr("no/such/method", map[string]any{}, -32601, "")
	alive("unknown method")

	m := c.callErr("thread/read", map[string]any{"threadId": 5}, -32602, "threadId")
	_ = m
	alive("wrong param type")

	c.callErr("turn/start", map[string]any{"threadId": threadID}, -32602, "input")
	alive("missing input")

	// A request carrying "jsonrpc":"2.0" is served.
	c.expect("9001", "thread/list")
	c.write(`{"jsonrpc":"2.0","id":9001,"method":"thread/list","params":{}}`)
	if r := c.response("9001"); r.Error != nil {
		t.Errorf(`request with "jsonrpc":"2.0" = error %d %q, want a result`, r.Error.Code, r.Error.Message)
	}

	// Ids come back with their type: string stays string, integer stays
	// integer, "7" and 7 are different ids.
	for _, id := range []any{"abc-1", int64(424242), "7", int64(7)} {
		idJSON := c.sendWithID(id, "thread/list", map[string]any{})
		r := c.response(idJSON)
		if string(r.ID) != idJSON {
			t.Errorf("id %s echoed as %s", idJSON, r.ID)
		}
	}

	// Every notification so far carries emittedAtMs (wirecheck enforces
	// it line by line; this checks the test saw at least one).
	started := c.waitFor("thread/started", nil)
	var env struct {
		EmittedAtMs int64 `json:"emittedAtMs"`
	}
	if err := json.Unmarshal([]byte(started.Raw), &env); err != nil || env.EmittedAtMs <= 0 {
		t.Errorf("thread/started emittedAtMs = %d (%v), want Unix ms: %s", env.EmittedAtMs, err, started.Raw)
	}
	for _, m := range c.snapshot() {
		if strings.Contains(m.Raw, `"jsonrpc"`) {
			t.Errorf("server message carries jsonrpc: %s", m.Raw)
		}
	}
}

// TestOverlongLine checks that a line over --max-line-bytes is refused
// with an error and the next line is served.
func TestOverlongLine(t *testing.T) {
	t.Parallel()
	model := startModel(t)
	c := newClient(t, model, options{args: []string{"--max-line-bytes", "1024"}})

	mark := c.call("thread/list", map[string]any{})
	long := c.sendWithID(int64(777), "thread/list", map[string]any{"searchTerm": strings.Repeat("x", 4096)})
	c.noReply[long] = true // answered with a null id, or by its id
	next := c.call("thread/list", map[string]any{})

	var errs, results int
	for _, m := range c.snapshot() {
		if m.Seq <= mark.Seq || m.Seq >= next.Seq || !m.isResponse() {
			continue
		}
		if string(m.ID) == long || string(m.ID) == "null" {
			if m.Error != nil {
				errs++
			} else {
				results++
			}
		}
	}
	if errs != 1 || results != 0 {
		t.Errorf("over-long line: got %d error and %d result responses before the next request's answer, want 1 error and 0 results\n%s",
			errs, results, c.dump(mark.Seq))
	}
}
