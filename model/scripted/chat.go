package scripted

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// streamChat answers a streamed Chat Completions request: a role chunk,
// reasoning_content chunks, content chunks, tool_calls chunks (per call:
// index, id, type and name first, then the arguments in pieces), a
// finish_reason chunk, a usage chunk with no choices when includeUsage, and
// "data: [DONE]".
func (s *Server) streamChat(ctx context.Context, w http.ResponseWriter, p *plan, model string, includeUsage bool) {
	if p.st.Hang {
		hang(ctx, w, "text/event-stream")
		return
	}
	sw := startStream(ctx, w, p.st)
	c := newChatChunker(s.newID("chatcmpl-"), model)
	sw.fail = func() {
		sw.data(map[string]any{"error": map[string]any{"code": "server_error", "type": "server_error", "message": p.st.errorMessage()}})
	}

	sw.chatChunk(c, map[string]any{"role": "assistant", "content": ""}, nil)
	for i, chunks := range p.reasoning {
		for j, r := range chunks {
			if !sw.delta() {
				return
			}
			if i > 0 && j == 0 {
				r = "\n\n" + r
			}
			sw.chatDelta(c, `{"reasoning_content":`, r)
		}
	}
	for _, t := range p.text {
		if !sw.delta() {
			return
		}
		sw.chatDelta(c, `{"content":`, t)
	}
	if p.endless != "" {
		for sw.delta() {
			sw.chatDelta(c, `{"content":`, p.endless)
		}
		return
	}
	for i, call := range p.calls {
		sw.chatChunk(c, map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": call.callID, "type": "function",
			"function": map[string]any{"name": call.name, "arguments": ""},
		}}}, nil)
		for _, a := range call.argChunks {
			if !sw.delta() {
				return
			}
			sw.chatChunk(c, map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": a},
			}}}, nil)
		}
	}
	if !sw.finish() {
		return
	}
	sw.chatChunk(c, map[string]any{}, p.finishReason())
	if includeUsage {
		sw.data(map[string]any{
			"id": c.id, "object": "chat.completion.chunk", "created": c.created, "model": model,
			"choices": []any{}, "usage": chatUsage(p.usage),
		})
	}
	sw.buf = append(sw.buf[:0], "data: [DONE]\n\n"...)
	sw.flushBuf()
}

// oneChat answers a Chat Completions request that did not ask for a
// stream with one chat.completion object.
func (s *Server) oneChat(ctx context.Context, w http.ResponseWriter, p *plan, model string) {
	if p.st.Hang || p.st.StallAfter > 0 {
		hang(ctx, w, "application/json")
		return
	}
	msg := map[string]any{"role": "assistant", "content": nil}
	if p.text != nil {
		msg["content"] = p.fullText
	}
	if len(p.parts) > 0 {
		msg["reasoning_content"] = strings.Join(p.parts, "\n\n")
	}
	if len(p.calls) > 0 {
		calls := make([]any, 0, len(p.calls))
		for _, c := range p.calls {
			calls = append(calls, map[string]any{
				"id": c.callID, "type": "function",
				"function": map[string]any{"name": c.name, "arguments": c.args},
			})
		}
		msg["tool_calls"] = calls
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": s.newID("chatcmpl-"), "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": p.finishReason()}},
		"usage":   chatUsage(p.usage),
	})
}

func (p *plan) finishReason() string {
	if len(p.calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func chatUsage(u Usage) map[string]any {
	return map[string]any{
		"prompt_tokens":             u.Input,
		"completion_tokens":         u.Output,
		"total_tokens":              u.Input + u.Output,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.Cached},
		"completion_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
	}
}

// chatChunker holds the fields every chunk of one completion repeats.
type chatChunker struct {
	id      string
	created int64
	model   string
	prefix  []byte // `data: {"id":…,"choices":[{"index":0,"delta":`
}

func newChatChunker(id, model string) *chatChunker {
	c := &chatChunker{id: id, created: time.Now().Unix(), model: model}
	b := append([]byte(nil), `data: {"id":"`...)
	b = append(b, id...)
	b = append(b, `","object":"chat.completion.chunk","created":`...)
	b = strconv.AppendInt(b, c.created, 10)
	b = append(b, `,"model":`...)
	b = AppendJSONString(b, model)
	c.prefix = append(b, `,"choices":[{"index":0,"delta":`...)
	return c
}

// chatChunk writes a chunk with one choice carrying delta and
// finishReason (nil: null).
func (sw *stream) chatChunk(c *chatChunker, delta map[string]any, finishReason any) {
	if sw.stopped {
		return
	}
	d, err := json.Marshal(delta)
	if err != nil {
		sw.stopped = true
		return
	}
	b := append(sw.buf[:0], c.prefix...)
	b = append(b, d...)
	b = append(b, `,"finish_reason":`...)
	if s, ok := finishReason.(string); ok {
		b = AppendJSONString(b, s)
	} else {
		b = append(b, "null"...)
	}
	sw.buf = append(b, "}]}\n\n"...)
	sw.flushBuf()
}

// chatDelta writes a chunk whose delta is one string field; open is
// `{"content":` or `{"reasoning_content":`. This is the hot loop.
func (sw *stream) chatDelta(c *chatChunker, open, text string) {
	if sw.stopped {
		return
	}
	b := append(sw.buf[:0], c.prefix...)
	b = append(b, open...)
	b = AppendJSONString(b, text)
	sw.buf = append(b, `},"finish_reason":null}]}`+"\n\n"...)
	sw.flushBuf()
}

// data writes "data: <v as JSON>".
func (sw *stream) data(v any) {
	if sw.stopped {
		return
	}
	d, err := json.Marshal(v)
	if err != nil {
		sw.stopped = true
		return
	}
	b := append(sw.buf[:0], "data: "...)
	b = append(b, d...)
	sw.buf = append(b, '\n', '\n')
	sw.flushBuf()
}
