package model

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"

	openai "github.com/sashabaranov/go-openai"
)

// noOutput stands in for an empty tool output: Chat servers reject a tool
// message without content, and go-openai omits an empty one.
const noOutput = "(no output)"

func buildChatRequest(req Request) openai.ChatCompletionRequest {
	msgs := make([]openai.ChatCompletionMessage, 0, len(req.Input)+1)
	if req.Instructions != "" {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: req.Instructions})
	}
	// lastAssistant is the index of the assistant message that tool calls
	// join, or -1 once anything else has followed it.
	lastAssistant := -1
	for _, e := range req.Input {
		switch e.Kind {
		case EntryUser:
			m := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: e.Text}
			if len(e.Images) > 0 {
				// Content and MultiContent are exclusive: the text becomes
				// the first part.
				m.Content = ""
				if e.Text != "" {
					m.MultiContent = append(m.MultiContent, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: e.Text})
				}
				for _, u := range e.Images {
					m.MultiContent = append(m.MultiContent, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL,
						ImageURL: &openai.ChatMessageImageURL{URL: u, Detail: openai.ImageURLDetailAuto}})
				}
			}
			msgs = append(msgs, m)
			lastAssistant = -1
		case EntryAssistant:
			if e.Text == "" {
				continue
			}
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: e.Text})
			lastAssistant = len(msgs) - 1
		case EntryToolCall:
			if lastAssistant < 0 {
				msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant})
				lastAssistant = len(msgs) - 1
			}
			args := e.Arguments
			if e.Custom {
				b, _ := json.Marshal(map[string]string{"input": e.Arguments})
				args = string(b)
			}
			if args == "" {
				args = "{}"
			}
			m := &msgs[lastAssistant]
			m.ToolCalls = append(m.ToolCalls, openai.ToolCall{
				ID:       e.CallID,
				Type:     openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: e.Name, Arguments: args},
			})
		case EntryToolOutput:
			out := e.Output
			if out == "" {
				out = noOutput
			}
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: e.CallID, Content: out})
			lastAssistant = -1
		}
	}
	r := openai.ChatCompletionRequest{
		Model:         req.Model,
		Messages:      msgs,
		Stream:        true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if t.Freeform != nil {
			params = freeformSchema
		}
		if len(params) == 0 {
			params = emptySchema
		}
		r.Tools = append(r.Tools, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name:        t.Name,
			Description: t.Description,
			Parameters:  params,
		}})
	}
	if len(req.Tools) > 0 {
		r.ParallelToolCalls = req.ParallelToolCalls
	}
	r.ReasoningEffort = req.ReasoningEffort
	r.ServiceTier = openai.ServiceTier(req.ServiceTier)
	r.ResponseFormat = req.OutputSchema.chatFormat()
	return r
}

