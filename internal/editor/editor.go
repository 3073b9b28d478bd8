// Package editor is a fake editor: a JSON-RPC client of apserver that
// speaks the Codex app-server protocol over a pair of streams, the real
// binary's stdio or an in-process server (internal/editor/inprocess). It
// records every line the server sends, in order, and offers what tests and
// the demo need: requests and their responses, notifications by method,
// waiting for a turn to complete, answering server requests, and checking
// every line both ways against the schemas (a Checker, such as
// internal/wirecheck's Transcript).
//
// It imports only the standard library, so that any front end
// (cmd/apserver's demo) may use it without linking a schema validator
// into the server's binary (its package init alone cost apserver 3 ms of
// start and 1.7 MB).
package editor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// Checker validates the lines of a conversation against the protocol's
// schemas; *wirecheck.Transcript is one.
type Checker interface {
	// Client notes a line the client sent (it names the responses to come).
	Client(line []byte)
	// Server checks a line the server sent.
	Server(line []byte) error
	// ClientAnswer checks the client's answer to a server request.
	ClientAnswer(line []byte) error
}

// Message is one line the server sent.
type Message struct {
	Seq    int             // position among the server's lines
	Raw    string          // the line as sent
	ID     json.RawMessage // request or response id (nil for notifications)
	Method string          // notification or server request method
	Params json.RawMessage
	Result json.RawMessage
	Error  *Error
	// ReqMethod is the method of the client request a response answers.
	ReqMethod string
	// Invalid: the line is not a JSON object (only Raw is set). It is
	// recorded in its place, and reported to Options.Problem.
	Invalid bool

	value any // decoded Params (Result for a response)
}

// IsResponse reports whether m answers a client request.
func (m *Message) IsResponse() bool { return m.Method == "" && !m.Invalid }

// IsRequest reports whether m is a request of the server's (an approval,
// a question).
func (m *Message) IsRequest() bool { return m.Method != "" && m.ID != nil }

// Value is the decoded params (the result, for a response).
func (m *Message) Value() any { return m.value }

// Get returns the value at a dotted path of the params (the result, for a
// response): "turn.items.0.text".
func (m *Message) Get(path string) any { return Get(m.value, path) }

// Str is Get as a string ("" when absent or not a string).
func (m *Message) Str(path string) string {
	s, _ := m.Get(path).(string)
	return s
}

func (m *Message) String() string { return m.Raw }

// Get walks a decoded JSON value along a dotted path; numeric segments
// index arrays.
func Get(v any, path string) any {
	if path == "" {
		return v
	}
	for _, seg := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// Error is a JSON-RPC error response.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

// ErrClosed: the server's output ended before what was waited for came.
var ErrClosed = errors.New("editor: the server's output ended")

// ErrAnswerOutsideSchema is wrapped by the Problem of an answer to a
// server request that Check rejects; the answer is sent all the same (a
// test may send a bad one on purpose).
var ErrAnswerOutsideSchema = errors.New("an answer outside the schema")

// Options configure an Editor.
type Options struct {
	// Check, when set, validates every line both ways against the schemas;
	// what fails goes to Problem.
	Check Checker
	// Problem receives what is wrong with the server's output: a line
	// that is not a JSON object, one that carries "jsonrpc", one Check
	// rejects. nil: ignored.
	Problem func(error)
	// Trace sees every line, sent (true) or received.
	Trace func(sent bool, line []byte)
	// OnMessage sees every message of the server's as it is recorded, in
	// order, on the reading goroutine, before any Wait can return it.
	OnMessage func(*Message)
}

// Editor is one connection to apserver. Its methods are safe for
// concurrent use.
type Editor struct {
	o Options

	writeMu sync.Mutex // serializes writes and their Check entries
	w       io.Writer

	mu        sync.Mutex
	nextID    int64
	reqMethod map[string]string // request id (JSON) → method
	sentAt    map[string]int    // request id (JSON) → len(msgs) when sent
	msgs      []*Message
	changed   chan struct{} // closed and replaced when msgs grows
	done      chan struct{} // closed when the server's output ends
	readErr   error
}

// New starts reading r (the server's output) and writes to w (its input).
func New(w io.Writer, r io.Reader, o Options) *Editor {
	e := &Editor{o: o, w: w, reqMethod: map[string]string{}, sentAt: map[string]int{},
		changed: make(chan struct{}), done: make(chan struct{})}
	go e.read(r)
	return e
}

func (e *Editor) problem(err error) {
	if e.o.Problem != nil {
		e.o.Problem(err)
	}
}

func (e *Editor) read(r io.Reader) {
	defer close(e.done)
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			e.record(bytes.TrimSuffix(line, []byte("\n")))
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				e.mu.Lock()
				e.readErr = err
				e.mu.Unlock()
			}
			return
		}
	}
}

