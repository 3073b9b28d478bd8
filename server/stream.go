package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/apserver/apserver/protocol"
)

const (
	// DefaultMaxLineBytes is the default cap on one incoming line.
	DefaultMaxLineBytes = 16 << 20

	queueLen     = 8192                  // outgoing messages queued before callers block
	writeBufSize = 64 << 10              // bufio.Writer in front of the output
	readBufSize  = 64 << 10              // bufio.Reader in front of the input
	keepLineCap  = 64 << 10              // pooled line buffers larger than this are dropped
	keepReadCap  = 1 << 20               // the read buffer is released after a larger line
	flushLinger  = 20 * time.Microsecond // how long the writer waits for more before flushing
	droppedIDMsg = "request with a %s id dropped (no reply)"
)

// stream is the connection's jsonrpc2.ObjectStream: newline-delimited JSON
// in, one ordered writer out.
//
// The read side (ReadObject and everything it calls) is owned by the
// goroutine that calls ReadObject: jsonrpc2's read loop. The write side is
// owned by the writer goroutine; any goroutine may enqueue.
type stream struct {
	log   *slog.Logger
	trace bool
	max   int

	// Read side, owned by the ReadObject goroutine.
	r          *bufio.Reader
	line       []byte
	stickyErr  error           // returned by every read after the input ended
	onResponse func(m message) // set before the first read; gets client responses

	// inputEnded is closed when reading stops at the end of the input or
	// a read error (readError says which), not when the stream is closed.
	inputEnded chan struct{}

	// Write side.
	// stallLimit > 0: a full queue waits at most this long, then the
	// connection is closed (enqueueOrDrop). Set before use.
	stallLimit time.Duration
	q          chan outItem
	w          *bufio.Writer // owned by the writer goroutine
	closing    chan struct{} // closed by Close or on a write error
	closeOnce  sync.Once
	writerDone chan struct{} // closed when the writer goroutine returns

	// mu guards the two errors below.
	mu       sync.Mutex
	readErr  error // why reading stopped (io.EOF for a clean end)
	writeErr error // the first write error
}

// outItem is one entry of the output queue: a line to write, or (flushed
// non-nil) a request to flush and report.
type outItem struct {
	lb      *lineBuf
	flushed chan struct{}
}

func newStream(r io.Reader, w io.Writer, maxLine int, log *slog.Logger, trace bool) *stream {
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	st := &stream{
		log:        log,
		trace:      trace,
		max:        maxLine,
		r:          bufio.NewReaderSize(r, readBufSize),
		q:          make(chan outItem, queueLen),
		w:          bufio.NewWriterSize(w, writeBufSize),
		closing:    make(chan struct{}),
		writerDone: make(chan struct{}),
		inputEnded: make(chan struct{}),
	}
	go st.writeLoop()
	return st
}

var _ jsonrpc2.ObjectStream = (*stream)(nil)

// ReadObject implements jsonrpc2.ObjectStream. It returns the next request or
// notification, decoded into v (jsonrpc2's message type). It answers or logs
// bad lines itself and keeps reading: returning an error makes jsonrpc2 close
// the connection, so the only errors are io.EOF, a read error, or ErrClosed.
func (st *stream) ReadObject(v any) error {
	for {
		m, err := st.next()
		if err != nil {
			return err
		}
		// jsonrpc2 decodes our canonical form of the message, so it never
		// sees a field combination it would reject.
		canon := appendMessage(nil, m, false)
		if err := json.Unmarshal(canon, v); err != nil {
			st.log.Error("bug: jsonrpc2 rejected a message", "line", string(canon), "err", err)
			if m.kind == kindRequest {
				st.replyError(&m.id, protocol.CodeInvalidRequest, "Invalid request: "+err.Error(), nil)
			}
			continue
		}
		return nil
	}
}

