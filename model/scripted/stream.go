package scripted

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// plan is a step made concrete for one request: chunks cut, tool names and
// arguments resolved, ids and usage assigned.
type plan struct {
	st        *Step
	reasoning [][]string // deltas of each summary part
	parts     []string   // each summary part in full
	text      []string   // deltas of the assistant message
	fullText  string
	// endless is the delta repeated forever after text (Step.Endless).
	endless string
	calls   []plannedCall
	usage   Usage
}

type plannedCall struct {
	callID, name, args string
	argChunks          []string
	// custom: a custom_tool_call whose input is args (Responses only).
	custom bool
}

func (s *Server) plan(st *Step, in *requestBody, wire string, bodyLen int) *plan {
	p := &plan{st: st, text: st.textChunks()}
	p.fullText = strings.Join(p.text, "")
	if st.Endless {
		p.endless = st.DeltaText
		if p.endless == "" {
			p.endless = "word "
		}
		if p.text == nil {
			p.text = []string{}
		}
	}
	var reasoningDeltas, deltas int64
	for _, part := range st.Reasoning {
		ch := splitWords(part)
		if len(ch) == 0 {
			ch = []string{""}
		}
		p.reasoning = append(p.reasoning, ch)
		p.parts = append(p.parts, part)
		reasoningDeltas += int64(len(ch))
	}
	deltas = reasoningDeltas + int64(len(p.text))
	for _, tc := range st.ToolCalls {
		c := plannedCall{callID: tc.CallID, name: tc.Name, args: tc.Arguments}
		if c.name == "" {
			c.name = in.defaultTool()
		}
		if c.callID == "" {
			c.callID = "call_" + strconv.FormatInt(s.calls.Add(1), 10)
		}
		if tc.Input != "" {
			if wire == WireResponses && in.isCustom(c.name) {
				c.custom, c.args = true, tc.Input
			} else {
				b, _ := json.Marshal(map[string]string{"input": tc.Input})
				c.args = string(b)
			}
		}
		if c.args == "" {
			key := "command"
			if c.name == "exec_command" {
				key = "cmd"
			}
			if tc.Command != "" {
				b, _ := json.Marshal(map[string]string{key: tc.Command})
				c.args = string(b)
			} else {
				c.args = "{}"
			}
		}
		c.argChunks = splitArgs(c.args)
		deltas += int64(len(c.argChunks))
		p.calls = append(p.calls, c)
	}
	if st.Usage != nil {
		p.usage = *st.Usage
	} else {
		p.usage = Usage{Input: 100 + int64(bodyLen)/4, Output: deltas, Reasoning: reasoningDeltas}
	}
	return p
}

func (s *Server) newID(prefix string) string {
	return prefix + strconv.FormatInt(s.ids.Add(1), 10)
}

// stream writes Server-Sent Events, flushing after each, and carries the
// pacing of a step: the pause between deltas, the stall, and giving up
// when the client goes away.
type stream struct {
	ctx        context.Context
	w          http.ResponseWriter
	rc         *http.ResponseController
	buf        []byte
	seq        int // next Responses sequence_number
	deltas     int // deltas written
	stallAfter int
	cutAfter   int
	failAfter  int
	// fail writes the wire's in-stream error event (FailAfter).
	fail    func()
	pause   time.Duration
	timer   *time.Timer
	stopped bool // the client went away, a write failed, or the stream stalled
}

// startStream sends the 200 and the SSE headers.
func startStream(ctx context.Context, w http.ResponseWriter, st *Step) *stream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	sw := &stream{ctx: ctx, w: w, rc: rc, buf: make([]byte, 0, 1024), stallAfter: st.StallAfter,
		cutAfter: st.CutAfter, failAfter: st.FailAfter, pause: st.InterDelta}
	if rc.Flush() != nil {
		sw.stopped = true
	}
	return sw
}

// flushBuf writes the pending event and flushes it.
func (sw *stream) flushBuf() {
	if sw.stopped {
		return
	}
	if sw.ctx.Err() != nil {
		sw.stopped = true
		return
	}
	if _, err := sw.w.Write(sw.buf); err != nil {
		sw.stopped = true
		return
	}
	if sw.rc.Flush() != nil {
		sw.stopped = true
	}
}

// delta is called before each delta. It pauses between deltas and stalls
// once stallAfter deltas were sent; false means stop writing.
func (sw *stream) delta() bool {
	if sw.stopped {
		return false
	}
	if sw.stallAfter > 0 && sw.deltas >= sw.stallAfter {
		sw.stall()
		return false
	}
	if sw.cutAfter > 0 && sw.deltas >= sw.cutAfter {
		panic(http.ErrAbortHandler) // net/http drops the connection
	}
	if sw.failAfter > 0 && sw.deltas >= sw.failAfter {
		if sw.fail != nil {
			sw.fail()
		}
		sw.stopped = true
		return false
	}
	if sw.deltas > 0 && sw.pause > 0 {
		if sw.timer == nil {
			sw.timer = time.NewTimer(sw.pause)
		} else {
			sw.timer.Reset(sw.pause)
		}
		select {
		case <-sw.timer.C:
		case <-sw.ctx.Done():
			sw.stopped = true
			return false
		}
	}
	sw.deltas++
	return true
}

// finish is called before the final event: a stream set to stall that has
// not stalled yet stalls here. false means stop writing.
func (sw *stream) finish() bool {
	if !sw.stopped && sw.stallAfter > 0 {
		sw.stall()
	}
	return !sw.stopped
}

// stall holds the connection open, sending nothing, until the client goes
// away or the server closes.
func (sw *stream) stall() {
	sw.stopped = true
	<-sw.ctx.Done()
}

// hang sends the headers of a successful answer and then nothing until the
// client goes away or the server closes.
func hang(ctx context.Context, w http.ResponseWriter, contentType string) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush()
	<-ctx.Done()
}

// AppendJSONString appends s as a JSON string: '"', '\\' and control
// characters escaped, invalid UTF-8 as \ufffd and U+2028 and U+2029 as
// \u2028 and \u2029 (as encoding/json does), '<', '>' and '&' as they are.
// It is the same escaping, byte for byte, as encoding/json's and as
// apserver's own output (protocol.AppendJSONString; a test in package
// server holds the two to it). scripted keeps its own copy on purpose: a
// fake the product is tested against shares no code with it, and stays
// standard-library only.
func AppendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// errorMessage is the message of a FailAfter error.
func (st *Step) errorMessage() string {
	if st.ErrorMessage != "" {
		return st.ErrorMessage
	}
	return "scripted error mid-stream"
}
