package scripted

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// ---- helpers ----

type sseEvent struct {
	Event string
	Data  string
}

func (e sseEvent) obj(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(e.Data), &m); err != nil {
		t.Fatalf("event %q: bad JSON %q: %v", e.Event, e.Data, err)
	}
	return m
}

// readSSE parses a whole SSE body.
func readSSE(t testing.TB, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Data != "" || cur.Event != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading SSE: %v", err)
	}
	return out
}

func start(t testing.TB, sc Script) *Server {
	t.Helper()
	s, err := Start(sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func post(t testing.TB, ctx context.Context, url string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func postSSE(t testing.TB, url string, body any) []sseEvent {
	t.Helper()
	resp := post(t, context.Background(), url, body)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	return readSSE(t, resp.Body)
}

func userMsg(text string) map[string]any {
	return map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}}
}

func fnCall(id string) map[string]any {
	return map[string]any{"type": "function_call", "call_id": id, "name": "exec_command", "arguments": "{}"}
}

func fnOut(id string) map[string]any {
	return map[string]any{"type": "function_call_output", "call_id": id, "output": "ok"}
}

var responsesTools = []any{
	map[string]any{"type": "function", "name": "read_file", "parameters": map[string]any{}},
	map[string]any{"type": "function", "name": "exec_command", "parameters": map[string]any{}},
}

func responsesBody(input ...any) map[string]any {
	return map[string]any{"model": "m1", "stream": true, "input": input, "tools": responsesTools}
}

// responsesText collects the streamed text, the reasoning and the calls of
// a Responses stream, and checks the sequence numbers.
type responsesResult struct {
	types     []string
	text      string
	reasoning []string
	calls     []map[string]any // output_item.done function_call items
	completed map[string]any   // the response in response.completed
}

func parseResponses(t testing.TB, evs []sseEvent) responsesResult {
	t.Helper()
	var r responsesResult
	var text strings.Builder
	args := map[string]string{}
	for i, e := range evs {
		m := e.obj(t)
		if m["type"] != e.Event {
			t.Fatalf("event %d: type %v under event: %s", i, m["type"], e.Event)
		}
		if seq, _ := m["sequence_number"].(float64); int(seq) != i {
			t.Fatalf("event %d (%s): sequence_number %v", i, e.Event, m["sequence_number"])
		}
		r.types = append(r.types, e.Event)
		switch e.Event {
		case "response.output_text.delta":
			text.WriteString(m["delta"].(string))
		case "response.reasoning_summary_part.added":
			r.reasoning = append(r.reasoning, "")
		case "response.reasoning_summary_text.delta":
			r.reasoning[int(m["summary_index"].(float64))] += m["delta"].(string)
		case "response.function_call_arguments.delta":
			args[m["item_id"].(string)] += m["delta"].(string)
		case "response.function_call_arguments.done":
			if got := args[m["item_id"].(string)]; got != m["arguments"] {
				t.Fatalf("argument deltas %q, done %q", got, m["arguments"])
			}
		case "response.output_item.done":
			item := m["item"].(map[string]any)
			if item["type"] == "function_call" {
				r.calls = append(r.calls, item)
			}
		case "response.completed":
			r.completed = m["response"].(map[string]any)
		}
	}
	r.text = text.String()
	return r
}

func waitIdle(t testing.TB, s *Server) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.inflight.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("a handler is still running after the client went away")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ---- Responses wire ----

func TestResponsesStream(t *testing.T) {
	s := start(t, Script{Default: []Step{{
		Text:      "Hello there, world.",
		Reasoning: []string{"First think.", "Then answer."},
		ToolCalls: []ToolCall{{Command: "ls -la"}, {Name: "read_file", Arguments: `{"path":"a.go"}`, CallID: "c-2"}},
	}}})
	evs := postSSE(t, s.URL()+"/responses", responsesBody(userMsg("hi")))
	r := parseResponses(t, evs)

	want := []string{
		"response.created", "response.in_progress",
		"response.output_item.added",
		"response.reasoning_summary_part.added",
		"response.reasoning_summary_text.delta", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done",
		"response.reasoning_summary_part.added",
		"response.reasoning_summary_text.delta", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done",
		"response.output_item.done",
		"response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.completed",
	}
	if !reflect.DeepEqual(r.types, want) {
		t.Fatalf("events:\n got %v\nwant %v", r.types, want)
	}
	if r.text != "Hello there, world." {
		t.Errorf("text %q", r.text)
	}
	if !reflect.DeepEqual(r.reasoning, []string{"First think.", "Then answer."}) {
		t.Errorf("reasoning %q", r.reasoning)
	}
	if len(r.calls) != 2 {
		t.Fatalf("calls %v", r.calls)
	}
	if c := r.calls[0]; c["name"] != "exec_command" || c["arguments"] != `{"cmd":"ls -la"}` ||
		!strings.HasPrefix(c["call_id"].(string), "call_") || !strings.HasPrefix(c["id"].(string), "fc_") {
		t.Errorf("call 0: %v", c)
	}
	if c := r.calls[1]; c["name"] != "read_file" || c["arguments"] != `{"path":"a.go"}` || c["call_id"] != "c-2" {
		t.Errorf("call 1: %v", c)
	}
	done := r.completed
	if done["status"] != "completed" || done["model"] != "m1" || !strings.HasPrefix(done["id"].(string), "resp_") {
		t.Errorf("completed: %v", done)
	}
	out := done["output"].([]any)
	if len(out) != 4 {
		t.Fatalf("output: %v", out)
	}
	msg := out[1].(map[string]any)
	if msg["type"] != "message" || msg["role"] != "assistant" ||
		msg["content"].([]any)[0].(map[string]any)["text"] != "Hello there, world." {
		t.Errorf("message item: %v", msg)
	}
	u := done["usage"].(map[string]any)
	// 4 reasoning + 3 text + 2×2 argument deltas.
	if u["output_tokens"] != 11.0 || u["output_tokens_details"].(map[string]any)["reasoning_tokens"] != 4.0 ||
		u["input_tokens"].(float64) < 100 || u["total_tokens"] != u["input_tokens"].(float64)+11 {
		t.Errorf("usage: %v", u)
	}
}

func TestResponsesUsageAndNonStream(t *testing.T) {
	s := start(t, Script{Default: []Step{{Text: "ok", Usage: &Usage{Input: 10, Cached: 4, Output: 3, Reasoning: 1}}}})
	r := parseResponses(t, postSSE(t, s.URL()+"/responses", responsesBody(userMsg("x"))))
	u := r.completed["usage"].(map[string]any)
	if u["input_tokens"] != 10.0 || u["input_tokens_details"].(map[string]any)["cached_tokens"] != 4.0 ||
		u["output_tokens"] != 3.0 || u["total_tokens"] != 13.0 {
		t.Errorf("usage %v", u)
	}

	body := responsesBody(userMsg("x"))
	body["stream"] = false
	resp := post(t, context.Background(), s.URL()+"/responses", body)
	defer resp.Body.Close()
	var obj map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&obj); err != nil {
		t.Fatal(err)
	}
	if obj["object"] != "response" || obj["status"] != "completed" ||
		obj["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"] != "ok" {
		t.Errorf("non-stream response: %v", obj)
	}
}

