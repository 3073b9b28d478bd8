package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// The shapes of Codex's exec event stream, as @openai/codex-sdk declares
// them (dist/index.d.ts: ThreadEvent, ThreadItem): for each type, its
// required fields and its optional ones. A line with a field outside these,
// a missing required field or an unknown type fails.
var codexEventFields = map[string][2][]string{
	"thread.started": {{"type", "thread_id"}, nil},
	"turn.started":   {{"type"}, nil},
	"turn.completed": {{"type", "usage"}, nil},
	"turn.failed":    {{"type", "error"}, nil},
	"item.started":   {{"type", "item"}, nil},
	"item.updated":   {{"type", "item"}, nil},
	"item.completed": {{"type", "item"}, nil},
	"error":          {{"type", "message"}, nil},
}

var codexItemFields = map[string][2][]string{
	"agent_message":     {{"id", "type", "text"}, nil},
	"reasoning":         {{"id", "type", "text"}, nil},
	"command_execution": {{"id", "type", "command", "aggregated_output", "status"}, {"exit_code"}},
	"file_change":       {{"id", "type", "changes", "status"}, nil},
	"mcp_tool_call":     {{"id", "type", "server", "tool", "arguments", "status"}, {"result", "error"}},
	"web_search":        {{"id", "type", "query"}, nil},
	"todo_list":         {{"id", "type", "items"}, nil},
	"error":             {{"id", "type", "message"}, nil},
}

