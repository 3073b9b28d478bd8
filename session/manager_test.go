package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/tools/sandbox"
)

// testTimeout guards against a hang: a wait that never ends fails the test
// with its log instead of stalling until go test's own timeout. It is no
// speed assertion (those live in benchmarks), so it is generous: a whole
// full-auto scenario under -race on a loaded two-core machine has taken
// longer than 10 s.
const testTimeout = time.Minute

// event is one thing the fake client saw, in wire order: a notification, a
// server→client request ("call"), or a reply to one of the test's requests
// ("reply").
type event struct {
	Kind   string // notify | call | reply
	Method string // notification or request method; for replies the label the test gave
	Params json.RawMessage
	Err    error // replies only
}

// fakeClient records everything in order under a mutex.
type fakeClient struct {
	mu      sync.Mutex
	log     []event
	changed chan struct{} // closed and replaced on every append
	nextID  int64
	calls   chan *fakeCall
}

func newFakeClient() *fakeClient {
	return &fakeClient{changed: make(chan struct{}), calls: make(chan *fakeCall, 16)}
}

func (c *fakeClient) add(e event) {
	c.mu.Lock()
	c.log = append(c.log, e)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

func (c *fakeClient) Notify(method string, params any) {
	b, err := json.Marshal(params)
	if err != nil {
		panic(fmt.Sprintf("marshalling %s params: %v", method, err))
	}
	c.add(event{Kind: "notify", Method: method, Params: b})
}

func (c *fakeClient) Call(method string, params any) ClientCall {
	b, err := json.Marshal(params)
	if err != nil {
		panic(fmt.Sprintf("marshalling %s params: %v", method, err))
	}
	c.mu.Lock()
	id := c.nextID
	c.nextID++
	c.mu.Unlock()
	fc := &fakeCall{id: id, method: method, params: b, answer: make(chan callAnswer, 1)}
	c.add(event{Kind: "call", Method: method, Params: b})
	c.calls <- fc
	return fc
}

func (c *fakeClient) snapshot() []event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]event(nil), c.log...)
}

// waitFor waits until pred holds for the log and returns the log.
func (c *fakeClient) waitFor(t *testing.T, what string, pred func([]event) bool) []event {
	t.Helper()
	deadline := time.NewTimer(testTimeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		log := append([]event(nil), c.log...)
		ch := c.changed
		c.mu.Unlock()
		if pred(log) {
			return log
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; log:\n%s", what, dump(log))
		}
	}
}

// waitNotify waits for a notification of method (on thread, if non-empty)
// and returns the log and the index of the first such notification.
func (c *fakeClient) waitNotify(t *testing.T, method, thread string) ([]event, int) {
	t.Helper()
	var at int
	log := c.waitFor(t, method+" on "+thread, func(log []event) bool {
		at = find(log, 0, method, thread)
		return at >= 0
	})
	return log, at
}

func dump(log []event) string {
	var b strings.Builder
	for i, e := range log {
		p := string(e.Params)
		if len(p) > 300 {
			p = p[:300] + "…"
		}
		fmt.Fprintf(&b, "%3d %s %s %s %v\n", i, e.Kind, e.Method, p, e.Err)
	}
	return b.String()
}

