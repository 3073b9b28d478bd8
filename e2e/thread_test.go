package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// listIDs calls thread/list with params and returns the thread ids and the
// nextCursor (nil when null).
func (c *client) listIDs(params map[string]any) (ids []string, next any) {
	c.t.Helper()
	r := c.call("thread/list", params)
	data, ok := r.get("data").([]any)
	if !ok {
		c.t.Fatalf("thread/list result has no data array: %s", r.Raw)
	}
	for _, th := range data {
		ids = append(ids, fmt.Sprint(jget(th, "id")))
	}
	return ids, r.get("nextCursor")
}

// TestFork forks a thread with one turn (protocol/codex/CORE.md §5 thread/fork).
func TestFork(t *testing.T) {
	t.Parallel()
	model := startModel(t,
		scripted.Rule{Match: "remember", Steps: []scripted.Step{{Text: "Noted: pineapple."}}},
		scripted.Rule{Match: "what was", Steps: []scripted.Step{{Text: "It was pineapple."}}},
	)
	c := newClient(t, model, options{inProcess: true})
	src, _ := c.startThread("never")
	_, done := c.runTurn(src, "remember the word pineapple")
	srcTurn := done.str("turn.id")

	r := c.call("thread/fork", map[string]any{"threadId": src})
	fork := r.str("thread.id")
	if fork == "" || fork == src {
		t.Fatalf("thread/fork thread.id = %q, want a new id (source %q)", fork, src)
	}
	if got := r.str("thread.forkedFromId"); got != src {
		t.Errorf("fork forkedFromId = %q, want %q", got, src)
	}
	started := c.waitFor("thread/started", func(m *message) bool { return m.str("thread.id") == fork })
	if started.Seq < r.Seq {
		t.Errorf("thread/started for the fork (#%d) before the fork response (#%d)", started.Seq, r.Seq)
	}

	rd := c.call("thread/read", map[string]any{"threadId": fork, "includeTurns": true})
	turns, _ := rd.get("thread.turns").([]any)
	if len(turns) != 1 {
		t.Fatalf("thread/read of the fork: %d turns, want the source's 1: %s", len(turns), rd.Raw)
	}
	items, _ := jget(turns[0], "items").([]any)
	var texts []string
	for _, it := range items {
		switch jget(it, "type") {
		case "userMessage":
			texts = append(texts, fmt.Sprint(jget(it, "content.0.text")))
		case "agentMessage":
			texts = append(texts, fmt.Sprint(jget(it, "text")))
		}
	}
	if want := []string{"remember the word pineapple", "Noted: pineapple."}; !slices.Equal(texts, want) {
		t.Errorf("fork turn items = %q, want %q", texts, want)
	}
	if got := jget(turns[0], "status"); got != "completed" {
		t.Errorf("fork turn status = %v, want completed", got)
	}

	// The source is unchanged by work on the fork, and the model sees the
	// source's history when the fork runs a turn.
	_, fdone := c.runTurn(fork, "what was the word")
	if got := fdone.str("turn.status"); got != "completed" {
		t.Errorf("turn on the fork: status %q, want completed", got)
	}
	reqs := modelRequests(model)
	last := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(last, "remember the word pineapple") || !strings.Contains(last, "Noted: pineapple.") {
		t.Errorf("model request for the fork's turn lacks the source history:\n%s", last)
	}
	srd := c.call("thread/read", map[string]any{"threadId": src, "includeTurns": true})
	if sturns, _ := srd.get("thread.turns").([]any); len(sturns) != 1 || jget(sturns[0], "id") != srcTurn {
		t.Errorf("source thread turns after a fork turn = %v, want only %s", srd.get("thread.turns"), srcTurn)
	}
}