// ---- Chat wire ----

type chatResult struct {
	role, content, reasoning string
	calls                    []map[string]string // id, name, arguments
	finish                   string
	usage                    map[string]any
	done                     bool
}

func parseChat(t testing.TB, evs []sseEvent) chatResult {
	t.Helper()
	var r chatResult
	var content strings.Builder
	for i, e := range evs {
		if e.Event != "" {
			t.Fatalf("chat event with an event: line %q", e.Event)
		}
		if e.Data == "[DONE]" {
			if i != len(evs)-1 {
				t.Fatal("[DONE] is not last")
			}
			r.done = true
			continue
		}
		m := e.obj(t)
		if m["object"] != "chat.completion.chunk" {
			t.Fatalf("chunk %v", m)
		}
		choices := m["choices"].([]any)
		if u, ok := m["usage"].(map[string]any); ok {
			if len(choices) != 0 {
				t.Fatal("usage chunk with choices")
			}
			r.usage = u
			continue
		}
		ch := choices[0].(map[string]any)
		if f, ok := ch["finish_reason"].(string); ok {
			r.finish = f
		}
		d := ch["delta"].(map[string]any)
		if v, ok := d["role"].(string); ok {
			r.role = v
		}
		if v, ok := d["content"].(string); ok {
			content.WriteString(v)
		}
		if v, ok := d["reasoning_content"].(string); ok {
			r.reasoning += v
		}
		for _, tc := range asSlice(d["tool_calls"]) {
			tc := tc.(map[string]any)
			idx := int(tc["index"].(float64))
			if idx == len(r.calls) {
				fn := tc["function"].(map[string]any)
				r.calls = append(r.calls, map[string]string{"id": tc["id"].(string), "name": fn["name"].(string)})
				continue
			}
			r.calls[idx]["arguments"] += tc["function"].(map[string]any)["arguments"].(string)
		}
	}
	r.content = content.String()
	return r
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

var chatTools = []any{
	map[string]any{"type": "function", "function": map[string]any{"name": "shell", "parameters": map[string]any{}}},
}

func chatBody(msgs ...any) map[string]any {
	return map[string]any{"model": "m2", "stream": true, "stream_options": map[string]any{"include_usage": true},
		"messages": msgs, "tools": chatTools}
}

func TestChatStream(t *testing.T) {
	s := start(t, Script{Default: []Step{{
		Text:      "Two words.",
		Reasoning: []string{"Hmm.", "Yes."},
		ToolCalls: []ToolCall{{Command: "echo hi"}, {Command: "pwd"}},
	}}})
	evs := postSSE(t, s.URL()+"/chat/completions", chatBody(
		map[string]any{"role": "system", "content": "be brief"},
		map[string]any{"role": "user", "content": "go"}))
	r := parseChat(t, evs)
	if r.role != "assistant" || r.content != "Two words." || r.reasoning != "Hmm.\n\nYes." || !r.done {
		t.Errorf("chat: %+v", r)
	}
	if r.finish != "tool_calls" || len(r.calls) != 2 {
		t.Fatalf("chat calls: %+v", r)
	}
	if c := r.calls[0]; c["name"] != "shell" || c["arguments"] != `{"command":"echo hi"}` {
		t.Errorf("call 0: %v", c)
	}
	if c := r.calls[1]; c["arguments"] != `{"command":"pwd"}` || c["id"] == r.calls[0]["id"] {
		t.Errorf("call 1: %v", c)
	}
	if r.usage["completion_tokens"] != 8.0 || r.usage["prompt_tokens"].(float64) < 100 {
		t.Errorf("usage %v", r.usage)
	}

	// No include_usage: no usage chunk; no tools: finish "stop".
	s.SetScript(Script{})
	body := chatBody(map[string]any{"role": "user", "content": "x"})
	delete(body, "stream_options")
	r = parseChat(t, postSSE(t, s.URL()+"/chat/completions", body))
	if r.usage != nil || r.finish != "stop" || r.content != "done." {
		t.Errorf("plain chat: %+v", r)
	}
}

func TestChatNonStream(t *testing.T) {
	s := start(t, Script{Default: []Step{{Text: "hi", ToolCalls: []ToolCall{{Command: "ls"}}}}})
	body := chatBody(map[string]any{"role": "user", "content": "x"})
	body["stream"] = false
	resp := post(t, context.Background(), s.URL()+"/chat/completions", body)
	defer resp.Body.Close()
	var obj struct {
		Object  string
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				Role, Content string
				ToolCalls     []struct {
					ID       string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
		}
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&obj); err != nil {
		t.Fatal(err)
	}
	c := obj.Choices[0]
	if obj.Object != "chat.completion" || c.FinishReason != "tool_calls" || c.Message.Content != "hi" ||
		c.Message.ToolCalls[0].Function.Arguments != `{"command":"ls"}` || obj.Usage.PromptTokens < 100 {
		t.Errorf("chat.completion: %+v", obj)
	}
}

// ---- step selection ----

func TestRuleMatching(t *testing.T) {
	s := start(t, Script{
		Rules: []Rule{
			{Match: "alpha", Steps: []Step{{Text: "A"}}},
			{Match: "Beta", Steps: []Step{{Text: "B"}}},
			{Match: "alp", Steps: []Step{{Text: "never: alpha comes first"}}},
		},
		Default: []Step{{Text: "D"}},
	})
	cases := []struct {
		input any
		want  string
		rule  int
	}{
		{[]any{userMsg("say ALPHA please")}, "A", 0},
		{[]any{userMsg("alpha"), map[string]any{"role": "assistant", "content": "A"}, userMsg("now beta")}, "B", 1},
		{[]any{map[string]any{"role": "user", "content": "plain string content, no rule"}}, "D", -1},
		{"beta as a bare string input", "B", 1},
	}
	for i, c := range cases {
		body := map[string]any{"model": "m", "stream": true, "input": c.input}
		r := parseResponses(t, postSSE(t, s.URL()+"/responses", body))
		if r.text != c.want {
			t.Errorf("case %d: got %q want %q", i, r.text, c.want)
		}
		req := s.Requests()[i]
		if req.Rule != c.rule || req.Wire != WireResponses || req.Model != "m" || !req.Stream {
			t.Errorf("case %d: request %+v", i, req)
		}
	}
	if got := s.Requests()[0].LastUserText; got != "say ALPHA please" {
		t.Errorf("LastUserText %q", got)
	}
	// Chat with list content.
	r := parseChat(t, postSSE(t, s.URL()+"/chat/completions", chatBody(
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "x beta y"}}})))
	if r.content != "B" {
		t.Errorf("chat rule: %q", r.content)
	}
	last := s.Requests()[len(s.Requests())-1]
	if last.Wire != WireChat || !reflect.DeepEqual(last.Tools, []string{"shell"}) || last.Path != "/v1/chat/completions" {
		t.Errorf("chat request: %+v", last)
	}
}