// record decodes, checks and stores one line of the server's.
func (e *Editor) record(line []byte) {
	if e.o.Trace != nil {
		e.o.Trace(false, line)
	}
	var env struct {
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   *Error          `json:"error"`
		JSONRPC *string         `json:"jsonrpc"`
	}
	if err := json.Unmarshal(line, &env); err != nil {
		e.problem(fmt.Errorf("the server wrote a line that is not a JSON object: %v\n%s", err, line))
		e.add(&Message{Raw: string(line), Invalid: true})
		return
	}
	if env.JSONRPC != nil {
		e.problem(fmt.Errorf("a server message carries \"jsonrpc\" (protocol/codex/CORE.md §2: omit it):\n%s", line))
	}
	if c := e.o.Check; c != nil {
		if string(env.ID) == "null" && env.Method == "" {
			// An error for a request whose id could not be read: there is
			// no pending request to match it to.
			if env.Error == nil || env.Result != nil {
				e.problem(fmt.Errorf("a response with a null id must be an error:\n%s", line))
			}
		} else if err := c.Server(line); err != nil {
			e.problem(fmt.Errorf("wirecheck: %w\n%s", err, line))
		}
	}
	m := &Message{Raw: string(line), Method: env.Method, Params: env.Params, Result: env.Result, Error: env.Error}
	if len(env.ID) > 0 {
		m.ID = env.ID
	}
	body := env.Params
	if m.IsResponse() {
		body = env.Result
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &m.value); err != nil {
			e.problem(fmt.Errorf("decoding %s: %w", line, err))
		}
	}
	e.add(m)
}

// add stores m as the next message. Only the reading goroutine adds.
func (e *Editor) add(m *Message) {
	e.mu.Lock()
	if m.IsResponse() {
		m.ReqMethod = e.reqMethod[string(m.ID)]
	}
	m.Seq = len(e.msgs)
	e.mu.Unlock()
	if e.o.OnMessage != nil {
		e.o.OnMessage(m)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.msgs = append(e.msgs, m)
	close(e.changed)
	e.changed = make(chan struct{})
}

// Write sends one raw line (a newline is added); Check records it as the
// client's.
func (e *Editor) Write(line []byte) error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	if c := e.o.Check; c != nil {
		c.Client(line)
	}
	return e.write(line)
}

func (e *Editor) write(line []byte) error {
	if e.o.Trace != nil {
		e.o.Trace(true, line)
	}
	if _, err := e.w.Write(append(line[:len(line):len(line)], '\n')); err != nil {
		return fmt.Errorf("editor: writing to the server: %w", err)
	}
	return nil
}

// SendWithID sends a request with the given id (any JSON value) and returns
// the id's JSON form, for Response.
func (e *Editor) SendWithID(id any, method string, params any) (string, error) {
	req := map[string]any{"id": id, "method": method}
	if params != nil {
		req["params"] = params
	}
	b, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("editor: encoding %s: %w", method, err)
	}
	idJSON, _ := json.Marshal(id)
	e.Sent(string(idJSON), method)
	return string(idJSON), e.Write(b)
}

// Sent notes a request written raw (Write) with id (its JSON form), so
// that Response finds its answer and labels it with method.
func (e *Editor) Sent(id, method string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reqMethod[id] = method
	e.sentAt[id] = len(e.msgs)
}

// Send sends a request with the next integer id and returns that id's JSON
// form.
func (e *Editor) Send(method string, params any) (string, error) {
	e.mu.Lock()
	e.nextID++
	id := e.nextID
	e.mu.Unlock()
	return e.SendWithID(id, method, params)
}

// Response waits for the response to the latest request sent with id (in
// its JSON form).
func (e *Editor) Response(ctx context.Context, id string) (*Message, error) {
	e.mu.Lock()
	from := e.sentAt[id]
	e.mu.Unlock()
	return e.Wait(ctx, from, func(m *Message) bool { return m.IsResponse() && string(m.ID) == id })
}

