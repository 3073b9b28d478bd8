package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
	"github.com/apserver/apserver/store"
)

// discard is a session client that drops notifications.
type discard struct{}

func (discard) Notify(string, any)                  {}
func (discard) Call(string, any) session.ClientCall { return nil }
func (discard) NotifyThread(string, string, any)    {}

// taskThread records run r's task started in thread th.
func taskThread(t *testing.T, s *Store, r, th string) {
	t.Helper()
	ev, _ := json.Marshal(map[string]any{"type": "taskStarted", "taskId": "t1", "threadId": th})
	row := store.RunRow{ID: r, Cwd: "/repo", Status: "running", Run: json.RawMessage(`{}`)}
	if _, err := s.AppendRunEvent(context.Background(), row, "taskStarted", ev, 0, nil); err != nil {
		t.Fatal(err)
	}
}

// A relayed request is pending with its run (found by its thread) until
// answered; of two editors answering at once exactly one answer is
// stored, and it is what the worker's Wait returns.
func TestRelayAnswerOnce(t *testing.T) {
	_, pool, s := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	taskThread(t, s, "run1", "th1")
	c := NewRelayClient(ctx, pool, "w1", discard{}, nil)
	call := c.Call("item/commandExecution/requestApproval", map[string]any{"threadId": "th1", "itemId": "call_1", "command": "touch x"})

	p, err := Pending(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 1 || p[0].ID != call.ID() || p[0].RunID != "run1" || p[0].ThreadID != "th1" || p[0].ItemID != "call_1" ||
		p[0].Method != "item/commandExecution/requestApproval" {
		t.Fatalf("pending = %+v", p)
	}

	var wg sync.WaitGroup
	stored := make([]bool, 2)
	for i, d := range []string{"accept", "decline"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := Answer(ctx, pool, call.ID(), d, json.RawMessage(`{"decision":"`+d+`"}`), nil)
			if err != nil {
				t.Error(err)
			}
			stored[i] = ok
		}()
	}
	wg.Wait()
	if stored[0] == stored[1] {
		t.Fatalf("stored = %v, want exactly one answer stored", stored)
	}
	want := `{"decision":"accept"}`
	if stored[1] {
		want = `{"decision":"decline"}`
	}
	raw, err := call.Wait(ctx)
	if err != nil || string(raw) != want {
		t.Fatalf("Wait = %s, %v; want %s", raw, err, want)
	}
	if p, _ := Pending(ctx, pool); len(p) != 0 {
		t.Errorf("pending after the answer = %+v", p)
	}
}

// A JSON-RPC error answer reaches the worker as one; a request whose wait
// ends (the turn was interrupted) is given up: no longer pending, and no
// answer is stored afterwards.
func TestRelayErrorAndGiveUp(t *testing.T) {
	_, pool, _ := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := NewRelayClient(ctx, pool, "w1", discard{}, nil)

	call := c.Call("item/tool/requestUserInput", map[string]any{"threadId": "th9"})
	if _, err := Answer(ctx, pool, call.ID(), "e", nil, &protocol.RPCError{Code: -32601, Message: "no"}); err != nil {
		t.Fatal(err)
	}
	var rpcErr *protocol.RPCError
	if _, err := call.Wait(ctx); !errors.As(err, &rpcErr) || rpcErr.Code != -32601 {
		t.Fatalf("Wait = %v, want the JSON-RPC error -32601", err)
	}

	call = c.Call("item/commandExecution/requestApproval", map[string]any{"threadId": "th9"})
	wctx, wcancel := context.WithCancel(ctx)
	wcancel()
	if _, err := call.Wait(wctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with its context ended = %v", err)
	}
	if p, _ := Pending(ctx, pool); len(p) != 0 {
		t.Errorf("pending after the worker gave up = %+v", p)
	}
	if ok, err := Answer(ctx, pool, call.ID(), "e", json.RawMessage(`{}`), nil); err != nil || ok {
		t.Errorf("Answer to a request given up = %v, %v; want not stored", ok, err)
	}
}

// editor is a session client whose requests the test answers.
type editor struct {
	mu       sync.Mutex
	calls    chan *editorCall
	resolved chan protocol.ServerRequestResolvedNotification
	n        int64
}

