package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/apserver/apserver/internal/editor"
)

// message is one line from the server: a response (ID, Result or Error), a
// notification (Method, Params) or a server request (ID, Method, Params).
type message struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *editor.Error

	raw []byte // the line as received, for --json
}

func (m *message) isRequest() bool  { return m.Method != "" && len(m.ID) > 0 }
func (m *message) isResponse() bool { return m.Method == "" && len(m.ID) > 0 }

// errExited reports that the server closed its stdout.
var errExited = errors.New("apserver closed its output (the process exited)")

// client is the demo's view of the fake editor (internal/editor): the
// demo's goroutine consumes the server's lines in order with next. While
// call waits for its response, every notification and server request that
// arrives first goes to the handler, so the live view sees the wire in its
// true order.
type client struct {
	e   *editor.Editor
	pos int // the next message for next

	// handle gets every notification and server request; it is set by the
	// demo before the first call.
	handle func(*message) error
	// trace, when set, gets every line: sent is true for "→" lines.
	trace func(sent bool, line []byte)
}

func newClient(w io.Writer, r io.Reader) *client {
	c := &client{}
	// Sent lines are traced as they are written (on the demo's goroutine),
	// received ones as next hands them out, in the view's order.
	c.e = editor.New(w, r, editor.Options{Trace: func(sent bool, line []byte) {
		if sent && c.trace != nil {
			c.trace(true, line)
		}
	}})
	return c
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
	wctx, cancel := context.WithDeadline(ctx, dl.at)
	defer cancel()
	m, err := c.e.Wait(wctx, c.pos, func(*editor.Message) bool { return true })
	switch {
	case errors.Is(err, editor.ErrClosed):
		err = errExited
		if rerr := c.e.Err(); rerr != nil {
			err = fmt.Errorf("reading apserver's output: %w", rerr)
		}
		return nil, fmt.Errorf("waiting for %s: %w", what, err)
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return nil, fmt.Errorf("timed out waiting for %s (gave up after %s)", what, dl.limit)
	case err != nil:
		return nil, fmt.Errorf("waiting for %s: %w", what, err)
	}
	c.pos = m.Seq + 1
	if c.trace != nil {
		c.trace(false, []byte(m.Raw))
	}
	out := &message{ID: m.ID, Method: m.Method, Params: m.Params, Result: m.Result, Error: m.Error, raw: []byte(m.Raw)}
	if m.Invalid {
		out.Method = "(unparseable line)"
	}
	return out, nil
}

// notify sends a notification.
func (c *client) notify(method string, params any) error {
	if err := c.e.Notify(method, params); err != nil {
		return fmt.Errorf("writing to apserver: %w", err)
	}
	return nil
}

// reply answers a server request.
func (c *client) reply(id json.RawMessage, result any) error {
	return c.e.Answer(&editor.Message{ID: id}, result)
}

// replyError answers a server request with a JSON-RPC error.
func (c *client) replyError(id json.RawMessage, code int, msg string) error {
	return c.e.AnswerError(&editor.Message{ID: id}, code, msg)
}

// call sends a request and waits up to timeout for its response, handing
// everything that arrives before it to the handler. The result is decoded
// into out when out is not nil.
func (c *client) call(ctx context.Context, timeout time.Duration, method string, params, out any) error {
	idJSON, err := c.e.Send(method, params)
	if err != nil {
		// A server that died before reading the request: say which.
		return fmt.Errorf("sending %s: %w", method, err)
	}
	id, _ := strconv.ParseInt(idJSON, 10, 64)
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