// threadOf returns the threadId of an event's params (or thread.id).
func threadOf(e event) string {
	var v struct {
		ThreadID string `json:"threadId"`
		Thread   struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	_ = json.Unmarshal(e.Params, &v)
	if v.ThreadID != "" {
		return v.ThreadID
	}
	return v.Thread.ID
}

// find returns the index of the first event at or after from with the given
// method (any kind) on thread ("" = any), or -1.
func find(log []event, from int, method, thread string) int {
	for i := from; i < len(log); i++ {
		if log[i].Method == method && (thread == "" || threadOf(log[i]) == thread) {
			return i
		}
	}
	return -1
}

func filter(log []event, method, thread string) []event {
	var out []event
	for _, e := range log {
		if e.Method == method && (thread == "" || threadOf(e) == thread) {
			out = append(out, e)
		}
	}
	return out
}

type callAnswer struct {
	raw json.RawMessage
	err error
}

type fakeCall struct {
	id     int64
	method string
	params json.RawMessage
	answer chan callAnswer
}

func (f *fakeCall) ID() int64 { return f.id }

func (f *fakeCall) Wait(ctx context.Context) (json.RawMessage, error) {
	select {
	case a := <-f.answer:
		return a.raw, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// harness is a Manager wired to a fake client and a scripted model.
type harness struct {
	m      *Manager
	c      *fakeClient
	srv    *scripted.Server
	dbPath string
}

func testConfig(t *testing.T, baseURL string) config.Config {
	t.Helper()
	cfg := config.Default()
	pc := cfg.Providers[cfg.Provider]
	pc.BaseURL = baseURL
	pc.APIKey = "test-key"
	pc.APIKeyEnv = ""
	pc.Wire = "responses"
	cfg.Providers[cfg.Provider] = pc
	cfg.RequestMaxRetries = 0
	if _, p, err := cfg.ResolveModel("", ""); err != nil || p.BaseURL != baseURL {
		t.Fatalf("ResolveModel = %+v, %v; want BaseURL %s", p, err, baseURL)
	}
	return cfg
}

func newHarness(t *testing.T, sc scripted.Script, coalesce bool) *harness {
	t.Helper()
	srv, err := scripted.Start(sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	h := &harness{srv: srv, dbPath: filepath.Join(t.TempDir(), "a.db")}
	h.open(t, coalesce)
	return h
}

// open starts a Manager on h.dbPath with a fresh client. Close is left to
// the test when it wants to check it, else done at cleanup.
func (h *harness) open(t *testing.T, coalesce bool) {
	t.Helper()
	h.c = newFakeClient()
	path := h.dbPath
	m := NewManager(Options{
		OpenStore:      func() (*store.Store, error) { return store.Open(path, store.Options{}) },
		Config:         testConfig(t, h.srv.URL()),
		Client:         h.c,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		Version:        "test",
		CoalesceDeltas: coalesce,
	})
	h.m = m
	var once sync.Once
	closeM := func() { once.Do(func() { _ = m.Close() }) }
	t.Cleanup(closeM)
}

// call runs one Manager method and waits for its reply, which is also
// recorded in the client's log (labelled label) at the moment it is made.
func call[R any](t *testing.T, h *harness, label string, do func(Reply)) (R, error) {
	t.Helper()
	type res struct {
		b   json.RawMessage
		err error
	}
	ch := make(chan res, 2)
	c := h.c
	do(func(result any, err error) {
		var b json.RawMessage
		if err == nil {
			var merr error
			b, merr = json.Marshal(result)
			if merr != nil {
				err = fmt.Errorf("marshalling reply: %w", merr)
			}
		}
		c.add(event{Kind: "reply", Method: label, Params: b, Err: err})
		ch <- res{b, err}
	})
	var r R
	select {
	case got := <-ch:
		if got.err != nil {
			return r, got.err
		}
		if err := json.Unmarshal(got.b, &r); err != nil {
			t.Fatalf("%s: decoding reply %s: %v", label, got.b, err)
		}
		select {
		case <-ch:
			t.Fatalf("%s: reply called twice", label)
		default:
		}
		return r, nil
	case <-time.After(testTimeout):
		t.Fatalf("%s: no reply within %v; log:\n%s", label, testTimeout, dump(c.snapshot()))
	}
	return r, nil
}

func mustCall[R any](t *testing.T, h *harness, label string, do func(Reply)) R {
	t.Helper()
	r, err := call[R](t, h, label, do)
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	return r
}

func (h *harness) startThread(t *testing.T, p protocol.ThreadStartParams) protocol.ThreadStartResult {
	t.Helper()
	if p.Cwd == nil {
		p.Cwd = ptr(t.TempDir())
	}
	return mustCall[protocol.ThreadStartResult](t, h, "thread/start", func(r Reply) { h.m.StartThread(context.Background(), p, r) })
}

func (h *harness) startTurn(t *testing.T, threadID, text string) protocol.Turn {
	t.Helper()
	res := mustCall[protocol.TurnResult](t, h, "turn/start:"+threadID, func(r Reply) {
		h.m.StartTurn(context.Background(), protocol.TurnStartParams{ThreadID: threadID, Input: []protocol.UserInput{protocol.TextInput(text)}}, r)
	})
	return res.Turn
}

// turnCompleted waits for turn/completed on thread and returns the log, its
// index and the decoded turn.
func (h *harness) turnCompleted(t *testing.T, threadID string) ([]event, int, protocol.Turn) {
	t.Helper()
	log, at := h.c.waitNotify(t, protocol.NotifyTurnCompleted, threadID)
	var n protocol.TurnNotification
	if err := json.Unmarshal(log[at].Params, &n); err != nil {
		t.Fatal(err)
	}
	return log, at, n.Turn
}

// completedItems decodes the item/completed notifications of a thread.
func completedItems(t *testing.T, log []event, threadID string) []protocol.ThreadItem {
	t.Helper()
	var out []protocol.ThreadItem
	for _, e := range filter(log, protocol.NotifyItemCompleted, threadID) {
		var v struct {
			Item json.RawMessage `json:"item"`
		}
		if err := json.Unmarshal(e.Params, &v); err != nil {
			t.Fatal(err)
		}
		it, err := protocol.UnmarshalThreadItem(v.Item)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, it)
	}
	return out
}

// deltas concatenates the agent-message deltas of a thread and counts them.
func deltas(t *testing.T, log []event, threadID string) (string, int) {
	t.Helper()
	var b strings.Builder
	ds := filter(log, protocol.NotifyAgentMessageDelta, threadID)
	for _, e := range ds {
		var d protocol.DeltaNotification
		if err := json.Unmarshal(e.Params, &d); err != nil {
			t.Fatal(err)
		}
		b.WriteString(d.Delta)
	}
	return b.String(), len(ds)
}

func agentTexts(items []protocol.ThreadItem) []string {
	var out []string
	for _, it := range items {
		if am, ok := it.(protocol.AgentMessageItem); ok {
			out = append(out, am.Text)
		}
	}
	return out
}

func statusOf(t *testing.T, e event) protocol.ThreadStatus {
	t.Helper()
	var n protocol.ThreadStatusChangedNotification
	if err := json.Unmarshal(e.Params, &n); err != nil {
		t.Fatal(err)
	}
	return n.Status
}

func TestPlainTurn(t *testing.T) {
	t.Parallel()
	const answer = "Hello there, this is a scripted answer with several words."
	for _, coalesce := range []bool{false, true} {
		t.Run(fmt.Sprintf("coalesce=%v", coalesce), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, scripted.Script{Rules: []scripted.Rule{{Match: "hello", Steps: []scripted.Step{{Text: answer}}}}}, coalesce)
			th := h.startThread(t, protocol.ThreadStartParams{})
			id := th.Thread.ID
			if id == "" || th.Thread.CLIVersion != "test" || th.ApprovalPolicy.Mode != protocol.ApprovalOnRequest {
				t.Fatalf("thread/start result = %+v", th)
			}
			log, started := h.c.waitNotify(t, protocol.NotifyThreadStarted, id)
			if reply := find(log, 0, "thread/start", ""); reply < 0 || reply > started {
				t.Errorf("thread/start reply at %d, thread/started at %d; want reply first\n%s", reply, started, dump(log))
			}

			turn := h.startTurn(t, id, "hello world")
			if turn.ID == "" || turn.Status != protocol.TurnInProgress {
				t.Fatalf("turn/start result = %+v", turn)
			}
			log, done, ct := h.turnCompleted(t, id)
			if ct.ID != turn.ID || ct.Status != protocol.TurnCompleted {
				t.Errorf("turn/completed turn = %s %s, want %s completed", ct.ID, ct.Status, turn.ID)
			}
			if done != len(log)-1 {
				t.Errorf("turn/completed at %d of %d events, want last\n%s", done, len(log), dump(log))
			}
			reply := find(log, 0, "turn/start:"+id, "")
			turnStarted := find(log, 0, protocol.NotifyTurnStarted, id)
			if reply < 0 || turnStarted < 0 || reply > turnStarted {
				t.Errorf("turn/start reply at %d, turn/started at %d; want reply first\n%s", reply, turnStarted, dump(log))
			}
			// active before turn/started; idle just before turn/completed.
			statuses := filter(log, protocol.NotifyThreadStatusChanged, id)
			if len(statuses) != 2 || statusOf(t, statuses[0]).String() != "active" || statusOf(t, statuses[1]).String() != "idle" {
				t.Errorf("status changes = %v, want active, idle\n%s", statuses, dump(log))
			}
			for i, e := range log {
				if e.Kind == "notify" && threadOf(e) == id && i > turnStarted && e.Method == protocol.NotifyTurnStarted {
					t.Errorf("second turn/started at %d", i)
				}
				if e.Kind == "notify" && threadOf(e) == id && i < turnStarted &&
					(strings.HasPrefix(e.Method, "item/") || e.Method == protocol.NotifyTurnCompleted) {
					t.Errorf("%s at %d before turn/started at %d", e.Method, i, turnStarted)
				}
			}
			text, n := deltas(t, log, id)
			items := completedItems(t, log, id)
			if len(items) != 2 || items[0].ItemType() != "userMessage" || items[1].ItemType() != "agentMessage" {
				t.Fatalf("completed items = %#v, want userMessage, agentMessage", items)
			}
			am := items[1].(protocol.AgentMessageItem)
			if text != answer || am.Text != answer {
				t.Errorf("deltas = %q, completed text = %q, want %q", text, am.Text, answer)
			}
			if words := len(strings.Fields(answer)); !coalesce && n != words {
				t.Errorf("coalesce off: %d deltas, want %d (one per word)", n, words)
			}
			if n == 0 || n > len(strings.Fields(answer)) {
				t.Errorf("%d deltas for %d words", n, len(strings.Fields(answer)))
			}
			// Every delta belongs to the completed message, between its item/started and item/completed.
			msgStart, msgDone := -1, -1
			for i, e := range log {
				if threadOf(e) != id {
					continue
				}
				var v struct {
					Item   struct{ ID, Type string } `json:"item"`
					ItemID string                    `json:"itemId"`
				}
				_ = json.Unmarshal(e.Params, &v)
				switch {
				case e.Method == protocol.NotifyItemStarted && v.Item.Type == "agentMessage":
					msgStart = i
				case e.Method == protocol.NotifyItemCompleted && v.Item.Type == "agentMessage":
					msgDone = i
				case e.Method == protocol.NotifyAgentMessageDelta:
					if v.ItemID != am.ID || msgStart < 0 || msgDone >= 0 {
						t.Errorf("delta at %d for item %q outside agentMessage %q (started %d, completed %d)", i, v.ItemID, am.ID, msgStart, msgDone)
					}
				}
			}
			if tu := find(log, 0, protocol.NotifyThreadTokenUsage, id); tu < msgDone || tu > done {
				t.Errorf("tokenUsage at %d, want between item/completed %d and turn/completed %d", tu, msgDone, done)
			}
			if ct.ItemsView != protocol.ItemsSummary || len(agentTexts(ct.Items)) != 1 || agentTexts(ct.Items)[0] != answer {
				t.Errorf("turn/completed items = %s %#v, want summary with the agent message", ct.ItemsView, ct.Items)
			}

			// The stored thread has the same items.
			rd := mustCall[protocol.ThreadResult](t, h, "thread/read", func(r Reply) {
				h.m.ReadThread(context.Background(), protocol.ThreadReadParams{ThreadID: id, IncludeTurns: true}, r)
			})
			if len(rd.Thread.Turns) != 1 || rd.Thread.Turns[0].Status != protocol.TurnCompleted || len(rd.Thread.Turns[0].Items) != 2 {
				t.Fatalf("thread/read turns = %+v", rd.Thread.Turns)
			}
			if got := agentTexts(rd.Thread.Turns[0].Items); len(got) != 1 || got[0] != answer {
				t.Errorf("thread/read agent text = %q, want %q", got, answer)
			}
			if rd.Thread.Preview != "hello world" || rd.Thread.Status.Type != protocol.StatusIdle {
				t.Errorf("thread/read preview %q status %v", rd.Thread.Preview, rd.Thread.Status)
			}
		})
	}
}

func TestCommandApprovalNever(t *testing.T) {
	t.Parallel()
	h := newHarness(t, scripted.Script{Rules: []scripted.Rule{{Match: "run", Steps: []scripted.Step{
		{Text: "Running it.", ToolCalls: []scripted.ToolCall{{Command: "echo hi"}}},
		{Text: "It printed hi."},
	}}}}, true)
	th := h.startThread(t, protocol.ThreadStartParams{ThreadSettings: protocol.ThreadSettings{ApprovalPolicy: &protocol.AskForApproval{Mode: protocol.ApprovalNever}}})
	id := th.Thread.ID
	h.startTurn(t, id, "run echo")
	log, _, ct := h.turnCompleted(t, id)
	if ct.Status != protocol.TurnCompleted {
		t.Fatalf("turn status = %s, want completed\n%s", ct.Status, dump(log))
	}
	if n := len(filter(log, protocol.RequestCommandApproval, "")); n != 0 {
		t.Errorf("%d approval requests with approvalPolicy never", n)
	}
	items := completedItems(t, log, id)
	var types []string
	for _, it := range items {
		types = append(types, it.ItemType())
	}
	if got, want := strings.Join(types, ","), "userMessage,agentMessage,commandExecution,agentMessage"; got != want {
		t.Fatalf("items = %s, want %s\n%s", got, want, dump(log))
	}
	ce := items[2].(protocol.CommandExecutionItem)
	if ce.Status != protocol.ItemCompleted || ce.ExitCode == nil || *ce.ExitCode != 0 || ce.AggregatedOutput == nil || *ce.AggregatedOutput != "hi\n" || !strings.Contains(ce.Command, "echo hi") {
		t.Errorf("command item = %+v", ce)
	}
	var out strings.Builder
	for _, e := range filter(log, protocol.NotifyCommandOutputDelta, id) {
		var d protocol.DeltaNotification
		_ = json.Unmarshal(e.Params, &d)
		if d.ItemID != ce.ID {
			t.Errorf("output delta for %q, want %q", d.ItemID, ce.ID)
		}
		out.WriteString(d.Delta)
	}
	if out.String() != "hi\n" {
		t.Errorf("output deltas = %q, want %q", out.String(), "hi\n")
	}
	if got := agentTexts(items); got[1] != "It printed hi." {
		t.Errorf("final message = %q", got[1])
	}
	if reqs := h.srv.Requests(); len(reqs) != 2 {
		t.Errorf("model requests = %d, want 2", len(reqs))
	}
}

// approvalSetup starts a turn whose command needs approval and returns the
// pending call.
func approvalSetup(t *testing.T) (*harness, string, string, *fakeCall) {
	t.Helper()
	h := newHarness(t, scripted.Script{Rules: []scripted.Rule{{Match: "make", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Command: "touch made.txt"}}},
		{Text: "Made it."},
	}}}}, true)
	dir := t.TempDir()
	// untrusted: commands the rules do not allow are asked about (under
	// on-request they would run in the sandbox without asking).
	th := h.startThread(t, protocol.ThreadStartParams{ThreadSettings: protocol.ThreadSettings{Cwd: &dir,
		ApprovalPolicy: &protocol.AskForApproval{Mode: protocol.ApprovalUntrusted}}})
	h.startTurn(t, th.Thread.ID, "make the file")
	var fc *fakeCall
	select {
	case fc = <-h.c.calls:
	case <-time.After(testTimeout):
		t.Fatalf("no approval request; log:\n%s", dump(h.c.snapshot()))
	}
	if fc.method != protocol.RequestCommandApproval {
		t.Fatalf("server request %s, want %s", fc.method, protocol.RequestCommandApproval)
	}
	var p protocol.CommandApprovalParams
	if err := json.Unmarshal(fc.params, &p); err != nil {
		t.Fatal(err)
	}
	if p.ThreadID != th.Thread.ID || p.Command == nil || !strings.Contains(*p.Command, "touch made.txt") || p.Cwd == nil || *p.Cwd != dir {
		t.Errorf("approval params = %s", fc.params)
	}
	// Order: status waitingOnApproval, item/started, the request.
	log := h.c.snapshot()
	st := -1
	for i, e := range log {
		if e.Method == protocol.NotifyThreadStatusChanged && statusOf(t, e).String() == "active[waitingOnApproval]" {
			st = i
			break
		}
	}
	is := -1
	for i, e := range log {
		if e.Method == protocol.NotifyItemStarted && strings.Contains(string(e.Params), `"type":"commandExecution"`) {
			is = i
		}
	}
	rq := find(log, 0, protocol.RequestCommandApproval, "")
	if !(st >= 0 && st < is && is < rq) {
		t.Errorf("waitingOnApproval at %d, item/started at %d, request at %d; want that order\n%s", st, is, rq, dump(log))
	}
	return h, th.Thread.ID, dir, fc
}