type editorCall struct {
	id     int64
	method string
	params any
	answer chan json.RawMessage
}

func (c *editorCall) ID() int64 { return c.id }
func (c *editorCall) Wait(ctx context.Context) (json.RawMessage, error) {
	select {
	case a := <-c.answer:
		return a, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (e *editor) Notify(method string, params any) {
	if p, ok := params.(protocol.ServerRequestResolvedNotification); ok && method == protocol.NotifyServerRequestResolved {
		e.resolved <- p
	}
}

func (e *editor) Call(method string, params any) session.ClientCall {
	e.mu.Lock()
	c := &editorCall{id: e.n, method: method, params: params, answer: make(chan json.RawMessage, 1)}
	e.n++
	e.mu.Unlock()
	e.calls <- c
	return c
}

type attn struct {
	mu    sync.Mutex
	items map[int64]protocol.AttentionItem
}

func (a *attn) SetRelayAttention(id int64, it protocol.AttentionItem) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.items[id] = it
}
func (a *attn) ClearRelayAttention(id int64, _ string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.items, id)
}
func (a *attn) get(id int64) (protocol.AttentionItem, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	it, ok := a.items[id]
	return it, ok
}

// Two editors forward a worker's request unchanged and show it; the
// first answers, the worker gets that answer, and both clients are told
// the request is resolved (the second's withdrawn) with its item gone.
func TestRelayedTwoEditors(t *testing.T) {
	_, pool, s := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	taskThread(t, s, "run1", "th1")
	eds := []*editor{{calls: make(chan *editorCall, 4), resolved: make(chan protocol.ServerRequestResolvedNotification, 4)},
		{calls: make(chan *editorCall, 4), resolved: make(chan protocol.ServerRequestResolvedNotification, 4)}}
	ats := []*attn{{items: map[int64]protocol.AttentionItem{}}, {items: map[int64]protocol.AttentionItem{}}}
	for i := range eds {
		go Relayed(ctx, pool, eds[i], ats[i], "editor", nil, nil)
	}
	w := NewRelayClient(ctx, pool, "w1", discard{}, nil)
	call := w.Call("item/fileChange/requestApproval", map[string]any{"threadId": "th1", "itemId": "i1"})
	got := []*editorCall{<-eds[0].calls, <-eds[1].calls}
	for i, c := range got {
		b, _ := json.Marshal(c.params)
		if c.method != "item/fileChange/requestApproval" || string(b) != `{"itemId":"i1","threadId":"th1"}` {
			t.Errorf("editor %d got %s %s", i, c.method, b)
		}
		if it, ok := ats[i].get(call.ID()); !ok || it.RunID != "run1" || it.ThreadID != "th1" || it.Kind != protocol.AttentionApproval ||
			it.Reason != "item/fileChange/requestApproval from worker w1" {
			t.Errorf("editor %d's attention item = %+v, %v", i, it, ok)
		}
	}
	got[0].answer <- json.RawMessage(`{"decision":"accept"}`)
	if raw, err := call.Wait(ctx); err != nil || string(raw) != `{"decision":"accept"}` {
		t.Fatalf("the worker's Wait = %s, %v", raw, err)
	}
	for i := range eds {
		if r := <-eds[i].resolved; r.RequestID != got[i].id || r.ThreadID != "th1" {
			t.Errorf("editor %d: serverRequest/resolved %+v", i, r)
		}
		if _, ok := ats[i].get(call.ID()); ok {
			t.Errorf("editor %d still shows the answered request", i)
		}
	}
}