// TestThreadListPaging pages through five threads two at a time.
func TestThreadListPaging(t *testing.T) {
	t.Parallel()
	model := startModel(t)
	c := newClient(t, model, options{inProcess: true})
	var want []string
	for i := range 5 {
		id, _ := c.startThread("never")
		c.runTurn(id, fmt.Sprintf("thread number %d", i))
		want = append(want, id)
	}
	var got []string
	var cursor any
	pages := 0
	for {
		params := map[string]any{"limit": 2}
		if cursor != nil {
			params["cursor"] = cursor
		}
		ids, next := c.listIDs(params)
		pages++
		if len(ids) > 2 {
			t.Errorf("page %d has %d threads, want at most 2", pages, len(ids))
		}
		got = append(got, ids...)
		if next == nil || pages > 5 {
			break
		}
		cursor = next
	}
	if pages != 3 {
		t.Errorf("thread/list limit 2 over 5 threads: %d pages, want 3", pages)
	}
	sorted := slices.Clone(got)
	slices.Sort(sorted)
	if len(slices.Compact(sorted)) != len(got) {
		t.Errorf("thread/list pages repeat threads: %q", got)
	}
	slices.Sort(want)
	if !slices.Equal(sorted, want) {
		t.Errorf("thread/list pages = %q, want %q", sorted, want)
	}
	// Newest first.
	all, _ := c.listIDs(map[string]any{})
	if len(all) != 5 || !slices.Equal(all, got) {
		t.Errorf("unpaged list %q differs from the pages %q", all, got)
	}
}

// TestThreadListFilters covers thread/name/set, searchTerm, cwd and the
// archive round trip.
func TestThreadListFilters(t *testing.T) {
	t.Parallel()
	model := startModel(t)
	c := newClient(t, model, options{inProcess: true})
	named, cwdA := c.startThread("never")
	c.runTurn(named, "first thread message")
	byMessage, _ := c.startThread("never")
	c.runTurn(byMessage, "tell me about the pangolin")
	other, _ := c.startThread("never")
	c.runTurn(other, "something unrelated")

	r := c.call("thread/name/set", map[string]any{"threadId": named, "name": "Zebra project"})
	if obj, ok := r.params.(map[string]any); !ok || len(obj) != 0 {
		t.Errorf("thread/name/set result = %s, want {}", r.Result)
	}
	upd := c.waitAfter(r, "thread/name/updated", nil)
	if upd.str("threadId") != named || upd.str("threadName") != "Zebra project" {
		t.Errorf("thread/name/updated = %s, want threadId %s threadName \"Zebra project\"", upd.Raw, named)
	}
	rd := c.call("thread/read", map[string]any{"threadId": named})
	if got := rd.str("thread.name"); got != "Zebra project" {
		t.Errorf("thread/read name = %q, want \"Zebra project\"", got)
	}

	for _, tc := range []struct {
		params map[string]any
		want   []string
	}{
		{map[string]any{"searchTerm": "zebra"}, []string{named}},
		{map[string]any{"searchTerm": "pangolin"}, []string{byMessage}},
		{map[string]any{"searchTerm": "no-thread-has-this"}, nil},
		{map[string]any{"cwd": cwdA}, []string{named}},
	} {
		got, _ := c.listIDs(tc.params)
		if !slices.Equal(got, tc.want) {
			t.Errorf("thread/list %v = %q, want %q", tc.params, got, tc.want)
		}
	}

	// Archive.
	ar := c.call("thread/archive", map[string]any{"threadId": other})
	if obj, ok := ar.params.(map[string]any); !ok || len(obj) != 0 {
		t.Errorf("thread/archive result = %s, want {}", ar.Result)
	}
	c.waitAfter(ar, "thread/archived", func(m *message) bool { return m.str("threadId") == other })
	if got := c.find("thread/status/changed", statusIs(other, "notLoaded")); len(got) != 1 || got[0].Seq > ar.Seq {
		t.Errorf("archiving a loaded thread: thread/status/changed notLoaded = %v, want one before the response #%d (protocol/codex/CORE.md §5)", got, ar.Seq)
	}
	if got, _ := c.listIDs(map[string]any{}); slices.Contains(got, other) || len(got) != 2 {
		t.Errorf("thread/list after archive = %q, want the 2 unarchived threads", got)
	}
	if got, _ := c.listIDs(map[string]any{"archived": true}); !slices.Equal(got, []string{other}) {
		t.Errorf("thread/list archived:true = %q, want [%s]", got, other)
	}

	ua := c.call("thread/unarchive", map[string]any{"threadId": other})
	if got := ua.str("thread.id"); got != other {
		t.Errorf("thread/unarchive thread.id = %q, want %q", got, other)
	}
	un := c.waitAfter(ua, "thread/unarchived", func(m *message) bool { return m.str("threadId") == other })
	if un.Seq < ua.Seq {
		t.Errorf("thread/unarchived before the unarchive response")
	}
	if got, _ := c.listIDs(map[string]any{}); !slices.Contains(got, other) || len(got) != 3 {
		t.Errorf("thread/list after unarchive = %q, want all 3 threads", got)
	}
	if got, _ := c.listIDs(map[string]any{"archived": true}); len(got) != 0 {
		t.Errorf("thread/list archived:true after unarchive = %q, want none", got)
	}
}