func TestApprovalAccept(t *testing.T) {
	t.Parallel()
	h, id, dir, fc := approvalSetup(t)
	fc.answer <- callAnswer{raw: json.RawMessage(`{"decision":"accept"}`)}
	log, done, ct := h.turnCompleted(t, id)
	if ct.Status != protocol.TurnCompleted {
		t.Fatalf("turn status %s, want completed\n%s", ct.Status, dump(log))
	}
	if _, err := os.Stat(filepath.Join(dir, "made.txt")); err != nil {
		t.Errorf("command did not run: %v", err)
	}
	rs := find(log, 0, protocol.NotifyServerRequestResolved, id)
	var resolved protocol.ServerRequestResolvedNotification
	_ = json.Unmarshal(log[rs].Params, &resolved)
	if rs < 0 || resolved.RequestID != fc.id {
		t.Errorf("serverRequest/resolved = %s, want requestId %d", log[rs].Params, fc.id)
	}
	act := -1
	for i := rs; i < len(log); i++ {
		if log[i].Method == protocol.NotifyThreadStatusChanged {
			act = i
			if s := statusOf(t, log[i]); s.String() != "active" {
				t.Errorf("status after resolve = %v, want active []", s)
			}
			break
		}
	}
	ic := -1
	items := completedItems(t, log, id)
	for i, e := range log {
		if e.Method == protocol.NotifyItemCompleted && strings.Contains(string(e.Params), `"type":"commandExecution"`) {
			ic = i
		}
	}
	if !(rs < act && act < ic && ic < done) {
		t.Errorf("resolved %d, status %d, item/completed %d, turn/completed %d; want that order\n%s", rs, act, ic, done, dump(log))
	}
	for _, it := range items {
		if ce, ok := it.(protocol.CommandExecutionItem); ok && ce.Status != protocol.ItemCompleted {
			t.Errorf("command status %s, want completed", ce.Status)
		}
	}
	if len(filter(log, protocol.NotifyServerRequestResolved, id)) != 1 {
		t.Errorf("want exactly one serverRequest/resolved\n%s", dump(log))
	}
}

