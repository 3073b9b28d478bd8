package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// TestThreadSearchStream: Codex 0.171's thread/search/stream finds the
// threads whose messages contain the term (a user message in one, an agent
// answer in another, case-insensitive), sends them as thread/search/partial
// notifications naming the request before its answer, and answers with the
// page in the requested order; thread/search pages with a cursor; a blank
// term is -32602 naming searchTerm. Every line is checked against Codex
// 0.171's schema by the harness.
func TestThreadSearchStream(t *testing.T) {
	t.Parallel()
	model := startModel(t,
		scripted.Rule{Match: "alpha", Steps: []scripted.Step{{Text: "Sure."}}},
		scripted.Rule{Match: "beta", Steps: []scripted.Step{{Text: "The NEEDLE is here, said the agent."}}},
		scripted.Rule{Match: "gamma", Steps: []scripted.Step{{Text: "Nothing to see."}}},
	)
	c := newClient(t, model, options{inProcess: true})
	a, _ := c.startThread("never")
	c.runTurn(a, "alpha: a needle in the user message")
	b, _ := c.startThread("never")
	c.runTurn(b, "beta question")
	g, _ := c.startThread("never")
	c.runTurn(g, "gamma question")

	id := c.send("thread/search/stream", map[string]any{"searchTerm": " needle "})
	res := c.response(id)
	if res.Error != nil {
		t.Fatalf("thread/search/stream = %s", res.Raw)
	}
	ids := func(m *message, path string) []string {
		var out []string
		for i := 0; ; i++ {
			s := m.str(fmt.Sprintf("%s.%d.thread.id", path, i))
			if s == "" {
				return out
			}
			out = append(out, s)
		}
	}
	if got := strings.Join(ids(res, "data"), ","); got != b+","+a {
		t.Errorf("thread/search/stream data = %s, want %s,%s (newest first, not %s)", got, b, a, g)
	}
	if sn := res.str("data.0.snippet"); !strings.Contains(sn, "NEEDLE is here") {
		t.Errorf("snippet of the agent's match = %q", sn)
	}
	if sn := res.str("data.1.snippet"); !strings.Contains(sn, "needle in the user message") {
		t.Errorf("snippet of the user's match = %q", sn)
	}
	partials := c.find("thread/search/partial", func(m *message) bool {
		rid, _ := json.Marshal(m.get("requestId"))
		return string(rid) == id
	})
	var seen []string
	for _, p := range partials {
		if p.Seq > res.Seq {
			t.Errorf("partial after the answer: %s", p.Raw)
		}
		seen = append(seen, ids(p, "data")...)
	}
	if strings.Join(seen, ",") != b+","+a {
		t.Errorf("partials found %v, want %s,%s", seen, b, a)
	}

	page := c.call("thread/search", map[string]any{"searchTerm": "NEEDLE", "limit": 1})
	cursor := page.str("nextCursor")
	if got := ids(page, "data"); len(got) != 1 || got[0] != b || cursor == "" {
		t.Fatalf("thread/search limit 1 = %s, want %s and a cursor", page.Raw, b)
	}
	page = c.call("thread/search", map[string]any{"searchTerm": "NEEDLE", "limit": 1, "cursor": cursor})
	if got := ids(page, "data"); len(got) != 1 || got[0] != a || page.get("nextCursor") != nil {
		t.Errorf("thread/search second page = %s, want %s and no cursor", page.Raw, a)
	}
	if m := c.call("thread/search/stream", map[string]any{"searchTerm": "zzz-nowhere"}); len(ids(m, "data")) != 0 {
		t.Errorf("a search that matches nothing = %s", m.Raw)
	}
	c.callErr("thread/search/stream", map[string]any{"searchTerm": "   "}, -32602, "searchTerm")
	c.callErr("thread/search", map[string]any{"searchTerm": "x", "sortKey": "size"}, -32602, "sortKey")
	c.callErr("thread/search", map[string]any{"searchTerm": "x", "cursor": "garbage"}, -32602, "cursor")
	if m := c.call("thread/search/stream/cancel", map[string]any{"requestId": id}); m.Raw == "" {
		t.Error("no answer to a cancel of a finished search")
	}
}

