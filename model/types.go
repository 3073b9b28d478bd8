package model

import (
	"encoding/json"
	"fmt"
	"time"
)

// Wire selects the HTTP API a provider speaks.
type Wire string

const (
	// WireResponses is the OpenAI Responses API: POST {BaseURL}/responses.
	WireResponses Wire = "responses"
	// WireChat is the Chat Completions API: POST {BaseURL}/chat/completions.
	WireChat Wire = "chat"
)

// ParseWire validates a wire name. The empty string means WireResponses.
func ParseWire(s string) (Wire, error) {
	switch Wire(s) {
	case "", WireResponses:
		return WireResponses, nil
	case WireChat:
		return WireChat, nil
	}
	return "", fmt.Errorf("unknown wire %q (want %q or %q)", s, WireResponses, WireChat)
}

// Defaults applied by NewClient to zero Provider fields.
const (
	DefaultMaxRetries  = 4
	DefaultBackoffBase = 200 * time.Millisecond
	MaxBackoff         = 10 * time.Second
	DefaultIdleTimeout = 60 * time.Second
	// MaxRetryAfter caps a server's Retry-After so that a bogus header cannot
	// park a turn for hours.
	MaxRetryAfter = 2 * time.Minute
	// DefaultMaxOutputBytes and DefaultMaxResponseTime bound one response:
	// well above what a real model streams in one answer (its longest
	// legitimate responses are some 100 KiB over a few minutes), low enough
	// that a runaway stream is cut before it costs much.
	DefaultMaxOutputBytes  = 1 << 20
	DefaultMaxResponseTime = 10 * time.Minute
)

// Provider is one model server and how to talk to it.
type Provider struct {
	Name    string
	BaseURL string // e.g. https://api.openai.com/v1 (include the /v1)
	APIKey  string // sent as "Authorization: Bearer"; empty = no header
	// APIKeyEnv names the environment variable the key is read from, for
	// the hint an authentication error gives; "" when there is none.
	APIKeyEnv string
	Wire      Wire // empty = WireResponses
	Headers   map[string]string

	// MaxRetries is the number of retries after the first attempt.
	// 0 means DefaultMaxRetries; a negative value means no retries.
	MaxRetries int
	// BackoffBase is the first retry delay before jitter; it doubles per
	// retry, capped at MaxBackoff. 0 means DefaultBackoffBase.
	BackoffBase time.Duration
	// IdleTimeout aborts an attempt when no SSE event (or response header)
	// arrives for this long. 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxOutputBytes caps the text one response streams: message, reasoning
	// and tool-call input together, in bytes. Past it the stream is
	// cancelled with ErrKindOutputLimit. 0 means DefaultMaxOutputBytes; a
	// negative value means no cap.
	MaxOutputBytes int64
	// MaxResponseTime caps the wall time of one Stream call, retries
	// included; past it the stream is cancelled with ErrKindResponseTimeout.
	// 0 means DefaultMaxResponseTime; a negative value means no cap.
	MaxResponseTime time.Duration
}

// Tool is a tool offered to the model: a function tool taking JSON
// arguments, or, with Freeform set, a free-form tool taking raw text.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON schema object; empty = no parameters
	// Freeform makes the tool a Responses "custom" tool whose input is raw
	// text constrained by a grammar (Codex offers apply_patch this way). On
	// the Chat wire, which has no such tools, it is sent as a function tool
	// with one string parameter "input"; calls come back with Custom set and
	// the text in Arguments either way.
	Freeform *Freeform
}

// Freeform is the input format of a free-form tool.
type Freeform struct {
	Syntax     string // "lark" or "regex"
	Definition string // the grammar
}

// EntryKind says what a history Entry records.
type EntryKind int

const (
	EntryUser EntryKind = iota + 1
	EntryAssistant
	EntryToolCall
	EntryToolOutput
)

func (k EntryKind) String() string {
	switch k {
	case EntryUser:
		return "user"
	case EntryAssistant:
		return "assistant"
	case EntryToolCall:
		return "toolCall"
	case EntryToolOutput:
		return "toolOutput"
	}
	return fmt.Sprintf("EntryKind(%d)", int(k))
}