// next returns the next request or notification. Responses go to
// onResponse; bad lines are answered or logged here.
func (st *stream) next() (message, error) {
	for {
		select {
		case <-st.closing:
			return message{}, ErrClosed
		default:
		}
		line, tooLong, err := st.readLine()
		if err != nil {
			st.mu.Lock()
			if st.readErr == nil {
				st.readErr = err
				close(st.inputEnded)
			}
			st.mu.Unlock()
			return message{}, err
		}
		select {
		case <-st.closing: // closed while the read was blocked
			return message{}, ErrClosed
		default:
		}
		if tooLong {
			st.log.Warn("input line too long; discarded", "max", st.max)
			st.replyError(nil, protocol.CodeInvalidRequest, fmt.Sprintf("line exceeds %d bytes", st.max), nil)
			continue
		}
		line = trimSpace(line)
		if len(line) == 0 {
			continue
		}
		if st.trace {
			st.log.Debug("recv", "line", string(line))
		}
		m, bad := decodeLine(line)
		if cap(st.line) > keepReadCap {
			st.line = nil // decodeLine copied what it kept
		}
		if bad != nil {
			if bad.noReply {
				st.log.Warn("input dropped", "reason", bad.msg, "line", truncate(line))
			} else {
				st.log.Warn("bad input", "code", bad.code, "err", bad.msg, "line", truncate(line))
				st.replyError(bad.id, bad.code, bad.msg, nil)
			}
			continue
		}
		if m.kind == kindResponse {
			if st.onResponse != nil {
				st.onResponse(m)
			} else {
				st.log.Warn("response dropped: no handler", "id", idString(m.id))
			}
			continue
		}
		return m, nil
	}
}

// readLine returns the next line without its terminator ("\n" or "\r\n").
// A line longer than st.max is discarded as it is read and reported with
// tooLong. At the end of input a final unterminated line is returned first;
// then err is io.EOF (or the read error) on every call.
func (st *stream) readLine() (line []byte, tooLong bool, err error) {
	if st.stickyErr != nil {
		return nil, false, st.stickyErr
	}
	st.line = st.line[:0]
	seen := false
	for {
		frag, err := st.r.ReadSlice('\n')
		if len(frag) > 0 {
			seen = true
		}
		if !tooLong {
			// Keep room for the "\r\n" terminator beyond st.max.
			if len(st.line)+len(frag) > st.max+2 {
				tooLong = true
				st.line = st.line[:0]
			} else {
				st.line = append(st.line, frag...)
			}
		}
		if err == nil {
			break
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		st.stickyErr = err
		if !seen {
			return nil, false, err
		}
		break
	}
	line = st.line
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) > st.max {
		tooLong = true
	}
	if tooLong {
		return nil, true, nil
	}
	return line, false, nil
}

// readError returns why reading stopped: nil while reading, io.EOF on a
// clean end of input.
func (st *stream) readError() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.readErr
}

// writeError returns the first error writing the output, or nil.
func (st *stream) writeError() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.writeErr
}

// WriteObject implements jsonrpc2.ObjectStream. It encodes obj itself (no
// "jsonrpc" member; notifications get "emittedAtMs") and queues the line.
// obj is a *jsonrpc2.Request or *jsonrpc2.Response; anything else (such as
// jsonrpc2's internal message wrapper) is marshalled and re-encoded.
func (st *stream) WriteObject(obj any) error {
	lb := getLine()
	var err error
	switch o := obj.(type) {
	case *jsonrpc2.Request:
		err = lb.appendRequest(o)
	case jsonrpc2.Request:
		err = lb.appendRequest(&o)
	case *jsonrpc2.Response:
		err = lb.appendResponse(o)
	case jsonrpc2.Response:
		err = lb.appendResponse(&o)
	default:
		var b []byte
		b, err = json.Marshal(obj)
		if err == nil {
			m, bad := decodeLine(b)
			if bad != nil {
				err = fmt.Errorf("not a JSON-RPC message: %s", bad.msg)
			} else {
				lb.b = appendMessage(lb.b, m, true)
			}
		}
	}
	if err != nil {
		putLine(lb)
		return fmt.Errorf("encoding message: %w", err)
	}
	return st.enqueue(lb)
}

