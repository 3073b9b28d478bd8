package model

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
)

var testRequest = Request{
	Model:        "gpt-test",
	Instructions: "You are a coding agent.",
	Input: []Entry{
		{Kind: EntryUser, Text: "list files"},
		{Kind: EntryAssistant, Text: "Sure."},
		{Kind: EntryToolCall, CallID: "call_1", Name: "shell", Arguments: `{"cmd":"ls"}`},
		{Kind: EntryToolCall, CallID: "call_2", Name: "shell", Arguments: `{"cmd":"pwd"}`},
		{Kind: EntryToolOutput, CallID: "call_1", Output: "a.go\n"},
		{Kind: EntryToolOutput, CallID: "call_2", Output: "/w\n"},
		{Kind: EntryUser, Text: "thanks"},
	},
	Tools: []Tool{{
		Name:        "shell",
		Description: "Run a command",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}`),
	}},
	ReasoningEffort:   "high",
	ParallelToolCalls: true,
}

func TestResponsesTextAndReasoning(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		sseStart(w)
		sseWrite(w, rsEv("response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}`))
		sseWrite(w, rsEv("response.output_item.added", `{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}`))
		sseWrite(w, rsEv("response.reasoning_summary_part.added", `{"type":"response.reasoning_summary_part.added","item_id":"rs_1","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}}`))
		sseWrite(w, rsEv("response.reasoning_summary_text.delta", `{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"**Plan** "}`))
		sseWrite(w, rsEv("response.reasoning_summary_text.delta", `{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"look"}`))
		sseWrite(w, rsEv("response.reasoning_summary_part.added", `{"type":"response.reasoning_summary_part.added","item_id":"rs_1","output_index":0,"summary_index":1,"part":{"type":"summary_text","text":""}}`))
		sseWrite(w, rsEv("response.reasoning_summary_text.delta", `{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":1,"delta":"then act"}`))
		sseWrite(w, rsEv("response.reasoning_text.delta", `{"type":"response.reasoning_text.delta","item_id":"rs_1","output_index":0,"content_index":0,"delta":"raw thought"}`))
		// The done item carries no content: the accumulated text is used.
		sseWrite(w, rsEv("response.output_item.done", `{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"**Plan** look"},{"type":"summary_text","text":"then act"}]}}`))
		sseWrite(w, rsEv("response.output_item.added", `{"type":"response.output_item.added","output_index":1,"item":{"id":"msg_1","type":"message","role":"assistant","status":"in_progress","content":[]}}`))
		sseWrite(w, rsEv("response.content_part.added", `{"type":"response.content_part.added","item_id":"msg_1","output_index":1,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`))
		for _, d := range []string{"Hel", "lo, ", "wörld \u2603"} {
			b, _ := json.Marshal(d)
			sseWrite(w, rsEv("response.output_text.delta", `{"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":`+string(b)+`,"logprobs":[],"obfuscation":"xx"}`))
		}
		sseWrite(w, rsEv("response.output_text.done", `{"type":"response.output_text.done","item_id":"msg_1","output_index":1,"content_index":0,"text":"Hello, wörld ☃"}`))
		sseWrite(w, rsEv("response.output_item.done", `{"type":"response.output_item.done","output_index":1,"item":{"id":"msg_1","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Hello, wörld ☃","annotations":[]}]}}`))
		sseWrite(w, rsEv("response.completed", `{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[],"usage":{"input_tokens":120,"input_tokens_details":{"cached_tokens":100},"output_tokens":30,"output_tokens_details":{"reasoning_tokens":12},"total_tokens":150}}}`))
	})
	p := fs.provider(WireResponses)
	p.Headers = map[string]string{"X-Custom": "yes"}
	c := NewClient(p, nil)
	evs, err := collect(t, c, context.Background(), testRequest)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	mustEqual(t, "kinds", kinds(evs), "ReasoningPartAdded ReasoningSummaryDelta ReasoningSummaryDelta ReasoningPartAdded ReasoningSummaryDelta ReasoningTextDelta ReasoningDone TextDelta TextDelta TextDelta MessageDone Completed")
	want := []Event{
		{Kind: EvReasoningPartAdded, ItemID: "rs_1", Index: 0},
		{Kind: EvReasoningSummaryDelta, ItemID: "rs_1", Index: 0, Text: "**Plan** "},
		{Kind: EvReasoningSummaryDelta, ItemID: "rs_1", Index: 0, Text: "look"},
		{Kind: EvReasoningPartAdded, ItemID: "rs_1", Index: 1},
		{Kind: EvReasoningSummaryDelta, ItemID: "rs_1", Index: 1, Text: "then act"},
		{Kind: EvReasoningTextDelta, ItemID: "rs_1", Index: 0, Text: "raw thought"},
		{Kind: EvReasoningDone, ItemID: "rs_1", Summary: []string{"**Plan** look", "then act"}, Content: []string{"raw thought"}},
		{Kind: EvTextDelta, ItemID: "msg_1", Text: "Hel"},
		{Kind: EvTextDelta, ItemID: "msg_1", Text: "lo, "},
		{Kind: EvTextDelta, ItemID: "msg_1", Text: "wörld ☃"},
		{Kind: EvMessageDone, ItemID: "msg_1", Text: "Hello, wörld ☃"},
		{Kind: EvCompleted, Usage: Usage{InputTokens: 120, CachedInputTokens: 100, OutputTokens: 30, ReasoningOutputTokens: 12, TotalTokens: 150}},
	}
	if !reflect.DeepEqual(evs, want) {
		t.Errorf("events:\n got %+v\nwant %+v", evs, want)
	}

	// The request.
	mustEqual(t, "path", fs.path(0), "/v1/responses")
	mustEqual(t, "auth", fs.header(0).Get("Authorization"), "Bearer sk-test")
	mustEqual(t, "custom header", fs.header(0).Get("X-Custom"), "yes")
	body := fs.body(t, 0)
	mustEqual(t, "model", body["model"], any("gpt-test"))
	mustEqual(t, "stream", body["stream"], any(true))
	mustEqual(t, "store", body["store"], any(false))
	mustEqual(t, "instructions", body["instructions"], any("You are a coding agent."))
	mustEqual(t, "parallel_tool_calls", body["parallel_tool_calls"], any(true))
	jsonEq(t, "reasoning", body["reasoning"], `{"effort":"high","summary":"auto"}`)
	jsonEq(t, "tools", body["tools"], `[{"type":"function","name":"shell","description":"Run a command","strict":false,
		"parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}}]`)
	jsonEq(t, "input", body["input"], `[
		{"type":"message","role":"user","content":[{"type":"input_text","text":"list files"}]},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Sure."}]},
		{"type":"function_call","call_id":"call_1","name":"shell","arguments":"{\"cmd\":\"ls\"}"},
		{"type":"function_call","call_id":"call_2","name":"shell","arguments":"{\"cmd\":\"pwd\"}"},
		{"type":"function_call_output","call_id":"call_1","output":"a.go\n"},
		{"type":"function_call_output","call_id":"call_2","output":"/w\n"},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"thanks"}]}]`)
}