func TestStepProgressionResponses(t *testing.T) {
	s := start(t, Script{Rules: []Rule{{Match: "go", Steps: []Step{
		{Text: "step0", ToolCalls: []ToolCall{{Command: "a"}, {Command: "b"}}},
		{Text: "step1", ToolCalls: []ToolCall{{Command: "c"}}},
		{Text: "step2"},
	}}}})
	turn := []any{userMsg("old turn"), map[string]any{"role": "assistant", "content": "x"}, userMsg("go")}
	hist := func(items ...any) []any { return append(append([]any{}, turn...), items...) }
	cases := []struct {
		input   []any
		want    string
		outputs int
	}{
		{hist(), "step0", 0},
		// Two parallel calls, two outputs: one round.
		{hist(map[string]any{"type": "reasoning", "summary": []any{}}, fnCall("1"), fnCall("2"), fnOut("1"), fnOut("2")), "step1", 2},
		// A developer note between outputs does not split the round.
		{hist(fnCall("1"), fnCall("2"), fnOut("1"), map[string]any{"role": "developer", "content": "note"}, fnOut("2")), "step1", 2},
		{hist(fnCall("1"), fnCall("2"), fnOut("1"), fnOut("2"), fnCall("3"),
			map[string]any{"type": "custom_tool_call_output", "call_id": "3", "output": "x"}), "step2", 3},
		{hist(fnCall("1"), fnOut("1"), fnCall("2"), fnOut("2"), fnCall("3"), fnOut("3")), "done.", 3},
	}
	for i, c := range cases {
		for attempt := 0; attempt < 2; attempt++ { // a retry gets the same answer
			r := parseResponses(t, postSSE(t, s.URL()+"/responses", responsesBody(c.input...)))
			if r.text != c.want {
				t.Errorf("case %d: got %q want %q", i, r.text, c.want)
			}
			req := s.Requests()[len(s.Requests())-1]
			if req.ToolOutputs != c.outputs || req.LastUserText != "go" {
				t.Errorf("case %d: request %+v", i, req)
			}
		}
	}
}