// notify queues a notification: the fast path for session.Client.Notify,
// bypassing jsonrpc2.
func (st *stream) notify(method string, params any) error {
	lb := getLine()
	if err := lb.appendNotification(method, params); err != nil {
		putLine(lb)
		return err
	}
	return st.enqueue(lb)
}

// replyError queues an error response; id nil means null.
func (st *stream) replyError(id *jsonrpc2.ID, code int64, msg string, data json.RawMessage) {
	lb := getLine()
	lb.appendError(id, code, msg, data)
	if err := st.enqueue(lb); err != nil {
		st.log.Debug("error response not sent", "err", err)
	}
}

// enqueue hands a line to the writer. It blocks only while the queue is
// full. After Close it drops the line and returns ErrClosed.
func (st *stream) enqueue(lb *lineBuf) error {
	select {
	case <-st.closing:
		putLine(lb)
		return ErrClosed
	default:
	}
	if st.stallLimit > 0 {
		return st.enqueueOrDrop(lb)
	}
	select {
	case st.q <- outItem{lb: lb}:
		return nil
	case <-st.closing:
		putLine(lb)
		return ErrClosed
	}
}

// enqueueOrDrop is enqueue for a connection that shares the session with
// others (a Hub): a client that has not made room in the queue for
// stallLimit is disconnected, so that it cannot hold up every other
// client's threads.
func (st *stream) enqueueOrDrop(lb *lineBuf) error {
	select {
	case st.q <- outItem{lb: lb}:
		return nil
	default:
	}
	t := time.NewTimer(st.stallLimit)
	defer t.Stop()
	select {
	case st.q <- outItem{lb: lb}:
		return nil
	case <-st.closing:
		putLine(lb)
		return ErrClosed
	case <-t.C:
		putLine(lb)
		st.fail(fmt.Errorf("the client read nothing for %v with %d messages queued", st.stallLimit, queueLen))
		return ErrClosed
	}
}

// Flush waits until everything queued before it is written to the output.
func (st *stream) Flush() error {
	done := make(chan struct{})
	select {
	case st.q <- outItem{flushed: done}:
	case <-st.closing:
		return st.closedErr()
	}
	select {
	case <-done:
		return st.writeError()
	case <-st.writerDone:
		return st.closedErr()
	}
}

// Close stops accepting output, waits until everything already queued is
// written and flushed, and returns the first write error. Reading stops at
// the next line. It does not close the underlying reader or writer. It is
// safe to call more than once and from any goroutine.
func (st *stream) Close() error {
	st.closeOnce.Do(func() { close(st.closing) })
	<-st.writerDone
	return st.writeError()
}

func (st *stream) closedErr() error {
	if err := st.writeError(); err != nil {
		return err
	}
	return ErrClosed
}

// writeLoop is the writer goroutine. It writes queued lines through the
// buffer and flushes when the queue has stayed empty for a moment
// (flushLinger), so a burst costs few write calls while a lone message still
// goes out at once.
func (st *stream) writeLoop() {
	defer close(st.writerDone)
	for {
		var it outItem
		select {
		case it = <-st.q:
		default:
			if st.w.Buffered() > 0 && st.linger() {
				continue
			}
			if !st.flush() {
				st.discard()
				return
			}
			select {
			case it = <-st.q:
			case <-st.closing:
				st.drain()
				return
			}
		}
		if !st.write(it) {
			st.discard()
			return
		}
	}
}

// linger yields for up to flushLinger while the queue is empty and reports
// whether something arrived.
func (st *stream) linger() bool {
	start := time.Now()
	for {
		runtime.Gosched()
		if len(st.q) > 0 {
			return true
		}
		if time.Since(start) >= flushLinger {
			return false
		}
	}
}

func (st *stream) write(it outItem) bool {
	if it.flushed != nil {
		ok := st.flush()
		close(it.flushed)
		return ok
	}
	if st.trace {
		st.log.Debug("send", "line", string(bytes.TrimSuffix(it.lb.b, []byte{'\n'})))
	}
	_, err := st.w.Write(it.lb.b)
	putLine(it.lb)
	if err != nil {
		st.fail(err)
		return false
	}
	return true
}

