package scripted

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// streamResponses answers a streamed Responses API request.
func (s *Server) streamResponses(ctx context.Context, w http.ResponseWriter, p *plan, model string) {
	if p.st.Hang {
		hang(ctx, w, "text/event-stream")
		return
	}
	sw := startStream(ctx, w, p.st)
	r := newResponseObject(s.newID("resp_"), model)
	sw.fail = func() {
		obj := r.object("failed", nil)
		obj["error"] = map[string]any{"code": "server_error", "message": p.st.errorMessage()}
		sw.event("response.failed", map[string]any{"response": obj})
	}
	sw.event("response.created", map[string]any{"response": r.object("in_progress", nil)})
	sw.event("response.in_progress", map[string]any{"response": r.object("in_progress", nil)})

	if len(p.reasoning) > 0 {
		id, idx := s.newID("rs_"), len(r.output)
		sw.event("response.output_item.added", map[string]any{
			"output_index": idx, "item": reasoningItem(id, nil),
		})
		for i, chunks := range p.reasoning {
			sw.event("response.reasoning_summary_part.added", map[string]any{
				"item_id": id, "output_index": idx, "summary_index": i,
				"part": map[string]any{"type": "summary_text", "text": ""},
			})
			for _, c := range chunks {
				if !sw.delta() {
					return
				}
				sw.deltaEvent("response.reasoning_summary_text.delta", id, idx, `,"summary_index":`, i, c, false)
			}
			sw.event("response.reasoning_summary_text.done", map[string]any{
				"item_id": id, "output_index": idx, "summary_index": i, "text": p.parts[i],
			})
			sw.event("response.reasoning_summary_part.done", map[string]any{
				"item_id": id, "output_index": idx, "summary_index": i,
				"part": map[string]any{"type": "summary_text", "text": p.parts[i]},
			})
		}
		item := reasoningItem(id, p.parts)
		sw.event("response.output_item.done", map[string]any{"output_index": idx, "item": item})
		r.output = append(r.output, item)
	}

	if p.text != nil {
		id, idx := s.newID("msg_"), len(r.output)
		sw.event("response.output_item.added", map[string]any{
			"output_index": idx, "item": messageItem(id, "in_progress", nil),
		})
		sw.event("response.content_part.added", map[string]any{
			"item_id": id, "output_index": idx, "content_index": 0, "part": textPart(""),
		})
		for _, c := range p.text {
			if !sw.delta() {
				return
			}
			sw.deltaEvent("response.output_text.delta", id, idx, `,"content_index":`, 0, c, true)
		}
		if p.endless != "" {
			for sw.delta() {
				sw.deltaEvent("response.output_text.delta", id, idx, `,"content_index":`, 0, p.endless, true)
			}
			return
		}
		sw.event("response.output_text.done", map[string]any{
			"item_id": id, "output_index": idx, "content_index": 0, "text": p.fullText, "logprobs": []any{},
		})
		sw.event("response.content_part.done", map[string]any{
			"item_id": id, "output_index": idx, "content_index": 0, "part": textPart(p.fullText),
		})
		item := messageItem(id, "completed", &p.fullText)
		sw.event("response.output_item.done", map[string]any{"output_index": idx, "item": item})
		r.output = append(r.output, item)
	}

	for _, c := range p.calls {
		id, idx := s.newID("fc_"), len(r.output)
		sw.event("response.output_item.added", map[string]any{
			"output_index": idx, "item": callItem(id, "in_progress", c, ""),
		})
		deltaType, doneType, doneKey := "response.function_call_arguments.delta", "response.function_call_arguments.done", "arguments"
		if c.custom {
			deltaType, doneType, doneKey = "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done", "input"
		}
		for _, a := range c.argChunks {
			if !sw.delta() {
				return
			}
			sw.deltaEvent(deltaType, id, idx, "", 0, a, false)
		}
		sw.event(doneType, map[string]any{
			"item_id": id, "output_index": idx, doneKey: c.args,
		})
		item := callItem(id, "completed", c, c.args)
		sw.event("response.output_item.done", map[string]any{"output_index": idx, "item": item})
		r.output = append(r.output, item)
	}

	if !sw.finish() {
		return
	}
	sw.event("response.completed", map[string]any{"response": r.object("completed", responsesUsage(p.usage))})
}