func TestStepProgressionChat(t *testing.T) {
	s := start(t, Script{Default: []Step{
		{ToolCalls: []ToolCall{{Command: "a"}, {Command: "b"}}},
		{Text: "after tools"},
	}})
	asst := map[string]any{"role": "assistant", "tool_calls": []any{
		map[string]any{"id": "1", "type": "function", "function": map[string]any{"name": "shell", "arguments": "{}"}},
		map[string]any{"id": "2", "type": "function", "function": map[string]any{"name": "shell", "arguments": "{}"}},
	}}
	tool := func(id string) map[string]any {
		return map[string]any{"role": "tool", "tool_call_id": id, "content": "ok"}
	}
	user := map[string]any{"role": "user", "content": "hi"}

	r := parseChat(t, postSSE(t, s.URL()+"/chat/completions", chatBody(user)))
	if r.content != "" || len(r.calls) != 2 || r.finish != "tool_calls" {
		t.Fatalf("step 0: %+v", r)
	}
	r = parseChat(t, postSSE(t, s.URL()+"/chat/completions", chatBody(user, asst, tool("1"), tool("2"))))
	if r.content != "after tools" || r.finish != "stop" {
		t.Fatalf("step 1: %+v", r)
	}
	r = parseChat(t, postSSE(t, s.URL()+"/chat/completions", chatBody(user, asst, tool("1"), tool("2"), asst, tool("1"), tool("2"))))
	if r.content != "done." {
		t.Fatalf("past the end: %+v", r)
	}
	// A new user message starts again at step 0.
	r = parseChat(t, postSSE(t, s.URL()+"/chat/completions", chatBody(user, asst, tool("1"), tool("2"), user)))
	if len(r.calls) != 2 {
		t.Fatalf("new turn: %+v", r)
	}
}

func TestToolChoice(t *testing.T) {
	s := start(t, Script{Default: []Step{{ToolCalls: []ToolCall{{Command: "x"}}}}})
	cases := []struct {
		tools []any
		name  string
		args  string
	}{
		{nil, "exec_command", `{"cmd":"x"}`},
		{[]any{map[string]any{"type": "function", "name": "bash"}, map[string]any{"type": "function", "name": "shell"}}, "shell", `{"command":"x"}`},
		{[]any{map[string]any{"type": "custom", "name": "apply_patch"}, map[string]any{"type": "function", "name": "run"}}, "run", `{"command":"x"}`},
	}
	for i, c := range cases {
		body := responsesBody(userMsg("go"))
		body["tools"] = c.tools
		r := parseResponses(t, postSSE(t, s.URL()+"/responses", body))
		if len(r.calls) != 1 || r.calls[0]["name"] != c.name || r.calls[0]["arguments"] != c.args {
			t.Errorf("case %d: %v", i, r.calls)
		}
	}
}

