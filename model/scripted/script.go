package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Script is what the server answers. The zero Script answers every request
// with a one-delta "done." message.
type Script struct {
	// Rules are tried in order; the first whose Match occurs in the text of
	// the last user message (ignoring case) answers the request.
	Rules []Rule
	// Default answers when no rule matches. Empty means one step with the
	// text "done.".
	Default []Step
}

// Rule answers the user messages that contain Match (ignoring case; an
// empty Match matches everything) with Steps: Steps[0] for the request that
// follows the user message, Steps[i] after the i-th round of tool outputs.
type Rule struct {
	Match string
	Steps []Step
	// Sequential picks Steps[i] for the i-th request the rule answers
	// (counted by the server since the last SetScript), whatever the
	// conversation holds. A client that compacts its context rewrites the
	// conversation, so the rounds of tool outputs no longer say how far
	// the agent got; the count does. Past the last step: "done.".
	Sequential bool
}

// Step is one model response.
//
// A response carries, in this order: a reasoning item (when Reasoning is
// set), an assistant message (when there is text), and function calls (one
// per ToolCalls entry, all in the same response, i.e. parallel calls). A
// Step with none of these answers with an empty response.
type Step struct {
	// Text is the assistant message. It is streamed in word-sized deltas
	// (each delta is a word plus the whitespace after it, so the deltas
	// concatenate to Text), or in Deltas chunks when Deltas > 0.
	Text string
	// Deltas, with Text empty, streams Deltas copies of DeltaText. With Text
	// set it is the number of chunks Text is cut into (at most one per
	// character).
	Deltas int
	// DeltaText is the repeated delta when Text is empty; "word " if empty.
	// Set with Text and Deltas both empty, it is streamed once.
	DeltaText string
	// Reasoning holds the parts of the reasoning summary, each streamed in
	// word-sized deltas. Responses: a reasoning item with
	// response.reasoning_summary_* events, one summary part per entry. Chat:
	// reasoning_content deltas, parts separated by a blank line.
	Reasoning []string
	// ToolCalls are emitted after the text, in one response.
	ToolCalls []ToolCall

	// HTTPError, when non-zero, answers with this HTTP status and an OpenAI
	// error body instead of a stream.
	HTTPError int
	// ErrorMessage is the error body's message (a generic one if empty).
	ErrorMessage string
	// FailTimes, with HTTPError, fails only the first FailTimes requests
	// that land on this step (counted by the server, per rule and step, since
	// the last SetScript); later requests get the normal answer. Zero fails
	// every request.
	FailTimes int

	// TTFT is the delay before the first byte of the answer.
	TTFT time.Duration
	// InterDelta is the pause before every delta but the first (text,
	// reasoning and tool-argument deltas alike).
	InterDelta time.Duration
	// StallAfter, when > 0, stops the stream after that many deltas (all
	// kinds counted, in stream order) and holds the connection open without
	// sending anything more until the client goes away. If the step has
	// fewer deltas, the stream stalls before its final event, so the
	// response never completes. Zero or negative: no stall. To stall before
	// the first event, use Hang.
	StallAfter int
	// CutAfter, when > 0, drops the connection abruptly after that many
	// deltas (counted as for StallAfter): no final event, no clean end of
	// the body.
	CutAfter int
	// FailAfter, when > 0, ends the stream after that many deltas with an
	// in-stream error carrying ErrorMessage: a Responses "response.failed"
	// event, or a Chat chunk holding "error".
	FailAfter int
	// Endless makes the assistant message never end: after Text (or the
	// Deltas copies of DeltaText), DeltaText ("word " if empty) is streamed
	// again and again, generated as it goes, until the client goes away.
	// StallAfter still applies. The response never completes.
	Endless bool
	// Hang sends the response headers (status 200, text/event-stream) and
	// then nothing until the client goes away. A request that did not ask
	// for a stream gets the same treatment (with application/json) when
	// Hang or StallAfter is set.
	Hang bool

	// Usage is reported in the final event (Responses response.completed;
	// Chat the usage chunk or the non-streamed body). When nil the server
	// reports plausible numbers: input 100 plus a quarter of the request
	// body's bytes, output the number of deltas, reasoning the number of
	// reasoning deltas, cached 0.
	Usage *Usage
}

// ToolCall is one function call in a Step.
type ToolCall struct {
	// Name is the function to call. Empty: the first tool the request
	// advertises among exec_command, shell, shell_command and bash, else its
	// first function tool, else "exec_command".
	Name string
	// Arguments is the raw JSON arguments string. When empty it is built from
	// Command: {"cmd": Command} for exec_command, {"command": Command} for any
	// other tool; "{}" when Command is empty too.
	Arguments string
	// Command is the shell command used to build Arguments.
	Command string
	// CallID is the call's id; empty means a generated "call_<n>".
	CallID string
	// Input is the raw text of a free-form tool call (apply_patch, say).
	// When the request advertises Name as a Responses custom tool, the call
	// is streamed as a custom_tool_call; otherwise Arguments is built as
	// {"input": Input}, the form free-form tools take on the Chat wire.
	Input string
}