func (st *stream) flush() bool {
	if st.w.Buffered() == 0 {
		return true
	}
	if err := st.w.Flush(); err != nil {
		st.fail(err)
		return false
	}
	return true
}

// fail records a write error and closes the stream.
func (st *stream) fail(err error) {
	st.mu.Lock()
	if st.writeErr == nil {
		st.writeErr = fmt.Errorf("writing output: %w", err)
	}
	st.mu.Unlock()
	st.log.Error("writing output failed; closing", "err", err)
	st.closeOnce.Do(func() { close(st.closing) })
}

// drain writes what is still queued after Close, then flushes.
func (st *stream) drain() {
	for {
		select {
		case it := <-st.q:
			if !st.write(it) {
				st.discard()
				return
			}
		default:
			st.flush()
			return
		}
	}
}

// discard empties the queue after a write error.
func (st *stream) discard() {
	for {
		select {
		case it := <-st.q:
			if it.flushed != nil {
				close(it.flushed)
			} else {
				putLine(it.lb)
			}
		default:
			return
		}
	}
}

// Messages.

type msgKind uint8

const (
	kindRequest msgKind = iota + 1
	kindNotification
	kindResponse
)

// message is one decoded incoming line.
type message struct {
	kind   msgKind
	id     jsonrpc2.ID     // request and response; an int64 id n is ID{Num: uint64(n)}
	method string          // request and notification
	params json.RawMessage // request and notification; nil when absent
	result json.RawMessage // success response
	errObj json.RawMessage // error response: the raw error object
}

// badLine is a line that is not a message.
type badLine struct {
	code    int64
	id      *jsonrpc2.ID // nil: null
	msg     string
	noReply bool // log and drop
}

type idKind uint8

const (
	idAbsent idKind = iota
	idValid
	idNull
	idFloat
	idInvalid
)

// decodeLine classifies one non-empty, trimmed line. The message it returns
// shares no memory with line.
func decodeLine(line []byte) (message, *badLine) {
	if line[0] != '{' {
		var raw json.RawMessage
		if err := json.Unmarshal(line, &raw); err != nil {
			return message{}, &badLine{code: protocol.CodeParseError, msg: "Parse error: " + err.Error()}
		}
		return message{}, invalid(nil, "expected a JSON object, got %s", jsonKind(line))
	}
	var f map[string]json.RawMessage
	if err := json.Unmarshal(line, &f); err != nil {
		return message{}, &badLine{code: protocol.CodeParseError, msg: "Parse error: " + err.Error()}
	}

	var id jsonrpc2.ID
	ik := idAbsent
	if raw, ok := f["id"]; ok {
		id, ik = parseID(raw)
	}
	var known *jsonrpc2.ID
	if ik == idValid {
		known = &id
	}

	if raw, ok := f["method"]; ok {
		var method string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &method) != nil {
			return message{}, invalid(known, "method must be a string")
		}
		m := message{method: method, params: f["params"]}
		switch ik {
		case idAbsent:
			m.kind = kindNotification
			return m, nil
		case idValid:
			m.kind = kindRequest
			m.id = id
			return m, nil
		case idNull:
			return message{}, &badLine{noReply: true, msg: fmt.Sprintf(droppedIDMsg, "null")}
		case idFloat:
			return message{}, &badLine{noReply: true, msg: fmt.Sprintf(droppedIDMsg, "float")}
		default:
			return message{}, invalid(nil, "id must be a string or a 64-bit integer")
		}
	}

	result, hasResult := f["result"]
	errObj, hasErr := f["error"]
	if hasErr && string(errObj) == "null" {
		hasErr = false
	}
	if hasResult || hasErr {
		if ik != idValid {
			return message{}, &badLine{noReply: true, msg: "response without a usable id dropped"}
		}
		m := message{kind: kindResponse, id: id}
		if hasErr {
			m.errObj = errObj
		} else {
			m.result = result
		}
		return m, nil
	}
	return message{}, invalid(known, "expected a method, result or error")
}