// ---- errors, stalls ----

func TestFailTimes(t *testing.T) {
	s := start(t, Script{Rules: []Rule{{Match: "", Steps: []Step{
		{Text: "recovered", HTTPError: 503, FailTimes: 2, ErrorMessage: "overloaded"},
	}}}})
	for i := 0; i < 4; i++ {
		resp := post(t, context.Background(), s.URL()+"/responses", responsesBody(userMsg("x")))
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if i < 2 {
			var e struct {
				Error struct{ Message, Type, Code string }
			}
			if resp.StatusCode != 503 || json.Unmarshal(b, &e) != nil || e.Error.Message != "overloaded" ||
				e.Error.Type != "server_error" || e.Error.Code == "" {
				t.Fatalf("attempt %d: %d %s", i, resp.StatusCode, b)
			}
			continue
		}
		if resp.StatusCode != 200 || !strings.Contains(string(b), "recovered") {
			t.Fatalf("attempt %d: %d %s", i, resp.StatusCode, b)
		}
	}
	// SetScript resets the counters; FailTimes 0 fails every time.
	s.SetScript(Script{Default: []Step{{HTTPError: 429, FailTimes: 1}, {HTTPError: 400}}})
	resp := post(t, context.Background(), s.URL()+"/chat/completions", chatBody(map[string]any{"role": "user", "content": "x"}))
	resp.Body.Close()
	if resp.StatusCode != 429 {
		t.Fatalf("429 expected, got %d", resp.StatusCode)
	}
	for i := 0; i < 2; i++ {
		resp = post(t, context.Background(), s.URL()+"/chat/completions", chatBody(
			map[string]any{"role": "user", "content": "x"}, map[string]any{"role": "tool", "content": "o"}))
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Fatalf("400 expected, got %d", resp.StatusCode)
		}
	}
}

// readUntil reads SSE events until n events of type typ (or data chunks
// when typ is "") were seen.
func readUntil(t *testing.T, br *bufio.Reader, typ string, n int) {
	t.Helper()
	seen := 0
	for seen < n {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("after %d %q events: %v", seen, typ, err)
		}
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		if typ != "" && strings.Contains(line, `"type":"`+typ+`"`) || typ == "" && strings.Contains(line, `"content":"w`) {
			seen++
		}
	}
}

func TestStallAfterAndDisconnect(t *testing.T) {
	for _, wire := range []string{WireResponses, WireChat} {
		t.Run(wire, func(t *testing.T) {
			s := start(t, Script{Default: []Step{{Deltas: 10, DeltaText: "w ", StallAfter: 3}}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			url, body, typ := s.URL()+"/responses", any(responsesBody(userMsg("x"))), "response.output_text.delta"
			if wire == WireChat {
				url, body, typ = s.URL()+"/chat/completions", chatBody(map[string]any{"role": "user", "content": "x"}), ""
			}
			resp := post(t, ctx, url, body)
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			readUntil(t, br, typ, 3)
			// Nothing more arrives while the client waits.
			got := make(chan error, 1)
			go func() {
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						got <- err
						return
					}
					if strings.TrimSpace(line) != "" {
						got <- errors.New("unexpected data after the stall: " + line)
						return
					}
				}
			}()
			select {
			case err := <-got:
				t.Fatalf("stream did not stall: %v", err)
			case <-time.After(150 * time.Millisecond):
			}
			if s.inflight.Load() != 1 {
				t.Fatalf("inflight %d, want 1", s.inflight.Load())
			}
			cancel()
			waitIdle(t, s)
		})
	}
}

