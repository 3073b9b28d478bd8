package server

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apserver/apserver/session"
)

// TestInputEndDrains: a request whose answer comes after the end of input
// is still answered, with the notifications its work sends, before Run
// returns; OnInputEnd runs only once everything read is answered, with the
// output still open, and its error is Run's. OnInputEnd stands for
// session.Manager.Drain: it waits for the work still in flight (here the
// notification the handler's work sends after its answer) before its own.
func TestInputEndDrains(t *testing.T) {
	release, workDone, closed := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var answering atomic.Bool
	errDrain := errors.New("drain result")
	var c *testConn
	c = startServer(t, Options{OnInputClosed: func() { close(closed) }, OnInputEnd: func(ctx context.Context) error {
		if !answering.Load() {
			t.Errorf("OnInputEnd ran before the request read was answered")
		}
		select {
		case <-workDone:
		case <-ctx.Done():
			return ctx.Err()
		}
		c.s.Client().Notify("test/draining", nil)
		return errDrain
	}}, func(s *Server) {
		Handle(s, "test/later", func(ctx context.Context, p struct{}, reply session.Reply) {
			go func() {
				defer close(workDone)
				<-release
				if ctx.Err() != nil {
					t.Errorf("handler ctx ended with the input: %v", ctx.Err())
				}
				answering.Store(true)
				reply("late", nil)
				s.Client().Notify("test/after", nil)
			}()
		})
	})
	c.initialize(nil)
	c.send(`{"id":1,"method":"test/later"}`)
	c.in.Close()
	// The answer comes once the server is draining: a server that did not
	// wait for it would run OnInputEnd first.
	<-closed
	close(release)
	var got []string
	for range 3 {
		m := c.recv()
		got = append(got, m.Method+string(m.ID))
	}
	if want := "1,test/after,test/draining"; strings.Join(got, ",") != want {
		t.Errorf("after EOF got %v, want %s", got, want)
	}
	if err := c.wait(); !errors.Is(err, errDrain) {
		t.Errorf("Run = %v, want OnInputEnd's error", err)
	}
}

// TestInputEndFailsServerCalls: once the input has ended nobody can answer
// a server→client request: a waiting one fails with session.ErrNoClient,
// and a later one is still written (the transcript shows what was asked)
// and fails at once.
func TestInputEndFailsServerCalls(t *testing.T) {
	later := make(chan error, 1)
	var c *testConn
	c = startServer(t, Options{OnInputEnd: func(ctx context.Context) error {
		_, err := c.s.Client().Call("test/ask", nil).Wait(ctx)
		later <- err
		return nil
	}}, nil)
	c.initialize(nil)
	waiting := c.s.Client().Call("test/first", nil)
	c.recv()
	c.in.Close()
	if _, err := waiting.Wait(context.Background()); !errors.Is(err, session.ErrNoClient) || !errors.Is(err, ErrClosed) {
		t.Errorf("waiting call after EOF: %v, want ErrNoClient (and ErrClosed)", err)
	}
	if err := <-later; !errors.Is(err, session.ErrNoClient) {
		t.Errorf("call after EOF: %v, want ErrNoClient", err)
	}
	if m := c.recv(); m.Method != "test/ask" || string(m.ID) != "1" {
		t.Errorf("call after EOF not written: %s", m.raw)
	}
	if err := c.wait(); err != nil {
		t.Errorf("Run = %v", err)
	}
}

// TestLanesKeepOrder: a request waits for the one before it in its lane
// (same threadId, or none) to be answered; another lane does not wait.
func TestLanesKeepOrder(t *testing.T) {
	replies := map[string]chan session.Reply{"": make(chan session.Reply, 2), "a": make(chan session.Reply, 2)}
	c := startServer(t, Options{}, func(s *Server) {
		Handle(s, "test/hold", func(ctx context.Context, p struct {
			ThreadID string `json:"threadId"`
		}, reply session.Reply) {
			replies[p.ThreadID] <- reply
		})
	})
	c.initialize(nil)
	c.send(`{"id":1,"method":"test/hold"}`)
	c.send(`{"id":2,"method":"test/hold"}`)
	c.send(`{"id":3,"method":"test/hold","params":{"threadId":"a"}}`)
	first := <-replies[""]
	third := <-replies["a"] // another lane: dispatched while 1 is unanswered
	select {
	case <-replies[""]:
		t.Fatal("request 2 was handled before request 1 was answered")
	default:
	}
	third(3, nil)
	if m := c.recv(); string(m.ID) != "3" {
		t.Fatalf("got %s, want the answer to 3", m.raw)
	}
	first(1, nil)
	second := <-replies[""]
	second(2, nil)
	for _, want := range []string{"1", "2"} {
		if m := c.recv(); string(m.ID) != want {
			t.Errorf("got %s, want the answer to %s", m.raw, want)
		}
	}
}

// TestInputClosedRunsBeforeAnswers: OnInputClosed runs as soon as the
// input ends, while a request is still unanswered (so it can end what that
// request waits for: --on-eof interrupt ends command/exec processes), and
// OnInputEnd runs only once the request is answered.
func TestInputClosedRunsBeforeAnswers(t *testing.T) {
	release := make(chan struct{})
	var (
		mu    sync.Mutex
		order []string
	)
	step := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	c := startServer(t, Options{
		OnInputClosed: func() { step("closed"); close(release) },
		OnInputEnd:    func(context.Context) error { step("end"); return nil },
	}, func(s *Server) {
		Handle(s, "test/wait", func(ctx context.Context, p struct{}, reply session.Reply) {
			go func() {
				<-release
				step("answered")
				reply("released", nil)
			}()
		})
	})
	c.initialize(nil)
	c.send(`{"id":1,"method":"test/wait"}`)
	c.in.Close()
	if m := c.recv(); string(m.ID) != "1" {
		t.Fatalf("got %s, want the answer to 1", m.raw)
	}
	if err := c.wait(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(order, ","); got != "closed,answered,end" {
		t.Errorf("order %s, want closed,answered,end", got)
	}
}
