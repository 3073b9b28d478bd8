package model

import (
	"encoding/json"
	"errors"

	openai "github.com/sashabaranov/go-openai"
)

// Responses input items. go-openai types Input as any; these marshal to
// exactly the shapes the API documents.
type rsInputMessage struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content []any  `json:"content"` // rsInputContent, rsInputImage
}

type rsInputImage struct {
	Type     string `json:"type"` // input_image
	ImageURL string `json:"image_url"`
	Detail   string `json:"detail"`
}

type rsInputContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type rsFunctionCall struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type rsCustomCall struct {
	Type   string `json:"type"`
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	Input  string `json:"input"`
}

type rsFunctionCallOutput struct {
	Type   string `json:"type"`
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

func buildResponsesRequest(req Request) openai.CreateResponseRequest {
	input := make([]any, 0, len(req.Input))
	for _, e := range req.Input {
		switch e.Kind {
		case EntryUser:
			content := []any{rsInputContent{Type: "input_text", Text: e.Text}}
			if e.Text == "" && len(e.Images) > 0 {
				content = content[:0]
			}
			for _, u := range e.Images {
				content = append(content, rsInputImage{Type: "input_image", ImageURL: u, Detail: "auto"})
			}
			input = append(input, rsInputMessage{Type: "message", Role: "user", Content: content})
		case EntryAssistant:
			input = append(input, rsInputMessage{Type: "message", Role: "assistant",
				Content: []any{rsInputContent{Type: "output_text", Text: e.Text}}})
		case EntryToolCall:
			if e.Custom {
				input = append(input, rsCustomCall{Type: "custom_tool_call", CallID: e.CallID, Name: e.Name, Input: e.Arguments})
				continue
			}
			args := e.Arguments
			if args == "" {
				args = "{}"
			}
			input = append(input, rsFunctionCall{Type: "function_call", CallID: e.CallID, Name: e.Name, Arguments: args})
		case EntryToolOutput:
			typ := "function_call_output"
			if e.Custom {
				typ = "custom_tool_call_output"
			}
			input = append(input, rsFunctionCallOutput{Type: typ, CallID: e.CallID, Output: e.Output})
		}
	}
	store := false
	r := openai.CreateResponseRequest{
		Model:        req.Model,
		Instructions: req.Instructions,
		Input:        input,
		Store:        &store,
		Stream:       true,
	}
	for _, t := range req.Tools {
		if t.Freeform != nil {
			r.Tools = append(r.Tools, openai.Tool{Type: openai.ToolTypeCustom, Parameters: map[string]any{
				"name":        t.Name,
				"description": t.Description,
				"format":      map[string]any{"type": "grammar", "syntax": t.Freeform.Syntax, "definition": t.Freeform.Definition},
			}})
			continue
		}
		params := t.Parameters
		if len(params) == 0 {
			params = emptySchema
		}
		r.Tools = append(r.Tools, openai.Tool{Type: openai.ToolTypeFunction, Parameters: map[string]any{
			"name":        t.Name,
			"description": t.Description,
			"parameters":  params,
			"strict":      false,
		}})
	}
	if len(req.Tools) > 0 {
		parallel := req.ParallelToolCalls
		r.ParallelToolCalls = &parallel
	}
	if req.ReasoningEffort != "" {
		summary := req.ReasoningSummary
		switch summary {
		case "":
			summary = "auto"
		case "none":
			summary = ""
		}
		r.Reasoning = &openai.ResponseReasoning{Effort: req.ReasoningEffort, Summary: summary}
	}
	r.Text = req.OutputSchema.responsesText()
	r.ServiceTier = req.ServiceTier
	return r
}

// rsEvent is the subset of a Responses stream event apserver reads. It is
// decoded from the raw data line rather than through
// openai.ResponseStreamEvent, which copies every event into Raw and decodes
// many fields (logprobs, annotations, whole responses) we never use.
type rsEvent struct {
	Type         string          `json:"type"`
	ItemID       string          `json:"item_id"`
	OutputIndex  int             `json:"output_index"`
	ContentIndex int             `json:"content_index"`
	SummaryIndex int             `json:"summary_index"`
	Delta        string          `json:"delta"`
	Arguments    string          `json:"arguments"`
	Input        string          `json:"input"`
	Item         *rsItem         `json:"item"`
	Response     *rsResponse     `json:"response"`
	Code         json.RawMessage `json:"code"`
	Message      string          `json:"message"`
	Error        *rsErrorBody    `json:"error"`
}

type rsItem struct {
	ID        string      `json:"id"`
	Type      string      `json:"type"`
	CallID    string      `json:"call_id"`
	Name      string      `json:"name"`
	Arguments string      `json:"arguments"`
	Input     string      `json:"input"`
	Content   []rsContent `json:"content"`
	Summary   []rsContent `json:"summary"`
}

type rsContent struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Refusal string `json:"refusal"`
}