func TestResponsesParallelToolCalls(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		sseStart(w)
		sseWrite(w, rsEv("response.created", `{"type":"response.created","response":{"id":"resp_2","status":"in_progress"}}`))
		sseWrite(w, rsEv("response.output_item.added", `{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","status":"in_progress","call_id":"call_a","name":"shell","arguments":""}}`))
		sseWrite(w, rsEv("response.output_item.added", `{"type":"response.output_item.added","output_index":1,"item":{"id":"fc_2","type":"function_call","status":"in_progress","call_id":"call_b","name":"read_file","arguments":""}}`))
		// Interleaved argument deltas of both calls.
		sseWrite(w, rsEv("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{\"cmd\":"}`))
		sseWrite(w, rsEv("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","item_id":"fc_2","output_index":1,"delta":"{\"path\""}`))
		sseWrite(w, rsEv("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"\"ls -la\"}"}`))
		sseWrite(w, rsEv("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","item_id":"fc_2","output_index":1,"delta":":\"go.mod\"}"}`))
		sseWrite(w, rsEv("response.function_call_arguments.done", `{"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":0,"arguments":"{\"cmd\":\"ls -la\"}"}`))
		// The first done item repeats the arguments; the second relies on
		// the accumulated deltas.
		sseWrite(w, rsEv("response.output_item.done", `{"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_a","name":"shell","arguments":"{\"cmd\":\"ls -la\"}"}}`))
		sseWrite(w, rsEv("response.output_item.done", `{"type":"response.output_item.done","output_index":1,"item":{"id":"fc_2","type":"function_call","status":"completed"}}`))
		sseWrite(w, rsEv("response.completed", `{"type":"response.completed","response":{"id":"resp_2","status":"completed","usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}}`))
	})
	c := NewClient(fs.provider(WireResponses), nil)
	evs, err := collect(t, c, context.Background(), Request{Model: "m", Input: []Entry{{Kind: EntryUser, Text: "hi"}}})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	want := []Event{
		{Kind: EvToolCall, ItemID: "fc_1", Call: ToolCall{CallID: "call_a", Name: "shell", Arguments: `{"cmd":"ls -la"}`}},
		{Kind: EvToolCall, ItemID: "fc_2", Call: ToolCall{CallID: "call_b", Name: "read_file", Arguments: `{"path":"go.mod"}`}},
		{Kind: EvCompleted, Usage: Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}},
	}
	if !reflect.DeepEqual(evs, want) {
		t.Errorf("events:\n got %+v\nwant %+v", evs, want)
	}
	body := fs.body(t, 0)
	if _, ok := body["tools"]; ok {
		t.Errorf("tools sent without tools: %v", body["tools"])
	}
	if _, ok := body["parallel_tool_calls"]; ok {
		t.Errorf("parallel_tool_calls sent without tools")
	}
	if _, ok := body["reasoning"]; ok {
		t.Errorf("reasoning sent without an effort")
	}
}