// TestModelList: model/list includes the configured model.
func TestModelList(t *testing.T) {
	t.Parallel()
	model := startModel(t)
	c := newClient(t, model, options{inProcess: true})
	r := c.call("model/list", map[string]any{})
	data, _ := r.get("data").([]any)
	found := false
	for _, m := range data {
		if jget(m, "model") == "scripted-model" || jget(m, "id") == "scripted-model" {
			found = true
		}
	}
	if !found {
		t.Errorf("model/list = %s, want an entry for scripted-model", r.Raw)
	}
}

// TestThreadStartReportsSandboxSettings: the sandbox a thread/start (and
// resume) result reports is the one its commands get: the user's
// [sandbox_settings] network and writable roots, not fixed defaults.
func TestThreadStartReportsSandboxSettings(t *testing.T) {
	t.Parallel()
	extra := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "config.toml")
	text := fmt.Sprintf("sandbox = \"workspace-write\"\n[sandbox_settings]\nnetwork = true\nwritable_roots = [%q]\n", extra)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, startModel(t), options{args: []string{"--config", cfg}, inProcess: true})
	start := c.call("thread/start", map[string]any{"cwd": t.TempDir()})
	if got := start.get("sandbox"); fmt.Sprint(got) != fmt.Sprint(map[string]any{"type": "workspaceWrite", "networkAccess": true, "writableRoots": []any{extra}}) {
		t.Errorf("thread/start sandbox = %v, want workspaceWrite with network and %s", got, extra)
	}
	resume := c.call("thread/resume", map[string]any{"threadId": start.str("thread.id")})
	if fmt.Sprint(resume.get("sandbox")) != fmt.Sprint(start.get("sandbox")) {
		t.Errorf("thread/resume sandbox = %v, thread/start said %v", resume.get("sandbox"), start.get("sandbox"))
	}
	ro := c.call("thread/start", map[string]any{"cwd": t.TempDir(), "sandbox": "read-only"})
	if got := ro.get("sandbox"); fmt.Sprint(got) != fmt.Sprint(map[string]any{"type": "readOnly", "networkAccess": true}) {
		t.Errorf("read-only thread/start sandbox = %v, want readOnly with network", got)
	}
}

// TestThreadModelProvider: thread/start's modelProvider picks the provider
// the thread's turns go to, for a model the catalog does not list (an
// editor's model picker over several servers); resume keeps it.
func TestThreadModelProvider(t *testing.T) {
	t.Parallel()
	main := startModel(t, scripted.Rule{Match: "hello", Steps: []scripted.Step{{Text: "from the default provider"}}})
	local := startModel(t, scripted.Rule{Match: "hello", Steps: []scripted.Step{{Text: "from the local provider"}}})
	cfg := filepath.Join(t.TempDir(), "config.toml")
	text := fmt.Sprintf("[providers.local]\nbase_url = %q\nwire = \"chat\"\n", local.URL()+"/v1")
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, main, options{args: []string{"--config", cfg}, inProcess: true})
	start := c.call("thread/start", map[string]any{"cwd": t.TempDir(), "model": "qwen-local", "modelProvider": "local"})
	if start.str("modelProvider") != "local" || start.str("model") != "qwen-local" {
		t.Errorf("thread/start = model %q provider %q, want qwen-local on local", start.str("model"), start.str("modelProvider"))
	}
	threadID := start.str("thread.id")
	c.runTurn(threadID, "hello")
	if n := len(modelRequests(main)); n != 0 {
		t.Errorf("the default provider got %d requests", n)
	}
	reqs := modelRequests(local)
	if len(reqs) != 1 || reqs[0].Wire != scripted.WireChat || !strings.Contains(string(reqs[0].Body), `"qwen-local"`) {
		t.Fatalf("the local provider got %d requests (want 1, chat, for qwen-local)", len(reqs))
	}
	resume := c.call("thread/resume", map[string]any{"threadId": threadID})
	if resume.str("modelProvider") != "local" {
		t.Errorf("thread/resume modelProvider = %q, want local", resume.str("modelProvider"))
	}
	c.callErr("thread/start", map[string]any{"cwd": t.TempDir(), "model": "x", "modelProvider": "nowhere"}, -32602, "nowhere")
}