// ccChunk is the subset of a chat.completion.chunk apserver reads, plus the
// non-standard reasoning fields (reasoning_content: llama.cpp, vLLM,
// DeepSeek; reasoning: OpenRouter, newer vLLM, Ollama) that go-openai's
// stream type only partly knows.
type ccChunk struct {
	ID      string          `json:"id"`
	Choices []ccChoice      `json:"choices"`
	Usage   *ccUsage        `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type ccChoice struct {
	Index        int     `json:"index"`
	Delta        ccDelta `json:"delta"`
	FinishReason string  `json:"finish_reason"`
}

type ccDelta struct {
	Content          string            `json:"content"`
	ReasoningContent string            `json:"reasoning_content"`
	Reasoning        string            `json:"reasoning"`
	ToolCalls        []ccToolCallDelta `json:"tool_calls"`
}

type ccToolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type ccUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

type ccCall struct {
	index int // the stream's tool_calls index; -1 when the server sent none
	id    string
	name  string
	args  []byte
}

// freeformSchema stands in for a free-form tool on the Chat wire.
var freeformSchema = json.RawMessage(`{"type":"object","properties":{"input":{"type":"string","description":"the raw input text"}},"required":["input"]}`)

// unwrapFreeform turns the function-call form of a free-form tool's call
// back into raw input.
func unwrapFreeform(call ToolCall) ToolCall {
	var a struct {
		Input *string `json:"input"`
	}
	if json.Unmarshal([]byte(call.Arguments), &a) == nil && a.Input != nil {
		call.Arguments = *a.Input
	}
	call.Custom = true
	return call
}

type chatParser struct {
	// freeform names the free-form tools of the request.
	freeform map[string]bool
	em       *emitter
	chunk    ccChunk

	base          string // id stem for generated item ids
	msgID, rsID   string
	sawText       bool
	reasoning     TextBuffer
	reasoningOpen bool
	calls         []ccCall
	finished      bool // finish_reason seen and items finalized
	usage         Usage
}

func newChatParser(em *emitter) *chatParser {
	return &chatParser{em: em}
}

func newChatParserFor(req Request, em *emitter) *chatParser {
	p := newChatParser(em)
	for _, t := range req.Tools {
		if t.Freeform != nil {
			if p.freeform == nil {
				p.freeform = map[string]bool{}
			}
			p.freeform[t.Name] = true
		}
	}
	return p
}

func (p *chatParser) line(b []byte) (bool, *Error) {
	// Reuse the choices array; encoding/json does not zero reused elements.
	choices := p.chunk.Choices[:cap(p.chunk.Choices)]
	clear(choices)
	p.chunk = ccChunk{Choices: choices[:0]}
	if !p.decodeFast(b) {
		clear(choices)
		p.chunk = ccChunk{Choices: choices[:0]}
		if err := json.Unmarshal(b, &p.chunk); err != nil {
			var te *json.UnmarshalTypeError
			if !errors.As(err, &te) {
				return false, &Error{Kind: ErrKindOther, Message: "malformed stream chunk: " + err.Error()}
			}
		}
	}
	c := &p.chunk
	if len(c.Error) > 0 && string(c.Error) != "null" {
		code, typ, msg := parseErrorBody(append(append([]byte(`{"error":`), c.Error...), '}'))
		return false, streamError(code, typ, msg)
	}
	if u := c.Usage; u != nil {
		p.usage = Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
		if d := u.PromptTokensDetails; d != nil {
			p.usage.CachedInputTokens = d.CachedTokens
		}
		if d := u.CompletionTokensDetails; d != nil {
			p.usage.ReasoningOutputTokens = d.ReasoningTokens
		}
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 || p.finished {
			continue
		}
		d := &ch.Delta
		r := d.ReasoningContent
		if r == "" {
			r = d.Reasoning
		}
		if r != "" {
			if p.rsID == "" {
				p.rsID = "rs_" + p.idBase()
			}
			p.reasoningOpen = true
			p.em.count(len(r))
			p.reasoning.WriteString(r)
			p.em.send(Event{Kind: EvReasoningTextDelta, ItemID: p.rsID, Text: r})
		}
		if d.Content != "" {
			p.closeReasoning()
			if p.msgID == "" {
				p.msgID = "msg_" + p.idBase()
			}
			p.em.count(len(d.Content))
			p.sawText = true // the text itself is the caller's (see EvMessageDone)
			p.em.send(Event{Kind: EvTextDelta, ItemID: p.msgID, Text: d.Content})
		}
		for j := range d.ToolCalls {
			p.closeReasoning()
			p.toolCallDelta(&d.ToolCalls[j])
		}
		if ch.FinishReason != "" {
			p.finish()
		}
	}
	return false, nil
}

// decodeFast decodes the common chunk (one choice with content or reasoning
// text, no tool calls, no usage) into p.chunk without encoding/json. It
// returns false for anything else; the caller then decodes in full.
func (p *chatParser) decodeFast(b []byte) bool {
	c := &p.chunk
	s := jscan{b: b}
	if !s.open('{') {
		return false
	}
	for first := true; s.more('}', first); first = false {
		k := s.key()
		if s.bad {
			return false
		}
		switch string(k) {
		case "id":
			raw, esc := s.rawString()
			if esc {
				return false
			}
			if p.base == "" {
				c.ID = string(raw)
			}
		case "choices":
			if s.null() {
				continue
			}
			if !s.open('[') {
				return false
			}
			for f := true; s.more(']', f); f = false {
				if len(c.Choices) > 0 {
					return false
				}
				c.Choices = append(c.Choices, ccChoice{})
				if !fastChoice(&s, &c.Choices[0]) {
					return false
				}
			}
		case "usage", "error":
			if !s.null() {
				return false
			}
		default:
			s.skip()
		}
		if s.bad {
			return false
		}
	}
	return s.end()
}

func fastChoice(s *jscan, ch *ccChoice) bool {
	if !s.open('{') {
		return false
	}
	for first := true; s.more('}', first); first = false {
		k := s.key()
		if s.bad {
			return false
		}
		switch string(k) {
		case "index":
			ch.Index = s.int()
		case "finish_reason":
			ch.FinishReason = s.str()
		case "delta":
			if s.null() {
				continue
			}
			if !s.open('{') {
				return false
			}
			for f := true; s.more('}', f); f = false {
				k := s.key()
				if s.bad {
					return false
				}
				switch string(k) {
				case "content":
					ch.Delta.Content = s.str()
				case "reasoning_content":
					ch.Delta.ReasoningContent = s.str()
				case "reasoning":
					ch.Delta.Reasoning = s.str()
				case "tool_calls", "function_call":
					if !s.null() && !s.emptyArray() {
						return false
					}
				default:
					s.skip()
				}
				if s.bad {
					return false
				}
			}
		default:
			s.skip()
		}
		if s.bad {
			return false
		}
	}
	return !s.bad
}

func (p *chatParser) idBase() string {
	if p.base == "" {
		if p.chunk.ID != "" {
			p.base = p.chunk.ID
		} else {
			p.base = randomID()
		}
	}
	return p.base
}

func randomID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (p *chatParser) toolCallDelta(tc *ccToolCallDelta) {
	i := p.callSlot(tc)
	call := &p.calls[i]
	if call.id == "" {
		call.id = tc.ID
	}
	if call.name == "" {
		call.name = tc.Function.Name
	}
	p.em.count(len(tc.Function.Arguments))
	call.args = append(call.args, tc.Function.Arguments...)
}

// callSlot finds the accumulating call a delta belongs to: by index, or by
// id for servers that send no index; a new id at a used index (a server bug
// seen in the wild) starts a new call.
func (p *chatParser) callSlot(tc *ccToolCallDelta) int {
	idx := -1
	if tc.Index != nil {
		idx = *tc.Index
	}
	for i := len(p.calls) - 1; i >= 0; i-- {
		c := &p.calls[i]
		switch {
		case tc.ID != "" && c.id != "" && tc.ID != c.id:
			continue
		case idx >= 0 && c.index == idx, idx < 0 && (tc.ID == "" || tc.ID == c.id):
			return i
		}
	}
	p.calls = append(p.calls, ccCall{index: idx})
	return len(p.calls) - 1
}

func (p *chatParser) closeReasoning() {
	if !p.reasoningOpen {
		return
	}
	p.reasoningOpen = false
	p.em.send(Event{Kind: EvReasoningDone, ItemID: p.rsID, Content: []string{p.reasoning.String()}})
}

// finish emits the completed items once finish_reason arrives; usage and
// [DONE] may still follow.
func (p *chatParser) finish() {
	p.finished = true
	p.closeReasoning()
	if p.sawText {
		p.em.send(Event{Kind: EvMessageDone, ItemID: p.msgID})
	}
	for i := range p.calls {
		c := &p.calls[i]
		id := c.id
		if id == "" {
			id = "call_" + p.idBase() + "_" + strconv.Itoa(i)
		}
		args := string(c.args)
		if args == "" {
			args = "{}"
		}
		call := ToolCall{CallID: id, Name: c.name, Arguments: args}
		if p.freeform[c.name] {
			call = unwrapFreeform(call)
		}
		p.em.send(Event{Kind: EvToolCall, ItemID: id, Call: call})
	}
}

func (p *chatParser) complete() bool { return p.finished }

func (p *chatParser) output() *emitter { return p.em }

func (p *chatParser) eof() *Error {
	if !p.finished {
		return &Error{Kind: ErrKindDisconnected, Message: "stream closed before finish_reason", Retryable: true}
	}
	p.em.send(Event{Kind: EvCompleted, Usage: p.usage})
	return nil
}