// Usage is the token usage a response reports. Total is Input + Output.
type Usage struct {
	Input, Cached, Output, Reasoning int64
}

// doneStep answers requests past the end of a rule's steps, and is the
// default Default.
var doneStep = Step{Text: "done."}

// textChunks returns the deltas of the assistant message, or nil when the
// step has no message.
func (st *Step) textChunks() []string {
	switch {
	case st.Text != "" && st.Deltas > 0:
		return splitN(st.Text, st.Deltas)
	case st.Text != "":
		return splitWords(st.Text)
	case st.Deltas > 0 || st.DeltaText != "":
		d := st.DeltaText
		if d == "" {
			d = "word "
		}
		n := max(st.Deltas, 1)
		out := make([]string, n)
		for i := range out {
			out[i] = d
		}
		return out
	}
	return nil
}

// splitWords cuts s after each run of whitespace that follows a word, so
// that the pieces concatenate to s: "Hi there,\nyou" → "Hi ", "there,\n",
// "you".
func splitWords(s string) []string {
	var out []string
	start := 0
	prevSpace := false
	for i, r := range s {
		sp := unicode.IsSpace(r)
		if !sp && prevSpace && i > start {
			if strings.TrimSpace(s[start:i]) != "" {
				out = append(out, s[start:i])
				start = i
			}
		}
		prevSpace = sp
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// splitN cuts s into n pieces of about the same number of characters (fewer
// when s is shorter than n characters), never inside a UTF-8 sequence.
func splitN(s string, n int) []string {
	runes := utf8.RuneCountInString(s)
	if n > runes {
		n = runes
	}
	if n <= 1 {
		return []string{s}
	}
	out := make([]string, 0, n)
	start, ri, next := 0, 0, 1
	for i := range s {
		if ri == next*runes/n && ri > 0 {
			out = append(out, s[start:i])
			start = i
			next++
		}
		ri++
	}
	return append(out, s[start:])
}

// splitArgs cuts a tool-argument string into two deltas (one when it is a
// single character), as real endpoints never send arguments in one piece.
func splitArgs(s string) []string {
	if utf8.RuneCountInString(s) < 2 {
		return []string{s}
	}
	return splitN(s, 2)
}

// LoadScript reads the JSON form of a Script (see the package
// documentation). Unknown keys are an error.
func LoadScript(r io.Reader) (Script, error) {
	var w wireScript
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return Script{}, fmt.Errorf("scripted: load script: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Script{}, errors.New("scripted: load script: trailing data after the script")
	}
	return w.script()
}

// MarshalJSON writes the JSON form LoadScript reads. Durations are written
// in whole milliseconds (TTFT) and microseconds (InterDelta).
func (s Script) MarshalJSON() ([]byte, error) {
	return json.Marshal(wireFromScript(s))
}

// UnmarshalJSON reads the JSON form LoadScript reads.
func (s *Script) UnmarshalJSON(b []byte) error {
	sc, err := LoadScript(bytes.NewReader(b))
	if err != nil {
		return err
	}
	*s = sc
	return nil
}

type wireScript struct {
	Rules   []wireRule `json:"rules,omitempty"`
	Default []wireStep `json:"default,omitempty"`
}

type wireRule struct {
	Match      string     `json:"match"`
	Steps      []wireStep `json:"steps"`
	Sequential bool       `json:"sequential,omitempty"`
}

type wireStep struct {
	Text         string         `json:"text,omitempty"`
	Deltas       int            `json:"deltas,omitempty"`
	DeltaText    string         `json:"delta_text,omitempty"`
	Reasoning    []string       `json:"reasoning,omitempty"`
	ToolCalls    []wireToolCall `json:"tool_calls,omitempty"`
	HTTPError    int            `json:"http_error,omitempty"`
	ErrorMessage string         `json:"error_message,omitempty"`
	FailTimes    int            `json:"fail_times,omitempty"`
	TTFTMs       int64          `json:"ttft_ms,omitempty"`
	InterDeltaUs int64          `json:"inter_delta_us,omitempty"`
	StallAfter   int            `json:"stall_after,omitempty"`
	Hang         bool           `json:"hang,omitempty"`
	Endless      bool           `json:"endless,omitempty"`
	CutAfter     int            `json:"cut_after,omitempty"`
	FailAfter    int            `json:"fail_after,omitempty"`
	Usage        *wireUsage     `json:"usage,omitempty"`
}

type wireToolCall struct {
	Name string `json:"name,omitempty"`
	// Arguments is a JSON string holding the arguments, or (for hand-written
	// scripts) the arguments object itself.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Command   string          `json:"command,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Input     string          `json:"input,omitempty"`
}

type wireUsage struct {
	Input     int64 `json:"input"`
	Cached    int64 `json:"cached"`
	Output    int64 `json:"output"`
	Reasoning int64 `json:"reasoning"`
}

func (w wireScript) script() (Script, error) {
	var s Script
	for i, r := range w.Rules {
		steps, err := stepsFromWire(r.Steps)
		if err != nil {
			return Script{}, fmt.Errorf("scripted: load script: rules[%d]: %w", i, err)
		}
		s.Rules = append(s.Rules, Rule{Match: r.Match, Steps: steps, Sequential: r.Sequential})
	}
	def, err := stepsFromWire(w.Default)
	if err != nil {
		return Script{}, fmt.Errorf("scripted: load script: default: %w", err)
	}
	s.Default = def
	return s, nil
}

func stepsFromWire(ws []wireStep) ([]Step, error) {
	var out []Step
	for i, w := range ws {
		st := Step{
			Text: w.Text, Deltas: w.Deltas, DeltaText: w.DeltaText, Reasoning: w.Reasoning,
			HTTPError: w.HTTPError, ErrorMessage: w.ErrorMessage, FailTimes: w.FailTimes,
			TTFT:       time.Duration(w.TTFTMs) * time.Millisecond,
			InterDelta: time.Duration(w.InterDeltaUs) * time.Microsecond,
			StallAfter: w.StallAfter, Hang: w.Hang, Endless: w.Endless, CutAfter: w.CutAfter, FailAfter: w.FailAfter,
		}
		if w.Usage != nil {
			st.Usage = &Usage{Input: w.Usage.Input, Cached: w.Usage.Cached, Output: w.Usage.Output, Reasoning: w.Usage.Reasoning}
		}
		for j, tc := range w.ToolCalls {
			args, err := argsFromWire(tc.Arguments)
			if err != nil {
				return nil, fmt.Errorf("steps[%d].tool_calls[%d].arguments: %w", i, j, err)
			}
			st.ToolCalls = append(st.ToolCalls, ToolCall{Name: tc.Name, Arguments: args, Command: tc.Command, CallID: tc.CallID, Input: tc.Input})
		}
		out = append(out, st)
	}
	return out, nil
}

// argsFromWire accepts the arguments as a JSON string or as a JSON value.
func argsFromWire(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return "", err
	}
	return buf.String(), nil
}

func wireFromScript(s Script) wireScript {
	var w wireScript
	for _, r := range s.Rules {
		w.Rules = append(w.Rules, wireRule{Match: r.Match, Steps: stepsToWire(r.Steps), Sequential: r.Sequential})
	}
	w.Default = stepsToWire(s.Default)
	return w
}

func stepsToWire(steps []Step) []wireStep {
	var out []wireStep
	for _, st := range steps {
		w := wireStep{
			Text: st.Text, Deltas: st.Deltas, DeltaText: st.DeltaText, Reasoning: st.Reasoning,
			HTTPError: st.HTTPError, ErrorMessage: st.ErrorMessage, FailTimes: st.FailTimes,
			TTFTMs: st.TTFT.Milliseconds(), InterDeltaUs: st.InterDelta.Microseconds(),
			StallAfter: st.StallAfter, Hang: st.Hang, Endless: st.Endless, CutAfter: st.CutAfter, FailAfter: st.FailAfter,
		}
		if st.Usage != nil {
			u := *st.Usage
			w.Usage = &wireUsage{Input: u.Input, Cached: u.Cached, Output: u.Output, Reasoning: u.Reasoning}
		}
		for _, tc := range st.ToolCalls {
			var args json.RawMessage
			if tc.Arguments != "" {
				args, _ = json.Marshal(tc.Arguments) // a string never fails
			}
			w.ToolCalls = append(w.ToolCalls, wireToolCall{Name: tc.Name, Arguments: args, Command: tc.Command, CallID: tc.CallID, Input: tc.Input})
		}
		out = append(out, w)
	}
	return out
}

// DemoScript is the script behind the offline `apserver demo`: a greeting
// gets a short streamed answer with reasoning, "run the tests" (or any
// message mentioning tests) gets a harmless shell command followed by a
// summary, and anything else gets a note on what to try.
func DemoScript() Script {
	greeting := []Step{{
		Reasoning: []string{"The user is saying hello. Greet them and explain what this demo can do."},
		Text: "Hello! I'm the offline demo model: no network, no API key, every answer is scripted. " +
			"Ask me to \"run the tests\" to watch a tool call go through the whole loop.",
		InterDelta: 15 * time.Millisecond,
	}}
	tests := []Step{
		{
			Reasoning:  []string{"The user wants the test suite run. Run it in the workspace and report the result."},
			Text:       "I'll run the tests.",
			ToolCalls:  []ToolCall{{Command: `echo "running tests..." && ls && echo "2 passed"`}},
			InterDelta: 15 * time.Millisecond,
		},
		{
			Text:       "All tests passed (2 passed). Nothing needs fixing.",
			InterDelta: 15 * time.Millisecond,
		},
	}
	return Script{
		Rules: []Rule{
			{Match: "test", Steps: tests},
			{Match: "hello", Steps: greeting},
			{Match: "hey", Steps: greeting},
		},
		Default: []Step{{
			Text: "This is the offline demo, so my answers are scripted. " +
				"Try \"hello\" or \"run the tests\".",
			InterDelta: 15 * time.Millisecond,
		}},
	}
}