// checkFields reports what of m does not fit the declared fields.
func checkFields(what string, m map[string]any, decl [2][]string) error {
	for _, k := range decl[0] {
		if _, ok := m[k]; !ok {
			return fmt.Errorf("%s: missing %q", what, k)
		}
	}
	for k := range m {
		if !contains(decl[0], k) && !contains(decl[1], k) {
			return fmt.Errorf("%s: unexpected field %q", what, k)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// codexEvent is one checked line of the stream.
type codexEvent struct {
	Type     string
	Raw      map[string]any
	Item     map[string]any
	ItemType string
}

// parseCodexStream checks every stdout line against the SDK's shapes,
// field types included, and returns the events.
func parseCodexStream(t *testing.T, stdout string) []codexEvent {
	t.Helper()
	var evs []codexEvent
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout line is not JSON: %q", sc.Text())
		}
		typ, _ := m["type"].(string)
		decl, ok := codexEventFields[typ]
		if !ok {
			t.Fatalf("unknown event type %q: %s", typ, sc.Text())
		}
		if err := checkFields(typ, m, decl); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		ev := codexEvent{Type: typ, Raw: m}
		switch typ {
		case "thread.started":
			if s, _ := m["thread_id"].(string); s == "" {
				t.Fatalf("thread_id: %s", sc.Text())
			}
		case "turn.completed":
			u, _ := m["usage"].(map[string]any)
			if err := checkFields("usage", u, [2][]string{{"input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens", "reasoning_output_tokens"}, nil}); err != nil {
				t.Fatalf("%v: %s", err, sc.Text())
			}
			for k, v := range u {
				if _, ok := v.(float64); !ok {
					t.Fatalf("usage.%s is not a number: %s", k, sc.Text())
				}
			}
		case "turn.failed":
			e, _ := m["error"].(map[string]any)
			if err := checkFields("error", e, [2][]string{{"message"}, nil}); err != nil {
				t.Fatalf("%v: %s", err, sc.Text())
			}
		case "error":
			if _, ok := m["message"].(string); !ok {
				t.Fatalf("error.message: %s", sc.Text())
			}
		case "item.started", "item.updated", "item.completed":
			it, _ := m["item"].(map[string]any)
			ityp, _ := it["type"].(string)
			idecl, ok := codexItemFields[ityp]
			if !ok {
				t.Fatalf("unknown item type %q: %s", ityp, sc.Text())
			}
			if err := checkFields(ityp, it, idecl); err != nil {
				t.Fatalf("%v: %s", err, sc.Text())
			}
			if id, _ := it["id"].(string); !strings.HasPrefix(id, "item_") {
				t.Fatalf("item id %q: %s", it["id"], sc.Text())
			}
			checkItemTypes(t, typ, ityp, it, sc.Text())
			ev.Item, ev.ItemType = it, ityp
		}
		evs = append(evs, ev)
	}
	if len(evs) == 0 || evs[0].Type != "thread.started" {
		t.Fatalf("the stream does not start with thread.started:\n%s", stdout)
	}
	return evs
}

// checkItemTypes checks the value types and enums of one item.
func checkItemTypes(t *testing.T, ev, typ string, it map[string]any, line string) {
	t.Helper()
	isStr := func(k string) bool { _, ok := it[k].(string); return ok }
	oneOf := func(k string, vals ...string) bool { s, _ := it[k].(string); return contains(vals, s) }
	ok := true
	switch typ {
	case "agent_message", "reasoning":
		ok = isStr("text")
	case "command_execution":
		ok = isStr("command") && isStr("aggregated_output") && oneOf("status", "in_progress", "completed", "failed")
		if _, has := it["exit_code"]; has {
			_, num := it["exit_code"].(float64)
			ok = ok && num
		}
		if ev == "item.started" {
			ok = ok && it["status"] == "in_progress" && it["exit_code"] == nil
		} else {
			ok = ok && it["status"] != "in_progress"
		}
	case "file_change":
		ok = oneOf("status", "completed", "failed")
		chs, isList := it["changes"].([]any)
		ok = ok && isList
		for _, c := range chs {
			cm, _ := c.(map[string]any)
			kind, _ := cm["kind"].(string)
			_, path := cm["path"].(string)
			ok = ok && path && len(cm) == 2 && contains([]string{"add", "delete", "update"}, kind)
		}
	case "mcp_tool_call":
		ok = isStr("server") && isStr("tool") && oneOf("status", "in_progress", "completed", "failed")
	case "todo_list":
		items, isList := it["items"].([]any)
		ok = isList
		for _, x := range items {
			xm, _ := x.(map[string]any)
			_, text := xm["text"].(string)
			_, done := xm["completed"].(bool)
			ok = ok && text && done && len(xm) == 2
		}
	case "error":
		ok = isStr("message")
	}
	if !ok {
		t.Fatalf("%s %s has a field of the wrong type: %s", ev, typ, line)
	}
}

func eventTypes(evs []codexEvent) []string {
	var out []string
	for _, e := range evs {
		s := e.Type
		if e.ItemType != "" {
			s += " " + e.ItemType
		}
		out = append(out, s)
	}
	return out
}

// TestExecCodexStream runs `apserver exec --json` as the Codex SDK does
// (prompt on stdin, codex's flags, --config for the base URL, the key in
// CODEX_API_KEY) and checks the event stream: every line has the SDK's
// shape, commands start and complete, the plan is a todo_list that is
// started, updated and completed, the file change and the answer arrive,
// and the turn completes with its usage.
func TestExecCodexStream(t *testing.T) {
	t.Parallel()
	plan := func(status ...string) scripted.ToolCall {
		var steps []string
		for i, s := range status {
			steps = append(steps, fmt.Sprintf(`{"step":"step %d","status":%q}`, i+1, s))
		}
		return scripted.ToolCall{Name: "update_plan", Arguments: `{"plan":[` + strings.Join(steps, ",") + `]}`}
	}
	model := startModel(t, scripted.Rule{Match: "C-stream", Steps: []scripted.Step{
		// One call per response: the scripted model picks the next step by
		// the number of tool outputs so far.
		{Reasoning: []string{"Plan, run, write."}, ToolCalls: []scripted.ToolCall{plan("in_progress", "pending")}},
		{ToolCalls: []scripted.ToolCall{{Command: "echo streamed && echo ok"}}},
		{ToolCalls: []scripted.ToolCall{{Name: "apply_patch", Input: "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"}}},
		{ToolCalls: []scripted.ToolCall{plan("completed", "completed")}},
		{Text: "All done."},
	}})
	r := runCodexExec(t, model, "C-stream: do it", "exec", "--experimental-json", "--sandbox", "workspace-write", "--skip-git-repo-check",
		"--config", `model_reasoning_effort="low"`, "--config", `web_search="disabled"`)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	evs := parseCodexStream(t, r.stdout)
	got := eventTypes(evs)
	want := []string{
		"thread.started", "turn.started",
		"item.completed reasoning",
		"item.started todo_list",
		"item.started command_execution", "item.completed command_execution",
		"item.completed file_change",
		"item.updated todo_list",
		"item.completed agent_message",
		"item.completed todo_list",
		"turn.completed",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events:\n  %s\nwant:\n  %s\nstdout:\n%s\nstderr:\n%s", strings.Join(got, "\n  "), strings.Join(want, "\n  "), r.stdout, r.stderr)
	}
	byType := map[string]map[string]any{}
	for _, e := range evs {
		if e.Type == "item.completed" {
			byType[e.ItemType] = e.Item
		}
	}
	if c := byType["command_execution"]; c["status"] != "completed" || c["exit_code"] != 0.0 || !strings.Contains(c["aggregated_output"].(string), "streamed") {
		t.Errorf("command_execution: %v", c)
	}
	if f := byType["file_change"]; f["status"] != "completed" || !reflect.DeepEqual(f["changes"], []any{map[string]any{"path": filepath.Join(r.cwd, "hello.txt"), "kind": "add"}}) {
		t.Errorf("file_change: %v", f)
	}
	if !strings.Contains(r.stdout, "echo streamed && echo ok") {
		t.Errorf("the command is not printed as codex does, with & unescaped:\n%s", r.stdout)
	}
	if a := byType["agent_message"]; a["text"] != "All done." {
		t.Errorf("agent_message: %v", a)
	}
	if td := byType["todo_list"]; !reflect.DeepEqual(td["items"], []any{
		map[string]any{"text": "step 1", "completed": true}, map[string]any{"text": "step 2", "completed": true},
	}) {
		t.Errorf("todo_list: %v", td)
	}
	if b, err := os.ReadFile(filepath.Join(r.cwd, "hello.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("hello.txt = %q, %v", b, err)
	}
	u := evs[len(evs)-1].Raw["usage"].(map[string]any)
	if u["input_tokens"].(float64) <= 0 || u["output_tokens"].(float64) <= 0 {
		t.Errorf("usage: %v", u)
	}
	reqs := modelRequests(model)
	if len(reqs) != 5 {
		t.Fatalf("%d model requests, want 5", len(reqs))
	}
	if a := reqs[0].Header.Get("Authorization"); a != "Bearer codex-key" {
		t.Errorf("Authorization = %q, want the key from CODEX_API_KEY", a)
	}
	if !strings.Contains(string(reqs[0].Body), `"effort":"low"`) {
		t.Errorf("--config model_reasoning_effort did not reach the model: %s", reqs[0].Body)
	}
	if !strings.Contains(r.stderr, "ignored (no apserver equivalent): --config web_search") {
		t.Errorf("an ignored override is not said on stderr:\n%s", r.stderr)
	}
}

// TestExecCodexOutputSchema checks --output-schema: the schema reaches the
// model as a JSON-schema response format and the final agent message is
// the JSON, on stdout and in -o's file.
func TestExecCodexOutputSchema(t *testing.T) {
	t.Parallel()
	answer := `{"answer":"42","ok":true}`
	model := startModel(t, scripted.Rule{Match: "C-schema", Steps: []scripted.Step{{Text: answer}}})
	schema := `{"type":"object","properties":{"answer":{"type":"string"},"ok":{"type":"boolean"}},"required":["answer","ok"],"additionalProperties":false}`
	dir := t.TempDir()
	file := filepath.Join(dir, "schema.json")
	if err := os.WriteFile(file, []byte(schema), 0o600); err != nil {
		t.Fatal(err)
	}
	last := filepath.Join(dir, "last.txt")
	r := runCodexExec(t, model, "C-schema: answer", "exec", "--json", "--output-schema", file, "--output-last-message", last)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	evs := parseCodexStream(t, r.stdout)
	var final string
	for _, e := range evs {
		if e.ItemType == "agent_message" {
			final = e.Item["text"].(string)
		}
	}
	if final != answer {
		t.Errorf("final message %q, want %q", final, answer)
	}
	if b, _ := os.ReadFile(last); strings.TrimSpace(string(b)) != answer {
		t.Errorf("--output-last-message wrote %q", b)
	}
	reqs := modelRequests(model)
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	var body struct {
		Text struct {
			Format struct {
				Type   string          `json:"type"`
				Name   string          `json:"name"`
				Strict bool            `json:"strict"`
				Schema json.RawMessage `json:"schema"`
			} `json:"format"`
		} `json:"text"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	f := body.Text.Format
	var gotSchema, wantSchema any
	_ = json.Unmarshal(f.Schema, &gotSchema)
	_ = json.Unmarshal([]byte(schema), &wantSchema)
	if f.Type != "json_schema" || !f.Strict || !reflect.DeepEqual(gotSchema, wantSchema) {
		t.Errorf("the model was not asked for the schema: text.format = %+v", f)
	}
}

// TestExecCodexResume runs a turn, then `exec resume ID` with the prompt on
// stdin: the stream names the same thread and the model sees the earlier
// conversation.
func TestExecCodexResume(t *testing.T) {
	t.Parallel()
	model := startModel(t,
		scripted.Rule{Match: "C-first", Steps: []scripted.Step{{Text: "Remembered: the word is plum."}}},
		scripted.Rule{Match: "C-again", Steps: []scripted.Step{{Text: "It was plum."}}},
	)
	env := newCodexEnv(t)
	r1 := env.run(t, model, "C-first: remember plum", "exec", "--json")
	if r1.code != 0 {
		t.Fatalf("exit %d\n%s", r1.code, r1.stderr)
	}
	id := parseCodexStream(t, r1.stdout)[0].Raw["thread_id"].(string)
	r2 := env.run(t, model, "C-again: what was it?", "exec", "--json", "resume", id)
	if r2.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r2.code, r2.stderr)
	}
	evs := parseCodexStream(t, r2.stdout)
	if evs[0].Raw["thread_id"] != id {
		t.Errorf("resumed stream starts with thread %v, want %s", evs[0].Raw["thread_id"], id)
	}
	if got := eventTypes(evs); !reflect.DeepEqual(got, []string{"thread.started", "turn.started", "item.completed agent_message", "turn.completed"}) {
		t.Errorf("resumed events: %v", got)
	}
	reqs := modelRequests(model)
	last := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(last, "C-first: remember plum") || !strings.Contains(last, "Remembered: the word is plum.") {
		t.Errorf("the resumed turn's request lacks the earlier conversation: %s", last)
	}
	r3 := env.run(t, model, "x", "exec", "--json", "resume", "no-such-thread")
	if r3.code != 1 || !strings.Contains(r3.stderr, "no-such-thread") {
		t.Errorf("resume of an unknown thread: exit %d\n%s", r3.code, r3.stderr)
	}
}

// TestExecCodexFailures checks a failed turn (turn.failed after error, a
// non-zero exit) and bad flags (exit 2 with a clear message).
func TestExecCodexFailures(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "C-fail", Steps: []scripted.Step{{HTTPError: 400, ErrorMessage: "bad request from the model"}}})
	r := runCodexExec(t, model, "C-fail: break", "exec", "--json")
	if r.code != 6 {
		t.Fatalf("exit %d, want 6\n%s", r.code, r.stderr)
	}
	evs := parseCodexStream(t, r.stdout)
	got := eventTypes(evs)
	if got[len(got)-1] != "turn.failed" || !contains(got, "error") {
		t.Fatalf("events %v, want an error and turn.failed last", got)
	}
	if msg := evs[len(evs)-1].Raw["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "bad request from the model") {
		t.Errorf("turn.failed message %q", msg)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"exec", "--json", "--sandbox", "bogus"}, "unknown sandbox mode"},
		{[]string{"exec", "--json", "--output-schema", "/nonexistent/schema.json"}, "--output-schema"},
		{[]string{"exec", "--json", "--cd", "/nonexistent/dir"}, "--cd"},
		{[]string{"exec", "--json", "--config", `approval_policy="sometimes"`}, "approval_policy"},
		{[]string{"exec", "--json", "--json-apserver"}, "exclusive"},
		{[]string{"exec", "--json", "resume"}, "thread id"},
	} {
		r := runCodexExec(t, model, "C-fail", tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s", tc.args, r.code, r.stdout, r.stderr)
		}
	}
}

// codexEnv is a home and data dir shared by the exec runs of one test, as
// a user's machine is.
type codexEnv struct{ home, cwd string }

func newCodexEnv(t *testing.T) codexEnv {
	return codexEnv{home: t.TempDir(), cwd: t.TempDir()}
}

// run spawns apserver as the Codex SDK does: the prompt on stdin, the key
// in CODEX_API_KEY, the base URL as a --config override, and --cd.
func (e codexEnv) run(t *testing.T, model *scripted.Server, prompt string, args ...string) execResult {
	t.Helper()
	full := append([]string{}, args[:1]...)
	full = append(full, "--config", fmt.Sprintf("openai_base_url=%q", model.URL()), "--model", "scripted-model", "--cd", e.cwd)
	full = append(full, args[1:]...)
	cmd := exec.Command(binPath, full...)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"HOME=" + e.home, "CODEX_API_KEY=codex-key", "PATH=" + os.Getenv("PATH"), "CODEX_INTERNAL_ORIGINATOR_OVERRIDE=codex_sdk_ts"}
	cmd.Stdin = strings.NewReader(prompt)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := execResult{stdout: out.String(), stderr: errb.String(), cwd: e.cwd}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("apserver exec: %v", err)
	}
	return r
}

func runCodexExec(t *testing.T, model *scripted.Server, prompt string, args ...string) execResult {
	t.Helper()
	return newCodexEnv(t).run(t, model, prompt, args...)
}

// TestExecCodexReadTools checks how apserver's own read tools, which codex
// exec has no item for, appear: as mcp_tool_call items of server "apserver",
// completed with the text the model got, or failed with the error.
func TestExecCodexReadTools(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "C-read", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Name: "read_file", Arguments: `{"path":"notes.txt"}`}}},
		{ToolCalls: []scripted.ToolCall{{Name: "read_file", Arguments: `{"path":"missing.txt"}`}}},
		{Text: "Read them."},
	}})
	env := newCodexEnv(t)
	if err := os.WriteFile(filepath.Join(env.cwd, "notes.txt"), []byte("the notes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := env.run(t, model, "C-read: look", "exec", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	evs := parseCodexStream(t, r.stdout)
	want := []string{"thread.started", "turn.started",
		"item.started mcp_tool_call", "item.completed mcp_tool_call",
		"item.started mcp_tool_call", "item.completed mcp_tool_call",
		"item.completed agent_message", "turn.completed"}
	if got := eventTypes(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v\nwant %v\n%s", got, want, r.stdout)
	}
	ok, failed := evs[3].Item, evs[5].Item
	if ok["server"] != "apserver" || ok["tool"] != "read_file" || ok["status"] != "completed" || ok["id"] != evs[2].Item["id"] {
		t.Errorf("read_file: %v", ok)
	}
	if args, _ := ok["arguments"].(map[string]any); args["path"] != "notes.txt" {
		t.Errorf("arguments: %v", ok["arguments"])
	}
	content, _ := ok["result"].(map[string]any)["content"].([]any)
	if len(content) != 1 || !strings.Contains(content[0].(map[string]any)["text"].(string), "the notes") {
		t.Errorf("result: %v", ok["result"])
	}
	if failed["status"] != "failed" || failed["result"] != nil || !strings.Contains(fmt.Sprint(failed["error"]), "missing.txt") {
		t.Errorf("failed read_file: %v", failed)
	}
}