type rsResponse struct {
	Status            string       `json:"status"`
	Error             *rsErrorBody `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Usage *struct {
		InputTokens        int64 `json:"input_tokens"`
		InputTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int64 `json:"output_tokens"`
		OutputTokensDetails *struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
		TotalTokens int64 `json:"total_tokens"`
	} `json:"usage"`
}

type rsErrorBody struct {
	Code    json.RawMessage `json:"code"`
	Type    string          `json:"type"`
	Message string          `json:"message"`
}

type itemKind uint8

const (
	itemOther itemKind = iota
	itemMessage
	itemReasoning
	itemFunctionCall
	itemCustomCall
)

func itemKindOf(t string) itemKind {
	switch t {
	case "message":
		return itemMessage
	case "reasoning":
		return itemReasoning
	case "function_call":
		return itemFunctionCall
	case "custom_tool_call":
		return itemCustomCall
	}
	return itemOther
}

// rsItemState accumulates one output item while it streams.
type rsItemState struct {
	id      string
	kind    itemKind
	callID  string
	name    string
	text    []byte       // function arguments or custom tool input
	summary []TextBuffer // reasoning summary parts by summary_index
	content []TextBuffer // reasoning content parts by content_index
}

type responsesParser struct {
	em    *emitter
	items []*rsItemState // open items, in output order
	ev    rsEvent
}

func newResponsesParser(em *emitter) *responsesParser {
	return &responsesParser{em: em}
}

// find returns the open item with the given id, creating one of kind k when
// the server skipped output_item.added.
func (p *responsesParser) find(id string, k itemKind) *rsItemState {
	for i := len(p.items) - 1; i >= 0; i-- {
		it := p.items[i]
		if id != "" && it.id == id || id == "" && it.kind == k {
			return it
		}
	}
	it := &rsItemState{id: id, kind: k}
	p.items = append(p.items, it)
	return it
}

func (p *responsesParser) remove(it *rsItemState) {
	for i, x := range p.items {
		if x == it {
			p.items = append(p.items[:i], p.items[i+1:]...)
			return
		}
	}
}

// maxParts bounds summary/content indexes taken from the stream.
const maxParts = 1024

func growParts(parts []TextBuffer, i int) []TextBuffer {
	for len(parts) <= i {
		parts = append(parts, TextBuffer{})
	}
	return parts
}

// rsDeltaTypes are the per-token events decodeFast handles.
var rsDeltaTypes = [...]string{
	"response.output_text.delta",
	"response.reasoning_summary_text.delta",
	"response.reasoning_text.delta",
	"response.function_call_arguments.delta",
	"response.custom_tool_call_input.delta",
	"response.refusal.delta",
}

// decodeFast decodes a per-token delta event into p.ev without
// encoding/json. It returns false for anything else (or anything odd); the
// caller then decodes the line in full.
func (p *responsesParser) decodeFast(b []byte) bool {
	ev := &p.ev
	*ev = rsEvent{}
	s := jscan{b: b}
	var typ, itemID []byte
	if !s.open('{') {
		return false
	}
	for first := true; s.more('}', first); first = false {
		k := s.key()
		if s.bad {
			return false
		}
		switch string(k) {
		case "type", "item_id":
			raw, esc := s.rawString()
			if esc {
				return false
			}
			if k[0] == 't' {
				typ = raw
			} else {
				itemID = raw
			}
		case "delta":
			ev.Delta = s.str()
		case "output_index":
			ev.OutputIndex = s.int()
		case "content_index":
			ev.ContentIndex = s.int()
		case "summary_index":
			ev.SummaryIndex = s.int()
		case "item", "response", "error", "code", "message", "arguments":
			return false
		default:
			s.skip()
		}
		if s.bad {
			return false
		}
	}
	if !s.end() {
		return false
	}
	for _, t := range rsDeltaTypes {
		if t == string(typ) {
			ev.Type = t
			ev.ItemID = p.internID(itemID)
			return true
		}
	}
	return false
}

// internID returns the id of an open item equal to raw without allocating,
// or a new string.
func (p *responsesParser) internID(raw []byte) string {
	for i := len(p.items) - 1; i >= 0; i-- {
		if p.items[i].id == string(raw) {
			return p.items[i].id
		}
	}
	return string(raw)
}

func (p *responsesParser) line(b []byte) (bool, *Error) {
	ev := &p.ev
	if p.decodeFast(b) {
		return p.handle()
	}
	*ev = rsEvent{}
	if err := json.Unmarshal(b, ev); err != nil {
		// A field of an unexpected type (some servers extend events) is
		// tolerated: encoding/json still fills in everything else.
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			return false, &Error{Kind: ErrKindOther, Message: "malformed stream event: " + err.Error()}
		}
	}
	return p.handle()
}

// handle acts on the event decoded into p.ev.
func (p *responsesParser) handle() (bool, *Error) {
	ev := &p.ev
	if ev.SummaryIndex < 0 || ev.SummaryIndex >= maxParts || ev.ContentIndex < 0 || ev.ContentIndex >= maxParts {
		return false, &Error{Kind: ErrKindOther, Message: "malformed stream event: part index out of range"}
	}
	switch ev.Type {
	case "response.output_item.added":
		if ev.Item == nil {
			return false, nil
		}
		it := &rsItemState{id: ev.Item.ID, kind: itemKindOf(ev.Item.Type), callID: ev.Item.CallID, name: ev.Item.Name}
		switch it.kind {
		case itemFunctionCall:
			it.text = append(it.text, ev.Item.Arguments...)
		case itemCustomCall:
			it.text = append(it.text, ev.Item.Input...)
		}
		p.items = append(p.items, it)

	case "response.output_text.delta", "response.refusal.delta":
		p.em.count(len(ev.Delta))
		it := p.find(ev.ItemID, itemMessage)
		// The message text is not kept here: the caller has the deltas
		// (see EvMessageDone), and a second copy would double the memory
		// a long answer costs.
		p.em.send(Event{Kind: EvTextDelta, ItemID: it.id, Text: ev.Delta})

	case "response.reasoning_summary_part.added":
		it := p.find(ev.ItemID, itemReasoning)
		it.summary = growParts(it.summary, ev.SummaryIndex)
		p.em.send(Event{Kind: EvReasoningPartAdded, ItemID: it.id, Index: ev.SummaryIndex})

	case "response.reasoning_summary_text.delta":
		p.em.count(len(ev.Delta))
		it := p.find(ev.ItemID, itemReasoning)
		it.summary = growParts(it.summary, ev.SummaryIndex)
		it.summary[ev.SummaryIndex].WriteString(ev.Delta)
		p.em.send(Event{Kind: EvReasoningSummaryDelta, ItemID: it.id, Index: ev.SummaryIndex, Text: ev.Delta})

	case "response.reasoning_text.delta":
		p.em.count(len(ev.Delta))
		it := p.find(ev.ItemID, itemReasoning)
		it.content = growParts(it.content, ev.ContentIndex)
		it.content[ev.ContentIndex].WriteString(ev.Delta)
		p.em.send(Event{Kind: EvReasoningTextDelta, ItemID: it.id, Index: ev.ContentIndex, Text: ev.Delta})

	case "response.function_call_arguments.delta":
		p.em.count(len(ev.Delta))
		it := p.find(ev.ItemID, itemFunctionCall)
		it.text = append(it.text, ev.Delta...)

	case "response.function_call_arguments.done":
		it := p.find(ev.ItemID, itemFunctionCall)
		if ev.Arguments != "" {
			it.text = append(it.text[:0], ev.Arguments...)
		}

	case "response.custom_tool_call_input.delta":
		p.em.count(len(ev.Delta))
		it := p.find(ev.ItemID, itemCustomCall)
		it.text = append(it.text, ev.Delta...)

	case "response.custom_tool_call_input.done":
		it := p.find(ev.ItemID, itemCustomCall)
		if ev.Input != "" {
			it.text = append(it.text[:0], ev.Input...)
		}

	case "response.output_item.done":
		if ev.Item != nil {
			p.itemDone(ev.Item)
		}

	case "response.completed":
		var u Usage
		if r := ev.Response; r != nil && r.Usage != nil {
			u.InputTokens = r.Usage.InputTokens
			u.OutputTokens = r.Usage.OutputTokens
			u.TotalTokens = r.Usage.TotalTokens
			if d := r.Usage.InputTokensDetails; d != nil {
				u.CachedInputTokens = d.CachedTokens
			}
			if d := r.Usage.OutputTokensDetails; d != nil {
				u.ReasoningOutputTokens = d.ReasoningTokens
			}
		}
		p.em.send(Event{Kind: EvCompleted, Usage: u})
		return true, nil

	case "response.incomplete":
		reason := "unknown reason"
		if r := ev.Response; r != nil && r.IncompleteDetails != nil && r.IncompleteDetails.Reason != "" {
			reason = r.IncompleteDetails.Reason
		}
		return false, &Error{Kind: ErrKindOther, Message: "the response is incomplete: " + reason}

	case "response.failed":
		if r := ev.Response; r != nil && r.Error != nil {
			return false, streamError(rawString(r.Error.Code), r.Error.Type, r.Error.Message)
		}
		return false, streamError("", "", "the response failed")

	case "error":
		if ev.Error != nil {
			return false, streamError(rawString(ev.Error.Code), ev.Error.Type, ev.Error.Message)
		}
		return false, streamError(rawString(ev.Code), "", ev.Message)
	}
	return false, nil
}

func (p *responsesParser) itemDone(item *rsItem) {
	k := itemKindOf(item.Type)
	if k == itemOther {
		return
	}
	it := p.find(item.ID, k)
	p.remove(it)
	switch k {
	case itemMessage:
		p.em.send(Event{Kind: EvMessageDone, ItemID: it.id, Text: joinContent(item.Content, "output_text", "refusal")})

	case itemReasoning:
		summary := partsText(item.Summary, "")
		if summary == nil {
			summary = bytesToStrings(it.summary)
		}
		content := partsText(item.Content, "reasoning_text")
		if content == nil {
			content = bytesToStrings(it.content)
		}
		p.em.send(Event{Kind: EvReasoningDone, ItemID: it.id, Summary: summary, Content: content})

	case itemFunctionCall, itemCustomCall:
		call := ToolCall{CallID: item.CallID, Name: item.Name, Arguments: item.Arguments}
		if k == itemCustomCall {
			call.Arguments, call.Custom = item.Input, true
		}
		if call.CallID == "" {
			call.CallID = it.callID
		}
		if call.Name == "" {
			call.Name = it.name
		}
		if call.Arguments == "" {
			call.Arguments = string(it.text)
		}
		p.em.send(Event{Kind: EvToolCall, ItemID: it.id, Call: call})

	}
}

func (p *responsesParser) output() *emitter { return p.em }

// complete is false: a Responses stream is complete only at response.completed.
func (p *responsesParser) complete() bool { return false }

func (p *responsesParser) eof() *Error {
	return &Error{Kind: ErrKindDisconnected, Message: "stream closed before response.completed", Retryable: true}
}

func joinContent(parts []rsContent, types ...string) string {
	var out []byte
	for _, c := range parts {
		for _, t := range types {
			if c.Type == t {
				out = append(out, c.Text...)
				out = append(out, c.Refusal...)
			}
		}
	}
	return string(out)
}

// partsText returns the texts of parts (of type typ, any type if typ is
// ""), or nil when there are none.
func partsText(parts []rsContent, typ string) []string {
	var out []string
	for _, c := range parts {
		if typ == "" || c.Type == typ {
			out = append(out, c.Text)
		}
	}
	return out
}

func bytesToStrings(parts []TextBuffer) []string {
	if len(parts) == 0 {
		return nil
	}
	out := make([]string, len(parts))
	for i := range parts {
		out[i] = parts[i].String()
	}
	return out
}
