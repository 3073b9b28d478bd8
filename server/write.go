package server

// The write side of the stream: one writer goroutine owns the output; any
// goroutine may enqueue a line encoded by encode.go.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// notify queues a notification: the fast path for session.Client.Notify,
// bypassing jsonrpc2.
func (st *stream) notify(method string, params any) error {
	if it, ok := largeNotification(method, params); ok {
		return st.enqueueItem(it)
	}
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
// full (in messages or in bytes). After Close it drops the line and
// returns ErrClosed. On a connection that shares the session with others
// (a Hub sets stallLimit), a client that has not made room for stallLimit
// is disconnected, so that it cannot hold up every other client's threads.
func (st *stream) enqueue(lb *lineBuf) error {
	return st.enqueueItem(outItem{lb: lb})
}

// enqueueItem queues a line, or a streamed message (it.body set: see
// outItem). A streamed body counts in the queue's bytes only for its head
// and tail: the rest is not in memory, and the writer copies it into the
// output as it goes.
func (st *stream) enqueueItem(it outItem) error {
	select {
	case <-st.closing:
		it.drop()
		return ErrClosed
	default:
	}
	var stall <-chan time.Time // armed on the first wait
	wait := func() <-chan time.Time {
		if stall == nil && st.stallLimit > 0 {
			t := time.NewTimer(st.stallLimit)
			stall = t.C
		}
		return stall
	}
	stalled := func() error {
		it.drop()
		st.fail(fmt.Errorf("the client read nothing for %v with its output queue full", st.stallLimit))
		return ErrClosed
	}
	n := it.size()
	for q := st.queued.Load(); q > 0 && q+n > queueBytes; q = st.queued.Load() {
		select {
		case <-st.room:
		case <-st.closing:
			it.drop()
			return ErrClosed
		case <-wait():
			return stalled()
		}
	}
	st.queued.Add(n)
	select {
	case st.q <- it:
		return nil
	default:
	}
	select {
	case st.q <- it:
		return nil
	case <-st.closing:
		st.queued.Add(-n)
		it.drop()
		return ErrClosed
	case <-wait():
		st.queued.Add(-n)
		return stalled()
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
		line := it.lb.b
		if it.large != nil {
			line = append(it.large.AppendTo(append(make([]byte, 0, len(line)+it.large.Len()+len(it.tail)), line...)), it.tail...)
		}
		if it.body != nil {
			// The trace logs every message whole, as it went out (a
			// debugging aid; the transcript checks read it).
			b := bytes.NewBuffer(append(make([]byte, 0, int64(len(line))+it.body.Len()), line...))
			if err := it.body.WriteBody(b); err != nil {
				b.WriteString("…")
			}
			b.Write(it.tail)
			line = b.Bytes()
		}
		st.log.Debug("send", "line", string(bytes.TrimSuffix(line, []byte{'\n'})))
	}
	_, err := st.w.Write(it.lb.b)
	if err == nil && it.large != nil {
		// The long strings are escaped straight into the output buffer;
		// a write error leaves a partial line, as below.
		if _, err = it.large.WriteTo(st.w); err == nil {
			_, err = st.w.Write(it.tail)
		}
	}
	if err == nil && it.body != nil {
		// The body goes straight into the output buffer. An error here
		// leaves a partial line: the connection closes (fail), as on any
		// write error. The body was read completely before it was
		// queued, so only the output, or reading back its spill file,
		// can fail.
		if err = it.body.WriteBody(st.w); err == nil {
			_, err = st.w.Write(it.tail)
		}
	}
	st.taken(it)
	it.drop()
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

// taken accounts for a line leaving the queue.
func (st *stream) taken(it outItem) {
	st.queued.Add(-it.size())
	select {
	case st.room <- struct{}{}:
	default:
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
				st.taken(it)
				it.drop()
			}
		default:
			return
		}
	}
}