func TestStallAfterBeyondDeltasNeverCompletes(t *testing.T) {
	s := start(t, Script{Default: []Step{{Text: "short", StallAfter: 100}}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := post(t, ctx, s.URL()+"/responses", responsesBody(userMsg("x")))
	// Read up to the end of the text, then give up on the stream: a stream
	// that was going to complete has written response.completed by then.
	var b []byte
	r := bufio.NewReader(resp.Body)
	for !bytes.Contains(b, []byte("response.output_item.done")) {
		line, err := r.ReadBytes('\n')
		b = append(b, line...)
		if err != nil {
			t.Fatalf("body ended before the text did: %v\n%s", err, b)
		}
	}
	cancel()
	rest, err := io.ReadAll(r)
	resp.Body.Close()
	b = append(b, rest...)
	if err == nil || !strings.Contains(string(b), "response.output_text.done") || strings.Contains(string(b), "response.completed") {
		t.Fatalf("err %v, body %s", err, b)
	}
	waitIdle(t, s)
}

func TestHang(t *testing.T) {
	for _, path := range []string{"/responses", "/chat/completions"} {
		s := start(t, Script{Default: []Step{{Text: "never", Hang: true}}})
		ctx, cancel := context.WithCancel(context.Background())
		resp := post(t, ctx, s.URL()+path, responsesBody(userMsg("x"))) // headers arrive
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d", path, resp.StatusCode)
		}
		read := make(chan int, 1)
		go func() { b, _ := io.ReadAll(resp.Body); read <- len(b) }()
		select {
		case <-read:
			t.Fatalf("%s: body ended while hanging", path)
		case <-time.After(100 * time.Millisecond):
		}
		cancel()
		if n := <-read; n != 0 {
			t.Fatalf("%s: %d bytes of body", path, n)
		}
		resp.Body.Close()
		waitIdle(t, s)
	}
}

func TestTTFTAndInterDelta(t *testing.T) {
	s := start(t, Script{Default: []Step{{Deltas: 5, TTFT: 60 * time.Millisecond, InterDelta: 10 * time.Millisecond}}})
	t0 := time.Now()
	resp := post(t, context.Background(), s.URL()+"/responses", responsesBody(userMsg("x")))
	if d := time.Since(t0); d < 60*time.Millisecond {
		t.Errorf("headers after %v, want ≥ 60ms", d)
	}
	r := parseResponses(t, readSSE(t, resp.Body))
	resp.Body.Close()
	if d := time.Since(t0); d < 100*time.Millisecond {
		t.Errorf("stream took %v, want ≥ 100ms", d)
	}
	if r.text != "word word word word word " {
		t.Errorf("text %q", r.text)
	}
}

func TestCloseReleasesStalledStreams(t *testing.T) {
	s, err := Start(Script{Default: []Step{{Hang: true}}})
	if err != nil {
		t.Fatal(err)
	}
	resp := post(t, context.Background(), s.URL()+"/responses", responsesBody(userMsg("x")))
	defer resp.Body.Close()
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked on a hanging answer")
	}
	s.Close() // twice is fine
}

func TestModelsAndUnknownRoutes(t *testing.T) {
	s := start(t, Script{})
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") || !strings.HasSuffix(s.URL(), "/v1") {
		t.Fatalf("URL %q", s.URL())
	}
	resp, err := http.Get(s.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Object string
		Data   []struct{ ID string }
	}
	_ = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != ModelID {
		t.Errorf("models: %+v", list)
	}
	resp, err = http.Get(s.URL() + "/nope")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("unknown route: %d", resp.StatusCode)
	}
	// Any prefix works.
	evs := postSSE(t, strings.TrimSuffix(s.URL(), "/v1")+"/openai/deployments/x/responses", responsesBody(userMsg("x")))
	if parseResponses(t, evs).text != "done." {
		t.Error("prefixless route")
	}
	resp = post(t, context.Background(), s.URL()+"/responses", "not an object")
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("bad body: %d", resp.StatusCode)
	}
	if w := []string{WireModels, "", WireResponses, WireResponses}; len(s.Requests()) != 4 || s.Requests()[1].Wire != w[1] {
		t.Errorf("requests: %+v", s.Requests())
	}
}

// ---- script form ----