// TestModelProviderDefaultSet: modelProvider/default/set makes a configured
// provider the default of new threads (their turns go to it) and answers
// with a config write; an unknown provider is -32602 naming providerId.
// thread/realtime/list is an empty list with coverage "unsupported" for a
// known thread and the usual error for an unknown one.
func TestModelProviderDefaultSet(t *testing.T) {
	t.Parallel()
	main := startModel(t, scripted.Rule{Match: "hello", Steps: []scripted.Step{{Text: "from the default provider"}}})
	local := startModel(t, scripted.Rule{Match: "hello", Steps: []scripted.Step{{Text: "from the local provider"}}})
	cfg := filepath.Join(t.TempDir(), "config.toml")
	text := fmt.Sprintf("[providers.local]\nbase_url = %q\nwire = \"chat\"\n", local.URL()+"/v1")
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, main, options{args: []string{"--config", cfg}, inProcess: true})
	c.callErr("modelProvider/default/set", map[string]any{"providerId": "nowhere"}, -32602, "providerId")
	c.callErr("modelProvider/default/set", map[string]any{}, -32602, "providerId")
	if m := c.call("modelProvider/default/set", map[string]any{"providerId": "local"}); m.str("status") != "ok" {
		t.Errorf("modelProvider/default/set = %s", m.Raw)
	}
	start := c.call("thread/start", map[string]any{"cwd": t.TempDir()})
	if start.str("modelProvider") != "local" {
		t.Errorf("thread/start after modelProvider/default/set = provider %q, want local", start.str("modelProvider"))
	}
	tid := start.str("thread.id")
	c.runTurn(tid, "hello")
	if n := len(modelRequests(main)); n != 0 {
		t.Errorf("the configured provider got %d requests, want none", n)
	}
	if n := len(modelRequests(local)); n != 1 {
		t.Errorf("the new default provider got %d requests, want 1", n)
	}

	m := c.call("thread/realtime/list", map[string]any{"threadId": tid})
	if m.str("coverage") != "unsupported" || !strings.Contains(m.Raw, `"data":[]`) {
		t.Errorf("thread/realtime/list = %s, want an empty list", m.Raw)
	}
	c.callErr("thread/realtime/list", map[string]any{"threadId": "no-such-thread"}, -32600, "thread not found")
	c.callErr("thread/realtime/list", map[string]any{}, -32602, "threadId")
}

// TestThreadListIncludedThreadIDs: Codex 0.171's thread/list
// includedThreadIds restricts the list to those threads (an empty list
// matches nothing, null none at all); more than 100 ids is -32602.
func TestThreadListIncludedThreadIDs(t *testing.T) {
	t.Parallel()
	c := newClient(t, startModel(t), options{inProcess: true})
	a, _ := c.startThread("never")
	b, _ := c.startThread("never")
	g, _ := c.startThread("never")
	list := func(ids any) string {
		m := c.call("thread/list", map[string]any{"includedThreadIds": ids})
		var got []string
		for i := 0; m.str(fmt.Sprintf("data.%d.id", i)) != ""; i++ {
			got = append(got, m.str(fmt.Sprintf("data.%d.id", i)))
		}
		return strings.Join(got, ",")
	}
	if got := list([]string{a, g, "no-such-thread"}); got != g+","+a {
		t.Errorf("thread/list includedThreadIds [a g x] = %s, want %s,%s", got, g, a)
	}
	if got := list([]string{}); got != "" {
		t.Errorf("thread/list includedThreadIds [] = %s, want nothing", got)
	}
	if got := list(nil); got != g+","+b+","+a {
		t.Errorf("thread/list includedThreadIds null = %s, want every thread", got)
	}
	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprint(i)
	}
	c.callErr("thread/list", map[string]any{"includedThreadIds": many}, -32602, "includedThreadIds")
}
