package demo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// message is one line from the server: a response (ID, Result or Error), a
// notification (Method, Params) or a server request (ID, Method, Params).
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *rpcError       `json:"error,omitempty"`

	raw []byte // the line as received, for --json
}

func (m *message) isRequest() bool  { return m.Method != "" && len(m.ID) > 0 }
func (m *message) isResponse() bool { return m.Method == "" && len(m.ID) > 0 }

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

// errExited reports that the server closed its stdout.
var errExited = errors.New("apserver closed its output (the process exited)")

// client is a JSON-RPC client over JSONL, single-threaded by design: one
// reader goroutine turns lines into messages, in order, and the demo's own
// goroutine consumes them with next. While call waits for its response,
// every notification and server request that arrives first goes to the
// handler, so the live view sees the wire in its true order.
type client struct {
	w       io.Writer
	msgs    chan *message
	readErr error // set before msgs is closed

	nextID int64

	// handle gets every notification and server request; it is set by the
	// demo before the first call.
	handle func(*message) error
	// trace, when set, gets every line: sent is true for "→" lines.
	trace func(sent bool, line []byte)
}

func newClient(w io.Writer, r io.Reader) *client {
	c := &client{w: w, msgs: make(chan *message, 1024)}
	go c.read(r)
	return c
}

func (c *client) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if line = bytes.TrimSpace(line); len(line) > 0 {
			m := &message{raw: line}
			if jerr := json.Unmarshal(line, m); jerr != nil {
				m = &message{raw: line, Method: "(unparseable line)"}
			}
			c.msgs <- m
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.readErr = err
			}
			close(c.msgs)
			return
		}
	}
}

// deadline is when waiting for something gives up, and how long it allowed.
type deadline struct {
	at    time.Time
	limit time.Duration
}

func within(d time.Duration) deadline { return deadline{time.Now().Add(d), d} }

// next returns the next message from the server. what names the thing being
// awaited, for the error when the deadline passes or the server goes away.
func (c *client) next(ctx context.Context, dl deadline, what string) (*message, error) {
	t := time.NewTimer(time.Until(dl.at))
	defer t.Stop()
	select {
	case m, ok := <-c.msgs:
		if !ok {
			err := errExited
			if c.readErr != nil {
				err = fmt.Errorf("reading apserver's output: %w", c.readErr)
			}
			return nil, fmt.Errorf("waiting for %s: %w", what, err)
		}
		if c.trace != nil {
			c.trace(false, m.raw)
		}
		return m, nil
	case <-t.C:
		return nil, fmt.Errorf("timed out waiting for %s (gave up after %s)", what, dl.limit)
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
	}
}

// send writes one message as one line.
func (c *client) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if c.trace != nil {
		c.trace(true, b)
	}
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing to apserver: %w", err)
	}
	return nil
}

// notify sends a notification.
func (c *client) notify(method string, params any) error {
	m := map[string]any{"method": method}
	if params != nil {
		m["params"] = params
	}
	return c.send(m)
}

// reply answers a server request.
func (c *client) reply(id json.RawMessage, result any) error {
	return c.send(map[string]any{"id": id, "result": result})
}

// replyError answers a server request with a JSON-RPC error.
func (c *client) replyError(id json.RawMessage, code int, msg string) error {
	return c.send(map[string]any{"id": id, "error": map[string]any{"code": code, "message": msg}})
}

// call sends a request and waits up to timeout for its response, handing
// everything that arrives before it to the handler. The result is decoded
// into out when out is not nil.
func (c *client) call(ctx context.Context, timeout time.Duration, method string, params, out any) error {
	c.nextID++
	id := c.nextID
	if err := c.send(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		// A server that died before reading the request: say which.
		return fmt.Errorf("sending %s: %w", method, err)
	}
	dl := within(timeout)
	what := "the " + method + " response"
	for {
		m, err := c.next(ctx, dl, what)
		if err != nil {
			return err
		}
		if !m.isResponse() {
			if err := c.handle(m); err != nil {
				return err
			}
			continue
		}
		got, perr := strconv.ParseInt(string(m.ID), 10, 64)
		if perr != nil || got != id {
			// Not ours: the demo has one call in flight at a time, so this
			// is a server bug worth showing rather than hiding.
			return fmt.Errorf("%s: got a response with unexpected id %s", method, m.ID)
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %w", method, m.Error)
		}
		if out != nil {
			if err := json.Unmarshal(m.Result, out); err != nil {
				return fmt.Errorf("%s: decoding the result: %w", method, err)
			}
		}
		return nil
	}
}