// TestSandboxedTurnToldAboutTmp: a sandboxed thread's instructions say
// that its /tmp is not the user's, so the model does not tell the user to
// open a file there (issue 28); a thread without the sandbox is not told.
func TestSandboxedTurnToldAboutTmp(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "where-tmp", Steps: []scripted.Step{{Text: "ok"}}})
	c := newClient(t, model, options{inProcess: true})
	for _, tc := range []struct {
		sandbox string
		told    bool
	}{{"workspace-write", true}, {"read-only", true}, {"danger-full-access", false}} {
		id := c.call("thread/start", map[string]any{"cwd": t.TempDir(), "sandbox": tc.sandbox}).str("thread.id")
		_, turn := c.startTurn(id, "where-tmp "+tc.sandbox)
		c.turnDone(turn)
		var body string
		for _, r := range modelRequests(model) {
			if strings.Contains(r.LastUserText, "where-tmp "+tc.sandbox) {
				body = string(r.Body)
			}
		}
		if body == "" {
			t.Fatalf("%s: no model request", tc.sandbox)
		}
		if told := strings.Contains(body, "not in the user's /tmp"); told != tc.told {
			t.Errorf("%s: instructions mention the private /tmp: %v, want %v", tc.sandbox, told, tc.told)
		}
	}
}

// TestAgentsFromTheRepositoryRoot: a thread started in a subdirectory of
// a repository gets the AGENTS.md files from the repository's root down
// to its workspace, the root's first, as Codex's threads do, and lists
// them as its instruction sources.
func TestAgentsFromTheRepositoryRoot(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	sub := filepath.Join(repo, "services", "api")
	id := filepath.Base(repo)
	for p, text := range map[string]string{
		".git/HEAD":                       "ref: refs/heads/main\n",
		"AGENTS.md":                       "ROOT-RULE-" + id + "\n",
		"services/api/AGENTS.md":          "API-RULE-" + id + "\n",
		"services/other/AGENTS.md":        "SIBLING-RULE-" + id + "\n",
		"services/api/handlers/AGENTS.md": "BELOW-RULE-" + id + "\n",
	} {
		full := filepath.Join(repo, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	model := startModel(t, scripted.Rule{Match: "hello", Steps: []scripted.Step{{Text: "hi"}}})
	c := newClient(t, model, options{inProcess: true})
	start := c.call("thread/start", map[string]any{"cwd": sub})
	if a, b := start.str("instructionSources.0"), start.str("instructionSources.1"); a != filepath.Join(repo, "AGENTS.md") || b != filepath.Join(sub, "AGENTS.md") {
		t.Errorf("instructionSources = %q, %q; want the root's AGENTS.md, then the workspace's", a, b)
	}
	_, turnID := c.startTurn(start.str("thread.id"), "hello")
	c.turnDone(turnID)
	reqs := modelRequests(model)
	if len(reqs) != 1 {
		t.Fatalf("%d model requests, want 1", len(reqs))
	}
	body := string(reqs[0].Body)
	root, api := strings.Index(body, "ROOT-RULE-"+id), strings.Index(body, "API-RULE-"+id)
	if root < 0 || api < 0 || root > api {
		t.Errorf("the request should carry the root's rule before the workspace's (at %d and %d)", root, api)
	}
	for _, other := range []string{"SIBLING-RULE-", "BELOW-RULE-"} {
		if strings.Contains(body, other+id) {
			t.Errorf("the request carries %s, which is not on the way from the root to the workspace", other)
		}
	}
}