func TestResponsesFailedEvents(t *testing.T) {
	cases := []struct {
		name      string
		events    string
		kind      ErrorKind
		msg       string
		retryable bool
		hits      int32
	}{
		{
			name:   "context window",
			events: rsEv("response.failed", `{"type":"response.failed","response":{"id":"r","status":"failed","error":{"code":"context_length_exceeded","message":"Your input exceeds the context window of this model."}}}`),
			kind:   ErrKindContextWindow, msg: "exceeds the context window", hits: 1,
		},
		{
			name:   "error event",
			events: rsEv("error", `{"type":"error","code":"invalid_prompt","message":"Invalid prompt: flagged.","param":null}`),
			kind:   ErrKindBadRequest, msg: "Invalid prompt: flagged.", hits: 1,
		},
		{
			name:   "incomplete",
			events: rsEv("response.incomplete", `{"type":"response.incomplete","response":{"id":"r","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}`),
			kind:   ErrKindOther, msg: "max_output_tokens", hits: 1,
		},
		{
			// A server error before any output is retried until attempts run out.
			name:   "server error retried",
			events: rsEv("response.failed", `{"type":"response.failed","response":{"id":"r","status":"failed","error":{"code":"server_error","message":"boom"}}}`),
			kind:   ErrKindTooManyAttempts, msg: "boom", hits: 2,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				sseStart(w)
				sseWrite(w, rsEv("response.created", `{"type":"response.created","response":{"id":"r","status":"in_progress"}}`))
				sseWrite(w, tc.events)
			})
			p := fs.provider(WireResponses)
			p.MaxRetries = 1
			_, err := collect(t, NewClient(p, nil), context.Background(), Request{Model: "m"})
			e := asModelError(t, err)
			mustEqual(t, "kind", e.Kind, tc.kind)
			if !contains(e.Error(), tc.msg) {
				t.Errorf("error %q does not mention %q", e.Error(), tc.msg)
			}
			mustEqual(t, "hits", fs.hits.Load(), tc.hits)
		})
	}
}
