package model

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestChatTextReasoningUsage(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		sseStart(w)
		sseWrite(w, chatEv(`{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}`))
		// llama.cpp / DeepSeek style reasoning, then OpenRouter style.
		sseWrite(w, chatEv(`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"reasoning_content":"Let me "},"finish_reason":null}]}`))
		sseWrite(w, chatEv(`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":null,"reasoning":"think."},"finish_reason":null}]}`))
		sseWrite(w, chatEv(`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`))
		sseWrite(w, chatEv(`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":" there"},"finish_reason":null}]}`))
		sseWrite(w, chatEv(`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`))
		sseWrite(w, chatEv(`{"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":7,"total_tokens":57,"prompt_tokens_details":{"cached_tokens":32},"completion_tokens_details":{"reasoning_tokens":3}}}`))
		sseWrite(w, "data: [DONE]\n\n")
	})
	c := NewClient(fs.provider(WireChat), nil)
	evs, err := collect(t, c, context.Background(), testRequest)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	want := []Event{
		{Kind: EvReasoningTextDelta, ItemID: "rs_chatcmpl-1", Text: "Let me "},
		{Kind: EvReasoningTextDelta, ItemID: "rs_chatcmpl-1", Text: "think."},
		{Kind: EvReasoningDone, ItemID: "rs_chatcmpl-1", Content: []string{"Let me think."}},
		{Kind: EvTextDelta, ItemID: "msg_chatcmpl-1", Text: "Hi"},
		{Kind: EvTextDelta, ItemID: "msg_chatcmpl-1", Text: " there"},
		{Kind: EvMessageDone, ItemID: "msg_chatcmpl-1"}, // the deltas are the text: the client keeps no copy
		{Kind: EvCompleted, Usage: Usage{InputTokens: 50, CachedInputTokens: 32, OutputTokens: 7, ReasoningOutputTokens: 3, TotalTokens: 57}},
	}
	if !reflect.DeepEqual(evs, want) {
		t.Errorf("events:\n got %+v\nwant %+v", evs, want)
	}

	mustEqual(t, "path", fs.path(0), "/v1/chat/completions")
	mustEqual(t, "auth", fs.header(0).Get("Authorization"), "Bearer sk-test")
	body := fs.body(t, 0)
	mustEqual(t, "stream", body["stream"], any(true))
	mustEqual(t, "reasoning_effort", body["reasoning_effort"], any("high"))
	mustEqual(t, "parallel_tool_calls", body["parallel_tool_calls"], any(true))
	jsonEq(t, "stream_options", body["stream_options"], `{"include_usage":true}`)
	jsonEq(t, "tools", body["tools"], `[{"type":"function","function":{"name":"shell","description":"Run a command",
		"parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}}}]`)
	// The assistant text and both tool calls of that turn form one message.
	jsonEq(t, "messages", body["messages"], `[
		{"role":"system","content":"You are a coding agent."},
		{"role":"user","content":"list files"},
		{"role":"assistant","content":"Sure.","tool_calls":[
			{"id":"call_1","type":"function","function":{"name":"shell","arguments":"{\"cmd\":\"ls\"}"}},
			{"id":"call_2","type":"function","function":{"name":"shell","arguments":"{\"cmd\":\"pwd\"}"}}]},
		{"role":"tool","content":"a.go\n","tool_call_id":"call_1"},
		{"role":"tool","content":"/w\n","tool_call_id":"call_2"},
		{"role":"user","content":"thanks"}]`)
}