func invalid(id *jsonrpc2.ID, format string, args ...any) *badLine {
	return &badLine{code: protocol.CodeInvalidRequest, id: id, msg: "Invalid request: " + fmt.Sprintf(format, args...)}
}

// parseID decodes a raw id. Integers must fit in an int64 and are stored as
// ID{Num: uint64(n)}, so negative ids survive the round trip.
func parseID(raw json.RawMessage) (jsonrpc2.ID, idKind) {
	if len(raw) == 0 {
		return jsonrpc2.ID{}, idAbsent
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return jsonrpc2.ID{}, idInvalid
		}
		return jsonrpc2.ID{Str: s, IsString: true}, idValid
	case c == 'n':
		return jsonrpc2.ID{}, idNull
	case c == '-' || ('0' <= c && c <= '9'):
		if bytes.ContainsAny(raw, ".eE") {
			return jsonrpc2.ID{}, idFloat
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return jsonrpc2.ID{}, idInvalid
		}
		return jsonrpc2.ID{Num: uint64(n)}, idValid
	}
	return jsonrpc2.ID{}, idInvalid
}

// idString formats an id for logs.
func idString(id jsonrpc2.ID) string {
	if id.IsString {
		return strconv.Quote(id.Str)
	}
	return strconv.FormatInt(int64(id.Num), 10)
}