func TestLoadScriptRoundTrip(t *testing.T) {
	orig := Script{
		Rules: []Rule{{Match: "go", Steps: []Step{
			{Text: "t", Deltas: 3, Reasoning: []string{"r1", "r2"}, TTFT: 25 * time.Millisecond, InterDelta: 300 * time.Microsecond,
				ToolCalls: []ToolCall{{Name: "shell", Arguments: `{"command": "ls"}`, CallID: "c1"}, {Command: "pwd"}}},
			{HTTPError: 500, ErrorMessage: "boom", FailTimes: 2, StallAfter: 4, Hang: true,
				Usage: &Usage{Input: 1, Cached: 2, Output: 3, Reasoning: 4}},
		}}},
		Default: []Step{{Deltas: 10000, DeltaText: "word "}},
	}
	b, err := json.Marshal(orig)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"rules"`, `"match"`, `"steps"`, `"tool_calls"`, `"call_id"`, `"ttft_ms":25`, `"inter_delta_us":300`,
		`"http_error"`, `"error_message"`, `"fail_times"`, `"stall_after"`, `"hang"`, `"usage"`, `"delta_text"`, `"default"`} {
		if !bytes.Contains(b, []byte(key)) {
			t.Errorf("%s missing from %s", key, b)
		}
	}
	got, err := LoadScript(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, orig) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, orig)
	}
	var viaUnmarshal Script
	if err := json.Unmarshal(b, &viaUnmarshal); err != nil || !reflect.DeepEqual(viaUnmarshal, orig) {
		t.Fatalf("json.Unmarshal: %v", err)
	}

	// Hand-written forms: arguments as an object; unknown keys rejected.
	sc, err := LoadScript(strings.NewReader(`{"default":[{"tool_calls":[{"name":"f","arguments":{"a": [1, 2]}}]}]}`))
	if err != nil || sc.Default[0].ToolCalls[0].Arguments != `{"a":[1,2]}` {
		t.Fatalf("object arguments: %v %+v", err, sc)
	}
	if _, err := LoadScript(strings.NewReader(`{"default":[{"txet":"typo"}]}`)); err == nil {
		t.Fatal("unknown key accepted")
	}
	if _, err := LoadScript(strings.NewReader(`{} {}`)); err == nil {
		t.Fatal("trailing data accepted")
	}
}

func TestChunking(t *testing.T) {
	cases := []struct {
		st   Step
		want []string
	}{
		{Step{Text: "Hi there,\nyou  all"}, []string{"Hi ", "there,\n", "you  ", "all"}},
		{Step{Text: "  lead"}, []string{"  lead"}},
		{Step{Text: "abcdef", Deltas: 3}, []string{"ab", "cd", "ef"}},
		{Step{Text: "héllo", Deltas: 2}, []string{"hé", "llo"}},
		{Step{Text: "ab", Deltas: 5}, []string{"a", "b"}},
		{Step{Deltas: 2}, []string{"word ", "word "}},
		{Step{Deltas: 2, DeltaText: "x"}, []string{"x", "x"}},
		{Step{}, nil},
	}
	for _, c := range cases {
		if got := c.st.textChunks(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%+v: got %q want %q", c.st, got, c.want)
		}
	}
	for _, s := range []string{"", "plain", "quote\" back\\ nl\n tab\t ctl\x01 uni é 😀 bad\xff end\u2028"} {
		var back string
		if err := json.Unmarshal(AppendJSONString(nil, s), &back); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		want, _ := json.Marshal(s)
		var wantBack string
		_ = json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Errorf("%q: got %q want %q", s, back, wantBack)
		}
	}
}

func TestDemoScript(t *testing.T) {
	s := start(t, DemoScript())
	r := parseResponses(t, postSSE(t, s.URL()+"/responses", responsesBody(userMsg("Hello!"))))
	if len(r.reasoning) == 0 || !strings.Contains(r.text, "Hello") {
		t.Errorf("greeting: %+v", r)
	}
	r = parseResponses(t, postSSE(t, s.URL()+"/responses", responsesBody(userMsg("please run the tests"))))
	if len(r.calls) != 1 || r.calls[0]["name"] != "exec_command" || !strings.Contains(r.calls[0]["arguments"].(string), "passed") {
		t.Fatalf("tests step 0: %+v", r.calls)
	}
	r = parseResponses(t, postSSE(t, s.URL()+"/responses",
		responsesBody(userMsg("please run the tests"), fnCall("c"), fnOut("c"))))
	if len(r.calls) != 0 || !strings.Contains(r.text, "passed") {
		t.Errorf("tests step 1: %+v", r)
	}
}

// ---- throughput ----

func TestTenThousandDeltas(t *testing.T) {
	s := start(t, Script{Default: []Step{{Deltas: 10000}}})
	t0 := time.Now()
	r := parseResponses(t, postSSE(t, s.URL()+"/responses", responsesBody(userMsg("x"))))
	if len(r.text) != 10000*len("word ") {
		t.Fatalf("text length %d", len(r.text))
	}
	c := parseChat(t, postSSE(t, s.URL()+"/chat/completions", chatBody(map[string]any{"role": "user", "content": "x"})))
	if c.content != r.text {
		t.Fatal("chat text differs")
	}
	t.Logf("two 10,000-delta streams in %v", time.Since(t0))
}

func BenchmarkStream10kDeltas(b *testing.B) {
	for _, wire := range []string{WireResponses, WireChat} {
		b.Run(wire, func(b *testing.B) {
			s := start(b, Script{Default: []Step{{Deltas: 10000}}})
			url, body := s.URL()+"/responses", any(responsesBody(userMsg("x")))
			if wire == WireChat {
				url, body = s.URL()+"/chat/completions", chatBody(map[string]any{"role": "user", "content": "x"})
			}
			payload, _ := json.Marshal(body)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				resp, err := http.Post(url, "application/json", bytes.NewReader(payload))
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(n)
			}
			b.ReportMetric(float64(b.N*10000)/b.Elapsed().Seconds(), "deltas/s")
		})
	}
}

// TestEndless: an endless step keeps streaming its delta, far past any
// pre-built length, and stops when the client goes away; it never sends
// the end of the response. The "endless" key round-trips.
func TestEndless(t *testing.T) {
	for _, wire := range []string{WireResponses, WireChat} {
		t.Run(wire, func(t *testing.T) {
			s := start(t, Script{Default: []Step{{Text: "first ", Endless: true, DeltaText: "w "}}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			url, body, typ := s.URL()+"/responses", any(responsesBody(userMsg("x"))), "response.output_text.delta"
			if wire == WireChat {
				url, body, typ = s.URL()+"/chat/completions", chatBody(map[string]any{"role": "user", "content": "x"}), ""
			}
			resp := post(t, ctx, url, body)
			defer resp.Body.Close()
			readUntil(t, bufio.NewReader(resp.Body), typ, 50_000)
			cancel()
			waitIdle(t, s)
		})
	}
	sc, err := LoadScript(strings.NewReader(`{"default":[{"endless":true,"delta_text":"x"}]}`))
	if err != nil || !sc.Default[0].Endless {
		t.Fatalf("LoadScript endless: %+v, %v", sc, err)
	}
	if b, _ := json.Marshal(sc); !bytes.Contains(b, []byte(`"endless":true`)) {
		t.Errorf("marshalled %s, want endless", b)
	}
}

// TestCutAfterAndFailAfter: cut_after drops the connection after n deltas
// with no final event; fail_after ends the stream with the wire's error
// event. Both round-trip through the JSON form.
func TestCutAfterAndFailAfter(t *testing.T) {
	for _, wire := range []string{WireResponses, WireChat} {
		t.Run(wire, func(t *testing.T) {
			url, body := s0URL(wire)
			s := start(t, Script{Rules: []Rule{
				{Match: "cut", Steps: []Step{{Deltas: 10, DeltaText: "w ", CutAfter: 3}}},
				{Match: "fail", Steps: []Step{{Deltas: 10, DeltaText: "w ", FailAfter: 3, ErrorMessage: "boom"}}},
			}})
			resp := post(t, context.Background(), s.URL()+url, body("cut"))
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil || bytes.Count(b, []byte(`"w `)) != 3 || bytes.Contains(b, []byte("[DONE]")) || bytes.Contains(b, []byte("response.completed")) {
				t.Errorf("cut: err %v, body %s", err, b)
			}
			resp = post(t, context.Background(), s.URL()+url, body("fail"))
			b, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || bytes.Count(b, []byte(`"w `)) != 3 || !bytes.Contains(b, []byte(`"boom"`)) || bytes.Contains(b, []byte("[DONE]")) {
				t.Errorf("fail: err %v, body %s", err, b)
			}
		})
	}
	sc, err := LoadScript(strings.NewReader(`{"default":[{"cut_after":2,"fail_after":3}]}`))
	if err != nil || sc.Default[0].CutAfter != 2 || sc.Default[0].FailAfter != 3 {
		t.Fatalf("LoadScript: %+v, %v", sc, err)
	}
}