func TestApprovalCancel(t *testing.T) {
	t.Parallel()
	h, id, dir, fc := approvalSetup(t)
	fc.answer <- callAnswer{raw: json.RawMessage(`{"decision":"cancel"}`)}
	log, done, ct := h.turnCompleted(t, id)
	if ct.Status != protocol.TurnInterrupted {
		t.Fatalf("turn status %s, want interrupted\n%s", ct.Status, dump(log))
	}
	if _, err := os.Stat(filepath.Join(dir, "made.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cancelled command ran (stat: %v)", err)
	}
	var ce *protocol.CommandExecutionItem
	for _, it := range completedItems(t, log, id) {
		if c, ok := it.(protocol.CommandExecutionItem); ok {
			ce = &c
		}
	}
	if ce == nil || ce.Status != protocol.ItemDeclined {
		t.Errorf("command item = %+v, want declined", ce)
	}
	if rs := filter(log, protocol.NotifyServerRequestResolved, id); len(rs) != 1 {
		t.Errorf("%d serverRequest/resolved, want 1", len(rs))
	}
	if done != len(log)-1 {
		t.Errorf("turn/completed not last\n%s", dump(log))
	}
	if n := len(h.srv.Requests()); n != 1 {
		t.Errorf("model requests = %d, want 1 (no model call after cancel)", n)
	}
}