// jsonKind names the kind of a valid JSON value.
func jsonKind(raw []byte) string {
	raw = trimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func truncate(line []byte) string {
	const max = 200
	if len(line) > max {
		return string(line[:max]) + "…"
	}
	return string(line)
}

// Encoding. Every function appends one complete line ending in '\n'.

// lineBuf is one outgoing line. It is pooled; the writer returns it.
type lineBuf struct {
	b   []byte
	enc *json.Encoder // writes to this lineBuf
}

func (lb *lineBuf) Write(p []byte) (int, error) {
	lb.b = append(lb.b, p...)
	return len(p), nil
}

var linePool = sync.Pool{New: func() any {
	lb := &lineBuf{b: make([]byte, 0, 512)}
	lb.enc = json.NewEncoder(lb)
	lb.enc.SetEscapeHTML(false)
	return lb
}}

func getLine() *lineBuf {
	lb := linePool.Get().(*lineBuf)
	lb.b = lb.b[:0]
	return lb
}

func putLine(lb *lineBuf) {
	if cap(lb.b) <= keepLineCap {
		linePool.Put(lb)
	}
}

// appendJSON appends the compact JSON encoding of v. On error lb is unchanged.
func (lb *lineBuf) appendJSON(v any) error {
	n := len(lb.b)
	if err := lb.enc.Encode(v); err != nil {
		lb.b = lb.b[:n]
		return err
	}
	lb.b = lb.b[:len(lb.b)-1] // Encode ends with '\n'
	return nil
}

// appendNotification appends {"method":…,"params":…,"emittedAtMs":…}.
// params nil is omitted.
func (lb *lineBuf) appendNotification(method string, params any) error {
	lb.b = append(lb.b, `{"method":`...)
	lb.b = appendString(lb.b, method)
	if params != nil {
		lb.b = append(lb.b, `,"params":`...)
		if err := lb.appendJSON(params); err != nil {
			return fmt.Errorf("encoding %s params: %w", method, err)
		}
	}
	lb.b = append(lb.b, `,"emittedAtMs":`...)
	lb.b = strconv.AppendInt(lb.b, time.Now().UnixMilli(), 10)
	lb.b = append(lb.b, '}', '\n')
	return nil
}

// appendCall appends a server request {"id":N,"method":…,"params":…}.
func (lb *lineBuf) appendCall(id jsonrpc2.ID, method string, params any) error {
	lb.b = append(lb.b, `{"id":`...)
	lb.b = appendID(lb.b, id)
	lb.b = append(lb.b, `,"method":`...)
	lb.b = appendString(lb.b, method)
	if params != nil {
		lb.b = append(lb.b, `,"params":`...)
		if err := lb.appendJSON(params); err != nil {
			return fmt.Errorf("encoding %s params: %w", method, err)
		}
	}
	lb.b = append(lb.b, '}', '\n')
	return nil
}

// appendResult appends {"id":…,"result":…}.
func (lb *lineBuf) appendResult(id jsonrpc2.ID, result any) error {
	lb.b = append(lb.b, `{"id":`...)
	lb.b = appendID(lb.b, id)
	lb.b = append(lb.b, `,"result":`...)
	if err := lb.appendJSON(result); err != nil {
		return err
	}
	lb.b = append(lb.b, '}', '\n')
	return nil
}

// appendError appends {"id":…,"error":{"code":…,"message":…,"data":…}}; id
// nil is null, data nil (or not valid JSON) is omitted.
func (lb *lineBuf) appendError(id *jsonrpc2.ID, code int64, msg string, data json.RawMessage) {
	lb.b = append(lb.b, `{"id":`...)
	if id == nil {
		lb.b = append(lb.b, "null"...)
	} else {
		lb.b = appendID(lb.b, *id)
	}
	lb.b = append(lb.b, `,"error":{"code":`...)
	lb.b = strconv.AppendInt(lb.b, code, 10)
	lb.b = append(lb.b, `,"message":`...)
	lb.b = appendString(lb.b, msg)
	if data != nil {
		lb.b = append(lb.b, `,"data":`...)
		if lb.appendJSON(data) != nil {
			lb.b = lb.b[:len(lb.b)-len(`,"data":`)]
		}
	}
	lb.b = append(lb.b, '}', '}', '\n')
}

func (lb *lineBuf) appendRequest(r *jsonrpc2.Request) error {
	var params any
	if r.Params != nil {
		params = *r.Params
	}
	if r.Notif {
		return lb.appendNotification(r.Method, params)
	}
	return lb.appendCall(r.ID, r.Method, params)
}

func (lb *lineBuf) appendResponse(r *jsonrpc2.Response) error {
	if r.Error != nil {
		var data json.RawMessage
		if r.Error.Data != nil {
			data = *r.Error.Data
		}
		lb.appendError(&r.ID, r.Error.Code, r.Error.Message, data)
		return nil
	}
	var result any
	if r.Result != nil {
		result = *r.Result
	}
	return lb.appendResult(r.ID, result)
}

// appendMessage appends the canonical line for m: only the members that
// define it, raw values verbatim. stamp adds emittedAtMs to notifications.
func appendMessage(b []byte, m message, stamp bool) []byte {
	b = append(b, '{')
	switch m.kind {
	case kindRequest, kindResponse:
		b = append(b, `"id":`...)
		b = appendID(b, m.id)
		if m.kind == kindRequest {
			b = append(b, ',')
		}
	}
	switch m.kind {
	case kindRequest, kindNotification:
		b = append(b, `"method":`...)
		b = appendString(b, m.method)
		if m.params != nil {
			b = append(b, `,"params":`...)
			b = append(b, m.params...)
		}
		if stamp && m.kind == kindNotification {
			b = append(b, `,"emittedAtMs":`...)
			b = strconv.AppendInt(b, time.Now().UnixMilli(), 10)
		}
	case kindResponse:
		if m.errObj != nil {
			b = append(b, `,"error":`...)
			b = append(b, m.errObj...)
		} else {
			b = append(b, `,"result":`...)
			b = append(b, m.result...)
		}
	}
	return append(b, '}', '\n')
}

func appendID(b []byte, id jsonrpc2.ID) []byte {
	if id.IsString {
		return appendString(b, id.Str)
	}
	return strconv.AppendInt(b, int64(id.Num), 10)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json does; '<', '>' and '&' are not escaped.
func appendString(b []byte, s string) []byte {
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
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