// oneResponse answers a Responses API request that did not ask for a
// stream with the completed response object.
func (s *Server) oneResponse(ctx context.Context, w http.ResponseWriter, p *plan, model string) {
	if p.st.Hang || p.st.StallAfter > 0 {
		hang(ctx, w, "application/json")
		return
	}
	r := newResponseObject(s.newID("resp_"), model)
	if len(p.parts) > 0 {
		r.output = append(r.output, reasoningItem(s.newID("rs_"), p.parts))
	}
	if p.text != nil {
		r.output = append(r.output, messageItem(s.newID("msg_"), "completed", &p.fullText))
	}
	for _, c := range p.calls {
		r.output = append(r.output, callItem(s.newID("fc_"), "completed", c, c.args))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(r.object("completed", responsesUsage(p.usage)))
}

// responseObject is a Responses API response being built.
type responseObject struct {
	id, model string
	created   int64
	output    []any
}

func newResponseObject(id, model string) *responseObject {
	return &responseObject{id: id, model: model, created: time.Now().Unix(), output: []any{}}
}

func (r *responseObject) object(status string, usage any) map[string]any {
	return map[string]any{
		"id": r.id, "object": "response", "created_at": r.created, "status": status,
		"model": r.model, "output": r.output, "usage": usage,
		"error": nil, "incomplete_details": nil, "parallel_tool_calls": true,
	}
}

func responsesUsage(u Usage) map[string]any {
	return map[string]any{
		"input_tokens":          u.Input,
		"input_tokens_details":  map[string]any{"cached_tokens": u.Cached},
		"output_tokens":         u.Output,
		"output_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
		"total_tokens":          u.Input + u.Output,
	}
}

func reasoningItem(id string, parts []string) map[string]any {
	summary := make([]any, 0, len(parts))
	for _, t := range parts {
		summary = append(summary, map[string]any{"type": "summary_text", "text": t})
	}
	return map[string]any{"id": id, "type": "reasoning", "summary": summary}
}

func textPart(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
}

// messageItem is an assistant message; text nil means no content yet.
func messageItem(id, status string, text *string) map[string]any {
	content := []any{}
	if text != nil {
		content = append(content, textPart(*text))
	}
	return map[string]any{"id": id, "type": "message", "status": status, "role": "assistant", "content": content}
}

func callItem(id, status string, c plannedCall, args string) map[string]any {
	if c.custom {
		return map[string]any{
			"id": id, "type": "custom_tool_call", "status": status,
			"call_id": c.callID, "name": c.name, "input": args,
		}
	}
	return map[string]any{
		"id": id, "type": "function_call", "status": status,
		"call_id": c.callID, "name": c.name, "arguments": args,
	}
}

// event writes one Responses event: "event: typ" and a data object that
// starts with type and sequence_number, followed by fields.
func (sw *stream) event(typ string, fields map[string]any) {
	if sw.stopped {
		return
	}
	b, err := json.Marshal(fields)
	if err != nil {
		sw.stopped = true
		return
	}
	sw.eventHead(typ)
	if len(b) > 2 {
		sw.buf = append(sw.buf, ',')
		sw.buf = append(sw.buf, b[1:]...)
	} else {
		sw.buf = append(sw.buf, '}')
	}
	sw.buf = append(sw.buf, '\n', '\n')
	sw.flushBuf()
}

func (sw *stream) eventHead(typ string) {
	b := append(sw.buf[:0], "event: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: {\"type\":\""...)
	b = append(b, typ...)
	b = append(b, `","sequence_number":`...)
	b = strconv.AppendInt(b, int64(sw.seq), 10)
	sw.seq++
	sw.buf = b
}

// deltaEvent writes a delta event without going through encoding/json:
// this is the hot loop of a long stream. subKey (`,"content_index":` or
// `,"summary_index":`) adds that index when not empty.
func (sw *stream) deltaEvent(typ, itemID string, outIdx int, subKey string, sub int, delta string, logprobs bool) {
	if sw.stopped {
		return
	}
	sw.eventHead(typ)
	b := append(sw.buf, `,"item_id":"`...)
	b = append(b, itemID...) // ids are ASCII letters, digits and '_'
	b = append(b, `","output_index":`...)
	b = strconv.AppendInt(b, int64(outIdx), 10)
	if subKey != "" {
		b = append(b, subKey...)
		b = strconv.AppendInt(b, int64(sub), 10)
	}
	b = append(b, `,"delta":`...)
	b = AppendJSONString(b, delta)
	if logprobs {
		b = append(b, `,"logprobs":[]`...)
	}
	sw.buf = append(b, "}\n\n"...)
	sw.flushBuf()
}