func TestApprovalPendingThenInterrupt(t *testing.T) {
	t.Parallel()
	h, id, _, fc := approvalSetup(t)
	turnID := ""
	for _, e := range h.c.snapshot() {
		if e.Method == protocol.NotifyTurnStarted {
			var n protocol.TurnNotification
			_ = json.Unmarshal(e.Params, &n)
			turnID = n.Turn.ID
		}
	}
	mustCall[protocol.Empty](t, h, "turn/interrupt", func(r Reply) {
		h.m.InterruptTurn(context.Background(), protocol.TurnInterruptParams{ThreadID: id, TurnID: turnID}, r)
	})
	_, done, ct := h.turnCompleted(t, id)
	if ct.Status != protocol.TurnInterrupted {
		t.Fatalf("turn status %s", ct.Status)
	}
	// The request cleaned up by the interrupt is resolved after turn/completed.
	log := h.c.waitFor(t, "serverRequest/resolved", func(l []event) bool { return find(l, done, protocol.NotifyServerRequestResolved, id) > done })
	if rs := filter(log, protocol.NotifyServerRequestResolved, id); len(rs) != 1 {
		t.Errorf("%d serverRequest/resolved, want 1\n%s", len(rs), dump(log))
	}
	// A late answer changes nothing.
	fc.answer <- callAnswer{raw: json.RawMessage(`{"decision":"accept"}`)}
	rd := mustCall[protocol.ThreadResult](t, h, "thread/read", func(r Reply) {
		h.m.ReadThread(context.Background(), protocol.ThreadReadParams{ThreadID: id, IncludeTurns: true}, r)
	})
	if len(rd.Thread.Turns) != 1 || rd.Thread.Turns[0].Status != protocol.TurnInterrupted {
		t.Errorf("turns = %+v", rd.Thread.Turns)
	}
}

// stalledTurn starts a turn whose stream stalls after its first delta and
// returns once that delta has been sent.
func stalledTurn(t *testing.T, sc scripted.Script, text string) (*harness, string, string) {
	t.Helper()
	h := newHarness(t, sc, true)
	th := h.startThread(t, protocol.ThreadStartParams{})
	turn := h.startTurn(t, th.Thread.ID, text)
	h.c.waitNotify(t, protocol.NotifyAgentMessageDelta, th.Thread.ID)
	return h, th.Thread.ID, turn.ID
}

func TestInterruptStalledStream(t *testing.T) {
	t.Parallel()
	h, id, turnID := stalledTurn(t, scripted.Script{Default: []scripted.Step{{Text: "one two three four", StallAfter: 1}}}, "go")
	_, err := call[protocol.Empty](t, h, "turn/interrupt:wrong", func(r Reply) {
		h.m.InterruptTurn(context.Background(), protocol.TurnInterruptParams{ThreadID: id, TurnID: "nope"}, r)
	})
	if !errors.Is(err, protocol.ErrInvalidRequest) {
		t.Errorf("interrupt with wrong turn id: err = %v, want ErrInvalidRequest", err)
	}
	mustCall[protocol.Empty](t, h, "turn/interrupt", func(r Reply) {
		h.m.InterruptTurn(context.Background(), protocol.TurnInterruptParams{ThreadID: id, TurnID: turnID}, r)
	})
	log, done, ct := h.turnCompleted(t, id)
	if ct.Status != protocol.TurnInterrupted || ct.ID != turnID {
		t.Fatalf("turn/completed = %s %s, want %s interrupted", ct.ID, ct.Status, turnID)
	}
	reply := find(log, 0, "turn/interrupt", "")
	idle := -1
	for i := reply; i >= 0 && i < len(log); i++ {
		if log[i].Method == protocol.NotifyThreadStatusChanged && statusOf(t, log[i]).Type == protocol.StatusIdle {
			idle = i
			break
		}
	}
	if !(reply >= 0 && reply < idle && idle < done) {
		t.Errorf("interrupt reply %d, idle %d, turn/completed %d; want that order\n%s", reply, idle, done, dump(log))
	}
	if got := agentTexts(completedItems(t, log, id)); len(got) != 0 {
		t.Errorf("partial message completed: %q", got)
	}
	// A second interrupt finds no turn; a new turn works.
	if _, err := call[protocol.Empty](t, h, "turn/interrupt:again", func(r Reply) {
		h.m.InterruptTurn(context.Background(), protocol.TurnInterruptParams{ThreadID: id, TurnID: turnID}, r)
	}); !errors.Is(err, protocol.ErrInvalidRequest) {
		t.Errorf("second interrupt: err = %v, want ErrInvalidRequest", err)
	}
	h.srv.SetScript(scripted.Script{Default: []scripted.Step{{Text: "fine now"}}})
	h.startTurn(t, id, "again")
	log = h.c.waitFor(t, "second turn/completed", func(l []event) bool { return len(filter(l, protocol.NotifyTurnCompleted, id)) == 2 })
	if got := agentTexts(completedItems(t, log, id)); len(got) != 1 || got[0] != "fine now" {
		t.Errorf("second turn messages = %q", got)
	}
}