// The pending requests of a worker that stopped beating, or stopped, are
// given up (its threads died with it); a live worker's stay.
func TestRelayGiveUpDead(t *testing.T) {
	_, pool, _ := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, w := range []string{"dead", "alive"} {
		if err := Heartbeat(ctx, pool, w, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE apserver_workers SET heartbeat_at = now() - interval '1 minute' WHERE id = 'dead'`); err != nil {
		t.Fatal(err)
	}
	dead := NewRelayClient(ctx, pool, "dead", discard{}, nil).Call("item/commandExecution/requestApproval", map[string]any{"threadId": "a"})
	alive := NewRelayClient(ctx, pool, "alive", discard{}, nil).Call("item/commandExecution/requestApproval", map[string]any{"threadId": "b"})
	NewRelayClient(ctx, pool, "stopped", discard{}, nil).Call("item/commandExecution/requestApproval", map[string]any{"threadId": "c"})
	if n, err := GiveUpDead(ctx, pool, 15*time.Second); err != nil || n != 2 {
		t.Fatalf("GiveUpDead = %d, %v; want 2 (the dead and the stopped worker's)", n, err)
	}
	p, err := Pending(ctx, pool)
	if err != nil || len(p) != 1 || p[0].ID != alive.ID() {
		t.Fatalf("pending = %+v, %v; want only the live worker's %d (not %d)", p, err, alive.ID(), dead.ID())
	}
}

// Nothing is forwarded to a client before it initialized: the request
// waits, and is sent once ready says so.
func TestRelayedWaitsForReady(t *testing.T) {
	_, pool, _ := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := NewRelayClient(ctx, pool, "w1", discard{}, nil)
	call := w.Call("item/commandExecution/requestApproval", map[string]any{"threadId": "th1"})
	ed := &editor{calls: make(chan *editorCall, 4), resolved: make(chan protocol.ServerRequestResolvedNotification, 4)}
	var mu sync.Mutex
	isReady := false
	asked := make(chan bool, 100)
	go Relayed(ctx, pool, ed, &attn{items: map[int64]protocol.AttentionItem{}}, "editor", func() bool {
		mu.Lock()
		defer mu.Unlock()
		select {
		case asked <- isReady:
		default:
		}
		return isReady
	}, nil)
	// Two looks while not ready (the request was stored before the
	// first): nothing sent.
	<-asked
	<-asked
	select {
	case c := <-ed.calls:
		t.Fatalf("request %s sent before the client was ready", c.method)
	default:
	}
	mu.Lock()
	isReady = true
	mu.Unlock()
	c := <-ed.calls
	c.answer <- json.RawMessage(`{"decision":"accept"}`)
	if raw, err := call.Wait(ctx); err != nil || string(raw) != `{"decision":"accept"}` {
		t.Fatalf("Wait = %s, %v", raw, err)
	}
}

// A request of a run that ended is given up even while its worker lives
// (a cancel that landed just as the request was relayed may not have
// interrupted the asking turn), and the worker's wait for it ends with an
// error saying so instead of waiting for ever.
func TestRelayGiveUpEndedRun(t *testing.T) {
	_, pool, _ := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := Heartbeat(ctx, pool, "w1", 1); err != nil {
		t.Fatal(err)
	}
	for id, status := range map[string]string{"ended": "cancelled", "working": "running"} {
		if _, err := pool.Exec(ctx, `INSERT INTO apserver_runs (id, cwd, status, run, created_at, updated_at) VALUES ($1, '/p', $2, '{}', 0, 0)`, id, status); err != nil {
			t.Fatal(err)
		}
	}
	w := NewRelayClient(ctx, pool, "w1", discard{}, nil)
	ended := w.Call("item/commandExecution/requestApproval", map[string]any{"threadId": "a"})
	working := w.Call("item/commandExecution/requestApproval", map[string]any{"threadId": "b"})
	for id, run := range map[int64]string{ended.ID(): "ended", working.ID(): "working"} {
		if _, err := pool.Exec(ctx, `UPDATE apserver_relay SET run_id = $2 WHERE id = $1`, id, run); err != nil {
			t.Fatal(err)
		}
	}
	waited := make(chan error, 1)
	go func() { _, err := ended.Wait(ctx); waited <- err }()
	if n, err := GiveUpDead(ctx, pool, 15*time.Second); err != nil || n != 1 {
		t.Fatalf("GiveUpDead = %d, %v; want 1 (the ended run's)", n, err)
	}
	if err := <-waited; err == nil || !strings.Contains(err.Error(), "withdrawn") {
		t.Fatalf("the worker's wait ended with %v, want the request withdrawn", err)
	}
	p, err := Pending(ctx, pool)
	if err != nil || len(p) != 1 || p[0].ID != working.ID() {
		t.Fatalf("pending = %+v, %v; want only the working run's request", p, err)
	}
}
