package wirecheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Transcript checks one conversation. Feed it every line in order: client
// requests through Client (so responses can be matched to their method),
// server lines through Server, client answers to server requests through
// ClientAnswer. It is safe for concurrent use, but lines must be fed in
// wire order for responses to match.
type Transcript struct {
	// RequireEmittedAtMs makes a notification without a top-level
	// "emittedAtMs" an error (Codex always sends it; the schema makes it
	// optional).
	RequireEmittedAtMs bool

	// AllowUnknown skips, instead of failing, messages whose method
	// neither Codex's schema nor apserver's defines; Unknown lists them.
	AllowUnknown bool

	v *Validator

	mu            sync.Mutex
	line          int
	clientPending map[string][]string // client request id → methods awaiting a response (FIFO)
	serverPending map[string]string   // server request id → method awaiting the client's answer
	unknown       map[string]bool
}

// NewTranscript starts checking a new conversation.
func (v *Validator) NewTranscript() *Transcript {
	return &Transcript{
		v:             v,
		clientPending: map[string][]string{},
		serverPending: map[string]string{},
		unknown:       map[string]bool{},
	}
}

// LineError is a failed check of one line.
type LineError struct {
	Line   int    // 1-based position in the transcript (or file)
	From   string // "server" or "client"
	What   string // "message", "notification", "request", "response", "error response"
	Method string // the method concerned, when known
	ID     string // the JSON-RPC id as JSON, when present
	Err    error
}

func (e *LineError) Error() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "line %d: %s %s", e.Line, e.From, e.What)
	if e.Method != "" {
		if e.What == "response" || e.What == "error response" || e.What == "answer" || e.What == "error answer" {
			sb.WriteString(" to")
		}
		fmt.Fprintf(&sb, " %q", e.Method)
	}
	if e.ID != "" {
		fmt.Fprintf(&sb, " (id %s)", e.ID)
	}
	sb.WriteString(": ")
	sb.WriteString(e.Err.Error())
	return sb.String()
}

func (e *LineError) Unwrap() error { return e.Err }

// Client records a line the client sent. Requests teach the transcript
// which method a later response answers; anything else is ignored.
func (t *Transcript) Client(line []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.line++
	if msg, err := parseLine(line); err == nil {
		t.client(msg)
	}
}

func (t *Transcript) client(msg map[string]any) {
	m, ok := msg["method"].(string)
	if !ok {
		return
	}
	idv, ok := msg["id"]
	if !ok {
		return
	}
	if key, _, err := idKey(idv); err == nil {
		t.clientPending[key] = append(t.clientPending[key], m)
	}
}

// Server validates one line the server sent.
func (t *Transcript) Server(line []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.line++
	return t.serverAt(t.line, line)
}

// ClientAnswer validates the client's answer to a server request against
// that request's response schema (e.g. CommandExecutionRequestApprovalResponse).
func (t *Transcript) ClientAnswer(line []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.line++
	return t.answerAt(t.line, line)
}

// Unknown lists, sorted, the methods seen that neither schema defines.
// With AllowUnknown their messages were skipped; otherwise they failed.
func (t *Transcript) Unknown() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return sortedKeys(t.unknown)
}

// Unanswered lists requests still waiting for a reply, as
// "client <id> <method>" or "server <id> <method>", sorted.
func (t *Transcript) Unanswered() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for k, ms := range t.clientPending {
		for _, m := range ms {
			out = append(out, "client "+showKey(k)+" "+m)
		}
	}
	for k, m := range t.serverPending {
		out = append(out, "server "+showKey(k)+" "+m)
	}
	sort.Strings(out)
	return out
}