func TestSteerStalledStream(t *testing.T) {
	t.Parallel()
	sc := scripted.Script{Rules: []scripted.Rule{
		{Match: "first", Steps: []scripted.Step{{Text: "partial answer that never ends", StallAfter: 1}}},
		{Match: "second", Steps: []scripted.Step{{Text: "steered answer"}}},
	}}
	h, id, turnID := stalledTurn(t, sc, "first question")
	_, err := call[protocol.TurnSteerResult](t, h, "turn/steer:wrong", func(r Reply) {
		h.m.SteerTurn(context.Background(), protocol.TurnSteerParams{ThreadID: id, ExpectedTurnID: "nope", Input: []protocol.UserInput{protocol.TextInput("x")}}, r)
	})
	if !errors.Is(err, protocol.ErrInvalidRequest) || !strings.Contains(err.Error(), turnID) {
		t.Errorf("steer with wrong id: err = %v", err)
	}
	res := mustCall[protocol.TurnSteerResult](t, h, "turn/steer", func(r Reply) {
		h.m.SteerTurn(context.Background(), protocol.TurnSteerParams{ThreadID: id, ExpectedTurnID: turnID, Input: []protocol.UserInput{protocol.TextInput("second thoughts")}}, r)
	})
	if res.TurnID != turnID {
		t.Errorf("steer result = %+v, want turnId %s", res, turnID)
	}
	log, _, ct := h.turnCompleted(t, id)
	if ct.Status != protocol.TurnCompleted || ct.ID != turnID {
		t.Fatalf("turn/completed = %s %s\n%s", ct.ID, ct.Status, dump(log))
	}
	if n := len(filter(log, protocol.NotifyTurnStarted, id)); n != 1 {
		t.Errorf("%d turn/started, want 1", n)
	}
	items := completedItems(t, log, id)
	var users []string
	for _, it := range items {
		if um, ok := it.(protocol.UserMessageItem); ok {
			users = append(users, protocol.InputText(um.Content))
		}
	}
	if strings.Join(users, "|") != "first question|second thoughts" {
		t.Errorf("user messages = %q", users)
	}
	if got := agentTexts(items); len(got) != 1 || got[0] != "steered answer" {
		t.Errorf("agent messages = %q, want only the steered answer", got)
	}
	reqs := h.srv.Requests()
	if len(reqs) != 2 || reqs[1].LastUserText != "second thoughts" {
		t.Errorf("model requests = %d (last user %q)", len(reqs), reqs[len(reqs)-1].LastUserText)
	}
}

func TestConcurrentThreads(t *testing.T) {
	t.Parallel()
	step := scripted.Step{Deltas: 40, DeltaText: "tok ", InterDelta: time.Millisecond}
	h := newHarness(t, scripted.Script{Default: []scripted.Step{step}}, true)
	const n = 3
	ids := make([]string, n)
	for i := range ids {
		ids[i] = h.startThread(t, protocol.ThreadStartParams{}).Thread.ID
	}
	// StartTurn only posts to each thread's goroutine, so the turns run
	// concurrently; replies are collected without t.Fatal off the test goroutine.
	replies := make(chan error, n)
	for _, id := range ids {
		h.m.StartTurn(context.Background(), protocol.TurnStartParams{ThreadID: id, Input: []protocol.UserInput{protocol.TextInput("go " + id)}},
			func(_ any, err error) { replies <- err })
	}
	// Readers racing with the turns.
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			got := make(chan struct{}, 2)
			h.m.ListThreads(context.Background(), protocol.ThreadListParams{}, func(any, error) { got <- struct{}{} })
			h.m.ReadThread(context.Background(), protocol.ThreadReadParams{ThreadID: ids[0], IncludeTurns: true}, func(any, error) { got <- struct{}{} })
			for range 2 {
				select {
				case <-got:
				case <-time.After(testTimeout):
					return // reported by the main goroutine's timeouts
				}
			}
		}
	}()
	for range n {
		select {
		case err := <-replies:
			if err != nil {
				t.Errorf("turn/start: %v", err)
			}
		case <-time.After(testTimeout):
			t.Fatal("turn/start: no reply")
		}
	}
	log := h.c.waitFor(t, "all turns completed", func(l []event) bool {
		for _, id := range ids {
			if find(l, 0, protocol.NotifyTurnCompleted, id) < 0 {
				return false
			}
		}
		return true
	})
	close(stop)
	readers.Wait()
	want := strings.Repeat("tok ", 40)
	for _, id := range ids {
		text, _ := deltas(t, log, id)
		got := agentTexts(completedItems(t, log, id))
		if text != want || len(got) != 1 || got[0] != want {
			t.Errorf("thread %s: deltas %q, completed %q, want %q", id, text, got, want)
		}
	}
	lr := mustCall[protocol.ThreadListResult](t, h, "thread/list", func(r Reply) { h.m.ListThreads(context.Background(), protocol.ThreadListParams{}, r) })
	if len(lr.Data) != n {
		t.Errorf("thread/list = %d threads, want %d", len(lr.Data), n)
	}
	for _, th := range lr.Data {
		if th.Status.Type != protocol.StatusIdle {
			t.Errorf("thread %s status %v, want idle", th.ID, th.Status)
		}
	}
}