// Entry is one history record; the session rebuilds the input from its store.
type Entry struct {
	Kind EntryKind
	Text string // EntryUser, EntryAssistant
	// Images are the user's images (EntryUser), each an http(s) URL or a
	// data: URL; they follow Text in the message.
	Images    []string `json:",omitempty"`
	CallID    string   // EntryToolCall, EntryToolOutput
	Name      string   // EntryToolCall
	Arguments string   // EntryToolCall: raw JSON string (raw input text when Custom)
	Output    string   // EntryToolOutput
	// Custom marks a call of a free-form tool (and its output): on the
	// Responses wire they are custom_tool_call / custom_tool_call_output.
	Custom bool
}

// Request is one model call.
type Request struct {
	Model           string
	Instructions    string // system prompt
	Input           []Entry
	Tools           []Tool
	ReasoningEffort string // "" = not sent
	// ReasoningSummary is the reasoning summary asked for with an effort
	// (Responses wire): "auto" (also when ""), "concise", "detailed", or
	// "none" for no summary.
	ReasoningSummary string
	// ServiceTier is the provider's processing tier ("flex", "priority",
	// …); "" = not sent.
	ServiceTier       string
	ParallelToolCalls bool // only sent when Tools is non-empty
	// OutputSchema, when set, asks for structured output (see outputschema.go).
	OutputSchema *OutputSchema
}

// ToolCall is a complete function call requested by the model.
type ToolCall struct {
	CallID    string
	Name      string
	Arguments string // raw JSON, fully accumulated; the raw input text when Custom
	// Custom: a call of a free-form tool (see Tool.Freeform).
	Custom bool
}

// Usage is the token accounting of one response.
type Usage struct {
	InputTokens           int64
	CachedInputTokens     int64
	OutputTokens          int64
	ReasoningOutputTokens int64
	TotalTokens           int64
}

// EventKind says which fields of an Event are meaningful.
type EventKind int

const (
	// EvTextDelta: ItemID, Text (agent message text).
	EvTextDelta EventKind = iota + 1
	// EvReasoningPartAdded: ItemID, Index (a reasoning summary part started).
	EvReasoningPartAdded
	// EvReasoningSummaryDelta: ItemID, Index, Text.
	EvReasoningSummaryDelta
	// EvReasoningTextDelta: ItemID, Index, Text (raw reasoning content).
	EvReasoningTextDelta
	// EvMessageDone: ItemID, Text (the whole message when the server sent
	// it in a final event; empty when it only streamed deltas, whose
	// concatenation is then the message: the client keeps no copy, so that
	// a long answer is held once, by the caller).
	EvMessageDone
	// EvReasoningDone: ItemID, Summary, Content.
	EvReasoningDone
	// EvToolCall: Call.
	EvToolCall
	// EvCompleted: Usage. Always the last event of a successful Stream.
	EvCompleted
	// EvRetry: Attempt (1 = first retry), Delay, Err. Nothing has been
	// emitted for the request yet; a new attempt starts after Delay.
	EvRetry
)

func (k EventKind) String() string {
	switch k {
	case EvTextDelta:
		return "TextDelta"
	case EvReasoningPartAdded:
		return "ReasoningPartAdded"
	case EvReasoningSummaryDelta:
		return "ReasoningSummaryDelta"
	case EvReasoningTextDelta:
		return "ReasoningTextDelta"
	case EvMessageDone:
		return "MessageDone"
	case EvReasoningDone:
		return "ReasoningDone"
	case EvToolCall:
		return "ToolCall"
	case EvCompleted:
		return "Completed"
	case EvRetry:
		return "Retry"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is one step of a model stream. Which fields are set depends on Kind.
type Event struct {
	Kind    EventKind
	ItemID  string
	Index   int
	Text    string
	Summary []string
	Content []string
	Call    ToolCall
	Usage   Usage
	Attempt int
	Delay   time.Duration
	Err     error
}