func (t *Transcript) serverAt(n int, line []byte) error {
	le := &LineError{Line: n, From: "server", What: "message"}
	fail := func(format string, a ...any) error {
		le.Err = fmt.Errorf(format, a...)
		return le
	}
	msg, err := parseLine(line)
	if err != nil {
		le.Err = err
		return le
	}
	if jr, ok := msg["jsonrpc"]; ok && jr != "2.0" {
		return fail(`"jsonrpc" must be "2.0" when present, got %s`, show(jr))
	}
	idv, hasID := msg["id"]
	var key string
	if hasID {
		var shown string
		if key, shown, err = idKey(idv); err != nil {
			return fail("%v", err)
		}
		le.ID = shown
	}

	if mv, hasMethod := msg["method"]; hasMethod {
		method, ok := mv.(string)
		if !ok {
			return fail(`"method" must be a string, got %s`, show(mv))
		}
		le.Method = method
		if hasID {
			le.What = "request"
		} else {
			le.What = "notification"
		}
		for _, k := range []string{"result", "error"} {
			if _, ok := msg[k]; ok {
				return fail("a message with \"method\" must not carry %q", k)
			}
		}
		if !hasID {
			return t.notification(le, method, msg)
		}
		if prev, busy := t.serverPending[key]; busy {
			return fail("id reused while server request %q with that id is still unanswered", prev)
		}
		t.serverPending[key] = method
		ref, ok := t.v.serverRequestRef(method)
		if !ok {
			return t.unknownMethod(le, method)
		}
		if err := t.v.validate(ref, msg, nil); err != nil {
			le.Err = err
			return le
		}
		return nil
	}

	if !hasID {
		return fail(`neither "method" nor "id": not a request, notification or response`)
	}
	le.What = "response"
	_, hasResult := msg["result"]
	errv, hasError := msg["error"]
	switch {
	case hasResult && hasError:
		return fail(`response carries both "result" and "error"`)
	case !hasResult && !hasError:
		return fail(`response carries neither "result" nor "error"`)
	}
	methods := t.clientPending[key]
	if len(methods) == 0 {
		return fail("no client request with this id is awaiting a response")
	}
	method := methods[0]
	if len(methods) == 1 {
		delete(t.clientPending, key)
	} else {
		t.clientPending[key] = methods[1:]
	}
	le.Method = method
	if hasError {
		le.What = "error response"
		return t.errorObject(le, errv)
	}
	if !t.v.KnownClientRequest(method) {
		return t.unknownMethod(le, method)
	}
	ref, ok := t.v.clientResponseRef(method)
	if !ok {
		return nil // Codex publishes no result type for this method
	}
	if err := t.v.validate(ref, msg["result"], []string{"result"}); err != nil {
		le.Err = err
		return le
	}
	return nil
}

func (t *Transcript) notification(le *LineError, method string, msg map[string]any) error {
	if at, ok := msg["emittedAtMs"]; ok {
		if !isNonNegInt(at) {
			le.Err = fmt.Errorf(`"emittedAtMs" must be a non-negative integer (Unix ms), got %s`, show(at))
			return le
		}
	} else if t.RequireEmittedAtMs {
		le.Err = errors.New(`missing top-level "emittedAtMs"`)
		return le
	}
	ref, ok := t.v.notificationRef(method)
	if !ok {
		return t.unknownMethod(le, method)
	}
	if err := t.v.validate(ref, msg, nil); err != nil {
		le.Err = err
		return le
	}
	return nil
}

// unknownMethod records a method no schema defines and fails its line
// unless AllowUnknown.
func (t *Transcript) unknownMethod(le *LineError, method string) error {
	t.unknown[method] = true
	if t.AllowUnknown {
		return nil
	}
	le.Err = errors.New("method is in neither Codex's schema (protocol/codex) nor apserver's (protocol/apserver)")
	return le
}

func (t *Transcript) errorObject(le *LineError, errv any) error {
	ref := schemaRef{src: t.v.codex, file: fileJSONRPCMessage, ptr: "/definitions/JSONRPCErrorError", name: "JSON-RPC error object"}
	if err := t.v.validate(ref, errv, []string{"error"}); err != nil {
		le.Err = err
		return le
	}
	return nil
}