func TestCloseDuringTurnThenResume(t *testing.T) {
	t.Parallel()
	sc := scripted.Script{Rules: []scripted.Rule{{Match: "work", Steps: []scripted.Step{
		{Text: "Checking.", ToolCalls: []scripted.ToolCall{{Command: "echo hi"}}},
		{Text: "this will stall forever", StallAfter: 1},
	}}}}
	h := newHarness(t, sc, true)
	th := h.startThread(t, protocol.ThreadStartParams{ThreadSettings: protocol.ThreadSettings{ApprovalPolicy: &protocol.AskForApproval{Mode: protocol.ApprovalNever}}})
	id := th.Thread.ID
	turn := h.startTurn(t, id, "do some work")
	// Wait for the first delta of the second (stalling) response.
	h.c.waitFor(t, "stalled second response", func(l []event) bool {
		ds := filter(l, protocol.NotifyAgentMessageDelta, id)
		return len(ds) > 0 && strings.Contains(string(ds[len(ds)-1].Params), `"this `)
	})
	before := h.c.snapshot()
	closed := make(chan error, 1)
	go func() { closed <- h.m.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatalf("Close did not return within %v while a turn was running", testTimeout)
	}
	// Close sends nothing: the client is gone.
	if after := h.c.snapshot(); len(after) != len(before) {
		t.Errorf("Close sent %d more events:\n%s", len(after)-len(before), dump(after[len(before):]))
	}
	// Calls after Close do not hang.
	_, _ = call[protocol.ThreadListResult](t, h, "thread/list after close", func(r Reply) { h.m.ListThreads(context.Background(), protocol.ThreadListParams{}, r) })

	// A new Manager on the same file sees the turn interrupted with its completed items.
	h.open(t, true)
	res := mustCall[protocol.ThreadResumeResult](t, h, "thread/resume", func(r Reply) {
		h.m.ResumeThread(context.Background(), protocol.ThreadResumeParams{ThreadID: id}, r)
	})
	turns := res.Thread.Turns
	if len(turns) != 1 || turns[0].ID != turn.ID || turns[0].Status != protocol.TurnInterrupted {
		t.Fatalf("resumed turns = %+v, want %s interrupted", turns, turn.ID)
	}
	var types []string
	for _, it := range turns[0].Items {
		types = append(types, it.ItemType())
	}
	if got, want := strings.Join(types, ","), "userMessage,agentMessage,commandExecution"; got != want {
		t.Errorf("resumed items = %s, want %s", got, want)
	}
	if got := agentTexts(turns[0].Items); len(got) != 1 || got[0] != "Checking." {
		t.Errorf("resumed agent messages = %q", got)
	}
	log := h.c.snapshot()
	st, rp := find(log, 0, protocol.NotifyThreadStatusChanged, id), find(log, 0, "thread/resume", "")
	if st < 0 || st > rp || statusOf(t, log[st]).Type != protocol.StatusIdle {
		t.Errorf("want thread/status/changed idle before the resume reply\n%s", dump(log))
	}
	// The resumed thread runs a new turn whose request carries the old items.
	h.srv.SetScript(scripted.Script{Default: []scripted.Step{{Text: "resumed fine"}}})
	h.startTurn(t, id, "continue")
	log, _, ct := h.turnCompleted(t, id)
	if ct.Status != protocol.TurnCompleted {
		t.Errorf("turn after resume = %s\n%s", ct.Status, dump(log))
	}
	reqs := h.srv.Requests()
	if last := reqs[len(reqs)-1]; last.LastUserText != "continue" {
		t.Errorf("last request user text %q", last.LastUserText)
	}
}