// Request sends a request and waits for its response, result or error.
func (e *Editor) Request(ctx context.Context, method string, params any) (*Message, error) {
	id, err := e.Send(method, params)
	if err != nil {
		return nil, err
	}
	return e.Response(ctx, id)
}

// Call is Request for a result: an error response is returned as *Error.
func (e *Editor) Call(ctx context.Context, method string, params any) (*Message, error) {
	m, err := e.Request(ctx, method, params)
	if err != nil {
		return nil, err
	}
	if m.Error != nil {
		return m, m.Error
	}
	return m, nil
}

// Notify sends a client notification.
func (e *Editor) Notify(method string, params any) error {
	n := map[string]any{"method": method}
	if params != nil {
		n["params"] = params
	}
	b, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("editor: encoding %s: %w", method, err)
	}
	return e.Write(b)
}

// Answer replies to a server request with a result.
func (e *Editor) Answer(req *Message, result any) error {
	b, err := json.Marshal(map[string]any{"id": req.ID, "result": result})
	if err != nil {
		return fmt.Errorf("editor: encoding the answer to %s: %w", req.Method, err)
	}
	return e.answer(b)
}

// AnswerError replies to a server request with a JSON-RPC error.
func (e *Editor) AnswerError(req *Message, code int, msg string) error {
	b, _ := json.Marshal(map[string]any{"id": req.ID, "error": map[string]any{"code": code, "message": msg}})
	return e.answer(b)
}

// answer sends an answer to a server request. An answer outside the
// schema is sent all the same (a test may mean it), and reported.
func (e *Editor) answer(b []byte) error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	if c := e.o.Check; c != nil {
		if err := c.ClientAnswer(b); err != nil {
			e.problem(fmt.Errorf("%w: %w", ErrAnswerOutsideSchema, err))
		}
	}
	return e.write(b)
}

// Initialize performs the handshake: initialize, then initialized.
func (e *Editor) Initialize(ctx context.Context, name, version string) (*Message, error) {
	m, err := e.Call(ctx, "initialize", map[string]any{
		"clientInfo": map[string]any{"name": name, "title": name, "version": version},
	})
	if err != nil {
		return m, err
	}
	return m, e.Notify("initialized", nil)
}

// Wait returns the first message at or after position from that satisfies
// pred. It fails with ErrClosed when the server's output ends first, or
// with ctx's error.
func (e *Editor) Wait(ctx context.Context, from int, pred func(*Message) bool) (*Message, error) {
	for {
		e.mu.Lock()
		for _, m := range e.msgs[min(from, len(e.msgs)):] {
			if pred(m) {
				e.mu.Unlock()
				return m, nil
			}
		}
		n, ch := len(e.msgs), e.changed
		e.mu.Unlock()
		select {
		case <-ch:
		case <-e.done:
			e.mu.Lock()
			grew := len(e.msgs) > n
			e.mu.Unlock()
			if !grew {
				return nil, ErrClosed
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// WaitFor waits for the first notification or server request with method
// after after (nil: from the start) that satisfies pred (nil: any).
func (e *Editor) WaitFor(ctx context.Context, after *Message, method string, pred func(*Message) bool) (*Message, error) {
	from := 0
	if after != nil {
		from = after.Seq + 1
	}
	return e.Wait(ctx, from, func(m *Message) bool { return m.Method == method && (pred == nil || pred(m)) })
}

// TurnDone waits for the turn/completed of turnID.
func (e *Editor) TurnDone(ctx context.Context, turnID string) (*Message, error) {
	return e.WaitFor(ctx, nil, "turn/completed", func(m *Message) bool { return m.Str("turn.id") == turnID })
}

// Messages returns the server's lines so far.
func (e *Editor) Messages() []*Message {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*Message(nil), e.msgs...)
}

// Find returns the messages with method (any when "") that satisfy pred
// (nil: any), among those received so far.
func (e *Editor) Find(method string, pred func(*Message) bool) []*Message {
	var out []*Message
	for _, m := range e.Messages() {
		if (method == "" || m.Method == method) && (pred == nil || pred(m)) {
			out = append(out, m)
		}
	}
	return out
}

// Done is closed when the server's output has ended and every line of it
// is recorded.
func (e *Editor) Done() <-chan struct{} { return e.done }

// Err is the error that ended reading, if it was not the end of the
// output.
func (e *Editor) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.readErr
}