func (t *Transcript) answerAt(n int, line []byte) error {
	le := &LineError{Line: n, From: "client", What: "answer"}
	fail := func(format string, a ...any) error {
		le.Err = fmt.Errorf(format, a...)
		return le
	}
	msg, err := parseLine(line)
	if err != nil {
		le.Err = err
		return le
	}
	if _, ok := msg["method"]; ok {
		return fail(`an answer to a server request must not carry "method"`)
	}
	idv, ok := msg["id"]
	if !ok {
		return fail(`missing "id"`)
	}
	key, shown, err := idKey(idv)
	if err != nil {
		return fail("%v", err)
	}
	le.ID = shown
	_, hasResult := msg["result"]
	errv, hasError := msg["error"]
	switch {
	case hasResult && hasError:
		return fail(`answer carries both "result" and "error"`)
	case !hasResult && !hasError:
		return fail(`answer carries neither "result" nor "error"`)
	}
	method, ok := t.serverPending[key]
	if !ok {
		return fail("no server request with this id is awaiting an answer")
	}
	delete(t.serverPending, key)
	le.Method = method
	if hasError {
		le.What = "error answer"
		return t.errorObject(le, errv)
	}
	ref, ok := t.v.serverAnswerRef(method)
	if !ok {
		return nil // unknown request, or Codex publishes no response type for it
	}
	if err := t.v.validate(ref, msg["result"], []string{"result"}); err != nil {
		le.Err = err
		return le
	}
	return nil
}

// CheckFile validates a peerbench transcript: one
// {"t_ms":…, "dir":"send"|"recv", "msg":{…}} object per line.
func (v *Validator) CheckFile(path string) error {
	return v.NewTranscript().CheckFile(path)
}

// CheckFile feeds a peerbench transcript file into t ("send" lines are the
// client's, "recv" lines the server's) and returns every failure, each
// prefixed with the file name; line numbers are the file's.
func (t *Transcript) CheckFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("wirecheck: %w", err)
	}
	defer f.Close()
	t.mu.Lock()
	defer t.mu.Unlock()

	const maxErrors = 50
	var errs []error
	name := path
	add := func(err error) {
		if len(errs) < maxErrors {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		} else if len(errs) == maxErrors {
			errs = append(errs, fmt.Errorf("%s: too many errors, stopping the list", name))
		}
	}
	r := bufio.NewReaderSize(f, 1<<16)
	for n := 1; ; n++ {
		raw, rerr := r.ReadBytes('\n')
		if len(bytes.TrimSpace(raw)) > 0 {
			t.line = n
			var rec struct {
				Dir string          `json:"dir"`
				Msg json.RawMessage `json:"msg"`
			}
			if err := json.Unmarshal(raw, &rec); err != nil {
				add(&LineError{Line: n, From: "transcript", What: "record", Err: err})
			} else {
				switch rec.Dir {
				case "recv":
					if err := t.serverAt(n, rec.Msg); err != nil {
						add(err)
					}
				case "send":
					if bytes.Contains(rec.Msg, []byte(`"method"`)) {
						if msg, err := parseLine(rec.Msg); err == nil {
							if _, isReq := msg["method"]; isReq {
								t.client(msg)
								break
							}
						}
					}
					if err := t.answerAt(n, rec.Msg); err != nil {
						add(err)
					}
				default:
					add(&LineError{Line: n, From: "transcript", What: "record", Err: fmt.Errorf(`"dir" must be "send" or "recv", got %q`, rec.Dir)})
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return fmt.Errorf("wirecheck: %s: %w", name, rerr)
		}
	}
	return errors.Join(errs...)
}

// parseLine decodes one wire line, which must hold exactly one JSON object.
func parseLine(line []byte) (map[string]any, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	if len(bytes.TrimSpace(line)) == 0 {
		return nil, errors.New("empty line")
	}
	if bytes.IndexByte(line, '\n') >= 0 {
		return nil, errors.New("message spans several lines (JSONL needs one object per line)")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a single JSON object (got %s)", jsonKind(v))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not a single JSON object: trailing data after the object")
	}
	return obj, nil
}

// idKey normalises a JSON-RPC id (string or integer) to a map key and its
// JSON rendering. Types are kept apart: 1 and "1" are different ids.
func idKey(v any) (key, shown string, err error) {
	switch x := v.(type) {
	case string:
		return "s" + x, strconv.Quote(x), nil
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return "n" + strconv.FormatInt(i, 10), string(x), nil
		}
		return "", "", fmt.Errorf(`"id" must be a string or an int64, got %s`, x)
	}
	return "", "", fmt.Errorf(`"id" must be a string or an int64, got %s`, show(v))
}

func showKey(k string) string {
	if strings.HasPrefix(k, "s") {
		return strconv.Quote(k[1:])
	}
	return k[1:]
}

func isNonNegInt(v any) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	return err == nil && i >= 0
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// show renders a decoded value briefly for messages.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}