func TestChatParallelToolCalls(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		sseStart(w)
		sseWrite(w, chatEv(`{"id":"c2","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"shell","arguments":""}}]},"finish_reason":null}]}`))
		sseWrite(w, chatEv(`{"id":"c2","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"cmd\""}}]},"finish_reason":null}]}`))
		sseWrite(w, chatEv(`{"id":"c2","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"read_file","arguments":"{\"pa"}}]},"finish_reason":null}]}`))
		sseWrite(w, chatEv(`{"id":"c2","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":\"ls\"}"}}]},"finish_reason":null}]}`))
		sseWrite(w, chatEv(`{"id":"c2","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"th\":\"x\"}"}}]},"finish_reason":null}]}`))
		sseWrite(w, chatEv(`{"id":"c2","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`))
		sseWrite(w, chatEv(`{"id":"c2","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}`))
		sseWrite(w, "data: [DONE]\n\n")
	})
	c := NewClient(fs.provider(WireChat), nil)
	evs, err := collect(t, c, context.Background(), Request{Model: "m", Input: []Entry{{Kind: EntryUser, Text: "go"}}})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	want := []Event{
		{Kind: EvToolCall, ItemID: "call_a", Call: ToolCall{CallID: "call_a", Name: "shell", Arguments: `{"cmd":"ls"}`}},
		{Kind: EvToolCall, ItemID: "call_b", Call: ToolCall{CallID: "call_b", Name: "read_file", Arguments: `{"path":"x"}`}},
		{Kind: EvCompleted, Usage: Usage{InputTokens: 9, OutputTokens: 4, TotalTokens: 13}},
	}
	if !reflect.DeepEqual(evs, want) {
		t.Errorf("events:\n got %+v\nwant %+v", evs, want)
	}
	body := fs.body(t, 0)
	for _, k := range []string{"tools", "parallel_tool_calls", "reasoning_effort"} {
		if _, ok := body[k]; ok {
			t.Errorf("%s sent although unset", k)
		}
	}
}

// Servers that send each tool call whole, without an index (some Ollama and
// Gemini versions), and omit the usage chunk.
func TestChatToolCallsWithoutIndex(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		sseStart(w)
		sseWrite(w, chatEv(`{"id":"c3","choices":[{"index":0,"delta":{"tool_calls":[{"id":"x1","type":"function","function":{"name":"a","arguments":"{}"}},{"id":"x2","type":"function","function":{"name":"b","arguments":"{\"n\":1}"}}]},"finish_reason":"tool_calls"}]}`))
		sseWrite(w, "data: [DONE]\n\n")
	})
	evs, err := collect(t, NewClient(fs.provider(WireChat), nil), context.Background(), Request{Model: "m"})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	mustEqual(t, "kinds", kinds(evs), "ToolCall ToolCall Completed")
	mustEqual(t, "call 0", evs[0].Call, ToolCall{CallID: "x1", Name: "a", Arguments: "{}"})
	mustEqual(t, "call 1", evs[1].Call, ToolCall{CallID: "x2", Name: "b", Arguments: `{"n":1}`})
}

func TestChatErrorInStream(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		sseStart(w)
		sseWrite(w, chatEv(`{"id":"c4","choices":[{"index":0,"delta":{"content":"par"},"finish_reason":null}]}`))
		sseWrite(w, chatEv(`{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`))
	})
	evs, err := collect(t, NewClient(fs.provider(WireChat), nil), context.Background(), Request{Model: "m"})
	e := asModelError(t, err)
	mustEqual(t, "kind", e.Kind, ErrKindContextWindow)
	mustEqual(t, "kinds", kinds(evs), "TextDelta")
	if !contains(e.Message, "maximum context length") {
		t.Errorf("message %q", e.Message)
	}
}

func TestChatEmptyToolOutput(t *testing.T) {
	r := buildChatRequest(Request{Input: []Entry{
		{Kind: EntryToolCall, CallID: "c", Name: "n"},
		{Kind: EntryToolOutput, CallID: "c"},
	}})
	mustEqual(t, "messages", len(r.Messages), 2)
	mustEqual(t, "args", r.Messages[0].ToolCalls[0].Function.Arguments, "{}")
	mustEqual(t, "output", r.Messages[1].Content, noOutput)
}

// A server that stalls or drops the connection after finish_reason (no
// [DONE]) has still answered completely.
func TestChatEndsWithoutDone(t *testing.T) {
	for _, mode := range []string{"stall", "reset"} {
		t.Run(mode, func(t *testing.T) {
			fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				sseStart(w)
				sseWrite(w, chatEv(`{"id":"c5","choices":[{"index":0,"delta":{"content":"done"},"finish_reason":null}]}`))
				sseWrite(w, chatEv(`{"id":"c5","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`))
				if mode == "stall" {
					stall(r)
					return
				}
				if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
					conn.Close()
				}
			})
			p := fs.provider(WireChat)
			p.IdleTimeout = shortIdle // ends the stalled stream
			evs, err := collect(t, NewClient(p, nil), context.Background(), Request{Model: "m"})
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			mustEqual(t, "kinds", kinds(evs), "TextDelta MessageDone Completed")
			mustEqual(t, "usage", evs[2].Usage, Usage{InputTokens: 3, OutputTokens: 1, TotalTokens: 4})
		})
	}
}