func TestThreadManagement(t *testing.T) {
	t.Parallel()
	h := newHarness(t, scripted.Script{Default: []scripted.Step{{Text: "ok."}}}, true)
	ctx := context.Background()
	a := h.startThread(t, protocol.ThreadStartParams{}).Thread.ID
	t1 := h.startTurn(t, a, "first")
	h.turnCompleted(t, a)
	h.startTurn(t, a, "second")
	h.c.waitFor(t, "two turns", func(l []event) bool { return len(filter(l, protocol.NotifyTurnCompleted, a)) == 2 })

	// Fork through the first turn: reply, then thread/started.
	fk := mustCall[protocol.ThreadForkResult](t, h, "thread/fork", func(r Reply) {
		h.m.ForkThread(ctx, protocol.ThreadForkParams{ThreadID: a, LastTurnID: &t1.ID}, r)
	})
	b := fk.Thread.ID
	if b == "" || b == a || fk.Thread.ForkedFromID == nil || *fk.Thread.ForkedFromID != a {
		t.Fatalf("fork result thread = %+v", fk.Thread)
	}
	if len(fk.Thread.Turns) != 1 || len(fk.Thread.Turns[0].Items) != 2 {
		t.Errorf("fork turns = %+v, want the first turn's 2 items", fk.Thread.Turns)
	}
	log, started := h.c.waitNotify(t, protocol.NotifyThreadStarted, b)
	if rp := find(log, 0, "thread/fork", ""); rp > started {
		t.Errorf("fork reply at %d after thread/started at %d", rp, started)
	}

	// Name: reply, then thread/name/updated.
	name := "my thread"
	mustCall[protocol.Empty](t, h, "thread/name/set", func(r Reply) {
		h.m.SetThreadName(ctx, protocol.ThreadNameSetParams{ThreadID: a, Name: &name}, r)
	})
	log, nu := h.c.waitNotify(t, protocol.NotifyThreadNameUpdated, a)
	if rp := find(log, 0, "thread/name/set", ""); rp > nu {
		t.Errorf("name reply at %d after thread/name/updated at %d", rp, nu)
	}

	rd := mustCall[protocol.ThreadResult](t, h, "thread/read", func(r Reply) { h.m.ReadThread(ctx, protocol.ThreadReadParams{ThreadID: a, IncludeTurns: true}, r) })
	if rd.Thread.Name == nil || *rd.Thread.Name != name || len(rd.Thread.Turns) != 2 {
		t.Errorf("thread/read = name %v, %d turns", rd.Thread.Name, len(rd.Thread.Turns))
	}
	if _, err := call[protocol.ThreadResult](t, h, "thread/read:missing", func(r Reply) { h.m.ReadThread(ctx, protocol.ThreadReadParams{ThreadID: "nope"}, r) }); !errors.Is(err, protocol.ErrInvalidRequest) {
		t.Errorf("thread/read of unknown thread: err = %v", err)
	}

	lr := mustCall[protocol.ThreadListResult](t, h, "thread/list", func(r Reply) { h.m.ListThreads(ctx, protocol.ThreadListParams{}, r) })
	if len(lr.Data) != 2 || lr.Data[0].ID != b || lr.Data[1].ID != a || lr.NextCursor != nil {
		t.Errorf("thread/list = %+v, want [%s %s] newest first", lr.Data, b, a)
	}

	// Archive a loaded thread: notLoaded, reply, thread/archived.
	mustCall[protocol.Empty](t, h, "thread/archive", func(r Reply) { h.m.ArchiveThread(ctx, protocol.ThreadIDParams{ThreadID: a}, r) })
	log, ar := h.c.waitNotify(t, protocol.NotifyThreadArchived, a)
	rp := find(log, 0, "thread/archive", "")
	nl := -1
	for i, e := range log {
		if e.Method == protocol.NotifyThreadStatusChanged && threadOf(e) == a && statusOf(t, e).Type == protocol.StatusNotLoaded {
			nl = i
		}
	}
	if !(nl >= 0 && nl < rp && rp < ar) {
		t.Errorf("notLoaded %d, reply %d, thread/archived %d; want that order\n%s", nl, rp, ar, dump(log))
	}
	if _, err := call[protocol.TurnResult](t, h, "turn/start:unloaded", func(r Reply) {
		h.m.StartTurn(ctx, protocol.TurnStartParams{ThreadID: a, Input: []protocol.UserInput{protocol.TextInput("x")}}, r)
	}); !errors.Is(err, protocol.ErrInvalidRequest) {
		t.Errorf("turn/start on archived thread: err = %v", err)
	}
	lr = mustCall[protocol.ThreadListResult](t, h, "thread/list", func(r Reply) { h.m.ListThreads(ctx, protocol.ThreadListParams{}, r) })
	if len(lr.Data) != 1 || lr.Data[0].ID != b {
		t.Errorf("thread/list after archive = %+v, want only %s", lr.Data, b)
	}
	yes := true
	lr = mustCall[protocol.ThreadListResult](t, h, "thread/list", func(r Reply) { h.m.ListThreads(ctx, protocol.ThreadListParams{Archived: &yes}, r) })
	if len(lr.Data) != 1 || lr.Data[0].ID != a || lr.Data[0].Status.Type != protocol.StatusNotLoaded {
		t.Errorf("thread/list archived = %+v, want %s notLoaded", lr.Data, a)
	}

	ml := mustCall[protocol.ModelListResult](t, h, "model/list", func(r Reply) { h.m.ListModels(ctx, protocol.ModelListParams{}, r) })
	if len(ml.Data) == 0 || ml.Data[0].ID != config.Default().Model {
		t.Errorf("model/list = %+v, want the default model first", ml.Data)
	}
}

// TestNoKernelSandboxFallsBackToAsking: where the kernel cannot confine
// commands, a warning says so (once) and on-request asks before a command
// it would otherwise have run in the sandbox.
func TestNoKernelSandboxFallsBackToAsking(t *testing.T) {
	t.Parallel()
	h := newHarness(t, scripted.Script{Rules: []scripted.Rule{{Match: "make", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Command: "touch made.txt"}}},
		{ToolCalls: []scripted.ToolCall{{Command: "touch again.txt"}}},
		{Text: "Made it."},
	}}}}, true)
	h.m.opts.SandboxSupport = func() sandbox.Support { return sandbox.Support{Err: errors.New("Landlock is not available")} }
	dir := t.TempDir()
	th := h.startThread(t, protocol.ThreadStartParams{ThreadSettings: protocol.ThreadSettings{Cwd: &dir}})
	h.startTurn(t, th.Thread.ID, "make the files")
	for range 2 {
		select {
		case fc := <-h.c.calls:
			if fc.method != protocol.RequestCommandApproval {
				t.Fatalf("server request %s, want a command approval", fc.method)
			}
			fc.answer <- callAnswer{raw: json.RawMessage(`{"decision":"accept"}`)}
		case <-time.After(testTimeout):
			t.Fatalf("no approval request; log:\n%s", dump(h.c.snapshot()))
		}
	}
	log, _, ct := h.turnCompleted(t, th.Thread.ID)
	if ct.Status != protocol.TurnCompleted {
		t.Fatalf("turn %s\n%s", ct.Status, dump(log))
	}
	warnings := 0
	for _, e := range log {
		if e.Method == protocol.NotifyWarning && strings.Contains(string(e.Params), "Landlock is not available") {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("%d sandbox warnings, want 1\n%s", warnings, dump(log))
	}
	for _, f := range []string{"made.txt", "again.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("approved command did not run: %v", err)
		}
	}
}