func s0URL(wire string) (string, func(string) any) {
	if wire == WireChat {
		return "/chat/completions", func(text string) any { return chatBody(map[string]any{"role": "user", "content": text}) }
	}
	return "/responses", func(text string) any { return responsesBody(userMsg(text)) }
}

// TestSequentialRule: a Sequential rule answers its i-th request with its
// i-th step whatever the conversation holds (a client that compacts its
// context rewrites it); past the end, "done."; SetScript restarts the count.
func TestSequentialRule(t *testing.T) {
	sc := Script{Rules: []Rule{{Match: "go", Sequential: true, Steps: []Step{{Text: "one"}, {Text: "two"}}}}}
	s := start(t, sc)
	ask := func() string {
		body := map[string]any{"model": "m", "stream": true, "input": []any{userMsg("go on")}}
		return parseResponses(t, postSSE(t, s.URL()+"/responses", body)).text
	}
	for i, want := range []string{"one", "two", "done."} {
		if got := ask(); got != want {
			t.Errorf("request %d = %q, want %q", i+1, got, want)
		}
	}
	s.SetScript(sc)
	if got := ask(); got != "one" {
		t.Errorf("after SetScript = %q, want one", got)
	}
	if _, err := LoadScript(strings.NewReader(`{"rules":[{"match":"x","sequential":true,"steps":[{"text":"a"}]}]}`)); err != nil {
		t.Errorf("a sequential rule in a script file: %v", err)
	}
}
