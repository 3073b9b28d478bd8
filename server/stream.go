package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

const (
	// DefaultMaxLineBytes is the default cap on one incoming line.
	DefaultMaxLineBytes = 16 << 20

	queueLen     = 8192                  // outgoing messages queued before callers block
	queueBytes   = 4 << 20               // ... or outgoing bytes (a client reading slowly must not cost memory)
	writeBufSize = 64 << 10              // bufio.Writer in front of the output
	readBufSize  = 64 << 10              // bufio.Reader in front of the input
	keepLineCap  = 64 << 10              // pooled line buffers larger than this are dropped
	keepReadCap  = 1 << 20               // the read buffer is released after a larger line
	flushLinger  = 20 * time.Microsecond // how long the writer waits for more before flushing
	droppedIDMsg = "request with a %s id dropped (no reply)"
)

// stream is the connection's jsonrpc2.ObjectStream: newline-delimited JSON
// in (read.go, decode.go), one ordered writer out (encode.go, write.go).
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
	// params are the params of the message ReadObject returned last,
	// numbered paramsSeq (see ReadObject and takeParams).
	params    json.RawMessage
	paramsSeq uint64

	// inputEnded is closed when reading stops at the end of the input or
	// a read error (readError says which), not when the stream is closed.
	inputEnded chan struct{}

	// Write side.
	// stallLimit > 0: a full queue waits at most this long, then the
	// connection is closed (see enqueue). Set before use.
	stallLimit time.Duration
	q          chan outItem
	w          *bufio.Writer // owned by the writer goroutine
	closing    chan struct{} // closed by Close or on a write error
	closeOnce  sync.Once
	writerDone chan struct{} // closed when the writer goroutine returns
	// queued counts the bytes in q; room is signalled as the writer takes
	// lines, for enqueue waiting on queueBytes.
	queued atomic.Int64
	room   chan struct{}

	// mu guards the two errors below.
	mu       sync.Mutex
	readErr  error // why reading stopped (io.EOF for a clean end)
	writeErr error // the first write error
}

// outItem is one entry of the output queue: a line to write, or (flushed
// non-nil) a request to flush and report.
//
// A streamed message (body non-nil: a result too large to hold, such as a
// long thread's turns) is lb, then what body writes, then tail (which ends
// the line). The writer writes all three before it takes the next entry,
// so nothing is interleaved inside the message, and releases the body.
//
// A notification carrying a long string (large non-nil, largeNotification)
// is lb, then large, then tail, the same way: large holds the long strings
// by reference, and the writer escapes them into the output as it goes.
type outItem struct {
	lb      *lineBuf
	body    *session.StreamedResult
	large   *protocol.Large
	tail    []byte // read-only: may be shared by the connections of a Hub
	flushed chan struct{}
}

// size is what the entry counts for the queue's byte limit: what it holds
// in memory, and a large notification's whole length, as when it was
// encoded whole (its long strings are the session's, not copies, but the
// queue is the last to hold them once the turn is over, and a client that
// reads slowly must not make it hold many).
func (it outItem) size() int64 {
	n := int64(len(it.lb.b) + len(it.tail))
	if it.large != nil {
		n += int64(it.large.Len())
	}
	return n
}

// drop returns the line to the pool and releases the body.
func (it outItem) drop() {
	putLine(it.lb)
	if it.body != nil {
		it.body.Release()
	}
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
		room:       make(chan struct{}, 1),
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
		// sees a field combination it would reject. The params are not
		// in it: jsonrpc2 would decode them into maps and encode them
		// again (a 10 MiB message, several times over). They wait in
		// st.params, and the handler, which jsonrpc2 calls on this
		// goroutine before it reads again, takes them (takeParams) by
		// the number the canonical form carries as "meta".
		params := m.params
		m.params = nil
		canon := appendMessage(nil, m, false)
		st.paramsSeq++
		canon = append(canon[:len(canon)-2], `,"meta":`...)
		canon = strconv.AppendUint(canon, st.paramsSeq, 10)
		canon = append(canon, '}')
		st.params = params
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

// takeParams returns the params of req, which ReadObject returned: the
// ones it kept aside, when req carries their number. A request from
// elsewhere keeps its own. It runs on the ReadObject goroutine.
func (st *stream) takeParams(req *jsonrpc2.Request) json.RawMessage {
	if req.Meta != nil {
		if n, err := strconv.ParseUint(string(*req.Meta), 10, 64); err == nil && n == st.paramsSeq {
			params := st.params
			st.params = nil
			return params
		}
	}
	if req.Params == nil {
		return nil
	}
	return *req.Params
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
