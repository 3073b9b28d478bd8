package e2e

import (
	"testing"

	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
)

// TestEveryMethodWrongParams: every client request of both schemas, sent
// with params of the wrong shape (an array, a string, a number) or an
// object whose usual fields all have the wrong type, gets an answer: a
// clear -32602 (or -32601 for a Codex method apserver does not serve),
// or a result where no field it reads was given. Never an internal error
// or silence, and the server keeps serving. A new method is covered the
// day its schema lands.
func TestEveryMethodWrongParams(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "", Steps: []scripted.Step{{Text: "ok"}}})
	c := newClient(t, model, options{})
	wrongTypes := map[string]any{}
	for _, k := range []string{"threadId", "turnId", "itemId", "runId", "blueprintId", "projectId", "id", "name", "cwd", "path",
		"input", "items", "command", "query", "roots", "config", "url", "model"} {
		wrongTypes[k] = 42
	}
	n := 0
	for _, m := range protocol.Methods {
		if m.Kind != protocol.KindClientRequest || m.Method == protocol.MethodInitialize {
			continue
		}
		n++
		for i, params := range []any{[]any{}, "x", 42, wrongTypes} {
			r := c.request(m.Method, params)
			switch {
			case r.Error == nil && i < 3:
				t.Errorf("%s with params %v: a result, want -32602", m.Method, params)
			case r.Error == nil:
			case r.Error.Code != -32602 && r.Error.Code != -32601:
				t.Errorf("%s with params %v: error %d %q, want -32602 naming what is wrong", m.Method, params, r.Error.Code, r.Error.Message)
			case r.Error.Message == "":
				t.Errorf("%s with params %v: error %d without a message", m.Method, params, r.Error.Code)
			}
		}
	}
	if n < 200 {
		t.Fatalf("only %d client requests in protocol.Methods", n)
	}
	c.call("model/list", map[string]any{})
}
