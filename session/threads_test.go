package session

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
	"github.com/apserver/apserver/store"
)

// next reads the next outcome of s, failing the test after testTimeout.
func next(t *testing.T, s port.Stream) port.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	o, err := s.Next(ctx)
	if err != nil {
		t.Fatalf("waiting for an outcome: %v", err)
	}
	return o
}

// untilTurnEnded reads s up to and including the TurnEnded of turnID.
func untilTurnEnded(t *testing.T, s port.Stream, turnID string) []port.Outcome {
	t.Helper()
	var out []port.Outcome
	for {
		o := next(t, s)
		out = append(out, o)
		if te, ok := o.(port.TurnEnded); ok && te.TurnID == turnID {
			return out
		}
	}
}

// The port starts threads and turns with typed values and shows a watcher
// its thread's outcomes, typed, and nothing of other threads.
func TestPortOutcomes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, scripted.Script{Rules: []scripted.Rule{
		{Match: "alpha", Steps: []scripted.Step{{Text: "Alpha answered."}}},
		{Match: "beta", Steps: []scripted.Step{{Text: "Beta answered."}}},
	}}, true)
	ctx := context.Background()
	th := h.m.Threads()
	dir := t.TempDir()
	a, err := th.StartThread(ctx, port.ThreadSpec{Settings: protocol.ThreadSettings{Cwd: &dir}, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := th.StartThread(ctx, port.ThreadSpec{Settings: protocol.ThreadSettings{Cwd: &dir}, Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	wa := th.Watch(a)
	ta, err := th.StartTurn(ctx, protocol.TurnStartParams{ThreadID: a, Input: []protocol.UserInput{protocol.TextInput("alpha")}})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := th.StartTurn(ctx, protocol.TurnStartParams{ThreadID: b, Input: []protocol.UserInput{protocol.TextInput("beta")}})
	if err != nil {
		t.Fatal(err)
	}
	got := untilTurnEnded(t, wa, ta.ID)
	var kinds []string
	for _, o := range got {
		if o.Thread() != a {
			t.Errorf("A's stream got %#v of thread %s", o, o.Thread())
		}
		switch o := o.(type) {
		case port.ItemCompleted:
			kinds = append(kinds, "item:"+o.Item.ItemType())
			if m, ok := o.Item.(protocol.AgentMessageItem); ok && m.Text != "Alpha answered." {
				t.Errorf("agent message %q", m.Text)
			}
		case port.TurnEnded:
			kinds = append(kinds, "turnEnded:"+string(o.Status))
			if o.Error != nil {
				t.Errorf("completed turn with error %+v", o.Error)
			}
		case port.UsageReported:
			kinds = append(kinds, "usage")
			if o.TurnID != ta.ID || o.Model == "" || o.Usage.InputTokens <= 0 || o.Usage.TotalTokens != o.Usage.InputTokens+o.Usage.OutputTokens {
				t.Errorf("usage outcome %+v", o)
			}
		default:
			kinds = append(kinds, "other")
		}
	}
	if s, want := strings.Join(kinds, ","), "item:userMessage,item:agentMessage,usage,turnEnded:completed"; s != want {
		t.Errorf("A's outcomes = %s, want %s", s, want)
	}
	h.c.waitNotify(t, protocol.NotifyTurnCompleted, b)
	_ = tb
	// Nothing of B reached A's stream, even after B's turn ended.
	short, cancel := context.WithTimeout(ctx, 0)
	defer cancel()
	if o, err := wa.Next(short); err == nil {
		t.Errorf("A's stream got %#v after its turn ended", o)
	}
	wa.Close()
	if _, err := wa.Next(ctx); !errors.Is(err, port.ErrClosed) {
		t.Errorf("Next after Close = %v, want ErrClosed", err)
	}
	// The typed settings reached the threads: A was started read-only
	// (no file-writing tools), B ephemeral (not stored).
	for _, r := range h.srv.Requests() {
		switch patch := slices.Contains(r.Tools, "apply_patch"); {
		case r.LastUserText == "alpha" && patch:
			t.Errorf("read-only thread A advertised apply_patch: %v", r.Tools)
		case r.LastUserText == "beta" && !patch:
			t.Errorf("thread B did not advertise apply_patch: %v", r.Tools)
		}
	}
	db, err := h.m.store()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetThread(ctx, b); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the ephemeral thread B: GetThread = %v, want not found", err)
	}
	if _, err := db.GetThread(ctx, a); err != nil {
		t.Errorf("thread A is not stored: %v", err)
	}
}

// The port answers a pending approval instead of the client: the command
// runs, the turn completes, the client is told the request is resolved.
func TestPortAnswersRequest(t *testing.T) {
	t.Parallel()
	h := newHarness(t, scripted.Script{Rules: []scripted.Rule{{Match: "make", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Command: "touch made.txt"}}},
		{Text: "Made it."},
	}}}}, true)
	ctx := context.Background()
	th := h.m.Threads()
	dir := t.TempDir()
	id, err := th.StartThread(ctx, port.ThreadSpec{Settings: protocol.ThreadSettings{Cwd: &dir,
		ApprovalPolicy: &protocol.AskForApproval{Mode: protocol.ApprovalUntrusted}}})
	if err != nil {
		t.Fatal(err)
	}
	w := th.Watch(id)
	defer w.Close()
	turn, err := th.StartTurn(ctx, protocol.TurnStartParams{ThreadID: id, Input: []protocol.UserInput{protocol.TextInput("make the file")}})
	if err != nil {
		t.Fatal(err)
	}
	var asked port.RequestAsked
	for {
		o, ok := next(t, w).(port.RequestAsked)
		if ok {
			asked = o
			break
		}
	}
	p, ok := asked.Params.(protocol.CommandApprovalParams)
	if asked.Method != protocol.RequestCommandApproval || !ok || p.Command == nil || !strings.Contains(*p.Command, "touch made.txt") || asked.TurnID != turn.ID {
		t.Fatalf("RequestAsked = %+v", asked)
	}
	if err := th.Answer(ctx, id, asked.RequestID+100, json.RawMessage(`{"decision":"accept"}`)); err == nil {
		t.Error("Answer to a request that is not pending succeeded")
	}
	if err := th.Answer(ctx, id, asked.RequestID, json.RawMessage(`{"decision":"accept"}`)); err != nil {
		t.Fatal(err)
	}
	got := untilTurnEnded(t, w, turn.ID)
	if te := got[len(got)-1].(port.TurnEnded); te.Status != protocol.TurnCompleted {
		t.Fatalf("turn ended %s (%+v)", te.Status, te.Error)
	}
	if _, err := os.Stat(filepath.Join(dir, "made.txt")); err != nil {
		t.Errorf("the approved command did not run: %v", err)
	}
	log := h.c.snapshot()
	rs := filter(log, protocol.NotifyServerRequestResolved, id)
	var n protocol.ServerRequestResolvedNotification
	if len(rs) != 1 || json.Unmarshal(rs[0].Params, &n) != nil || n.RequestID != asked.RequestID {
		t.Errorf("serverRequest/resolved = %v, want one for request %d\n%s", rs, asked.RequestID, dump(log))
	}
	if err := th.Answer(ctx, id, asked.RequestID, json.RawMessage(`{"decision":"accept"}`)); err == nil {
		t.Error("a second Answer to the same request succeeded")
	}
}

// threadClient records how notifications reached it: named by thread
// (NotifyThread) or not (Notify).
type threadClient struct {
	*fakeClient
	mu       sync.Mutex
	byThread map[string][]string // thread id → methods sent through NotifyThread
	unnamed  []string            // methods sent through Notify
}

func (c *threadClient) Notify(method string, params any) {
	c.mu.Lock()
	c.unnamed = append(c.unnamed, method)
	c.mu.Unlock()
	c.fakeClient.Notify(method, params)
}

func (c *threadClient) NotifyThread(threadID, method string, params any) {
	c.mu.Lock()
	c.byThread[threadID] = append(c.byThread[threadID], method)
	c.mu.Unlock()
	c.fakeClient.Notify(method, params)
}

// A thread driven through the port is routed like any other: its
// notifications reach a routing client (the socket Hub) named by thread,
// and the port's own notifications (run/*) are named as about no thread,
// for everyone.
func TestPortThreadsRouteByThread(t *testing.T) {
	t.Parallel()
	h := newHarness(t, scripted.Script{Rules: []scripted.Rule{{Match: "hi", Steps: []scripted.Step{{Text: "Hello."}}}}}, true)
	tc := &threadClient{fakeClient: newFakeClient(), byThread: map[string][]string{}}
	h.m.client = tc
	h.c = tc.fakeClient
	ctx := context.Background()
	th := h.m.Threads()
	dir := t.TempDir()
	id, err := th.StartThread(ctx, port.ThreadSpec{Settings: protocol.ThreadSettings{Cwd: &dir}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := th.StartTurn(ctx, protocol.TurnStartParams{ThreadID: id, Input: []protocol.UserInput{protocol.TextInput("hi")}}); err != nil {
		t.Fatal(err)
	}
	h.c.waitNotify(t, protocol.NotifyTurnCompleted, id)
	th.Notify(protocol.NotifyRunUpdated, protocol.RunUpdatedNotification{RunID: "r1"})
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for _, want := range []string{protocol.NotifyThreadStarted, protocol.NotifyTurnStarted, protocol.NotifyItemCompleted, protocol.NotifyTurnCompleted} {
		if !slices.Contains(tc.byThread[id], want) {
			t.Errorf("%s did not reach the client named by thread %s: %v", want, id, tc.byThread[id])
		}
	}
	if len(tc.unnamed) != 0 {
		t.Errorf("notifications sent without naming a thread: %v, want none", tc.unnamed)
	}
	if !slices.Equal(tc.byThread[""], []string{protocol.NotifyRunUpdated}) {
		t.Errorf("notifications about no thread: %v, want the port's run/updated", tc.byThread[""])
	}
}

// The port's full auto: started, reported by FullAuto, stopped with its
// condition on the stream.
func TestPortFullAuto(t *testing.T) {
	t.Parallel()
	h := newHarness(t, scripted.Script{Default: []scripted.Step{{Text: "Working on it."}}}, true)
	ctx := context.Background()
	th := h.m.Threads()
	dir := t.TempDir()
	id, err := th.StartThread(ctx, port.ThreadSpec{Settings: protocol.ThreadSettings{Cwd: &dir}})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := th.FullAuto(ctx, id); err != nil || st.Run != nil {
		t.Fatalf("FullAuto before a start = %+v, %v; want no run", st, err)
	}
	w := th.Watch(id)
	defer w.Close()
	obj := "keep going"
	run, err := th.StartFullAuto(ctx, protocol.FullAutoStartParams{ThreadID: id, Objective: &obj})
	if err != nil {
		t.Fatal(err)
	}
	if run.State != protocol.FullAutoRunning {
		t.Errorf("started run state %s", run.State)
	}
	if st, err := th.FullAuto(ctx, id); err != nil || st.Run == nil {
		t.Fatalf("FullAuto after a start = %+v, %v", st, err)
	}
	stopped, err := th.StopFullAuto(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if stopped.State != protocol.FullAutoStopped {
		t.Errorf("StopFullAuto = %s", stopped.State)
	}
	deadline := time.Now().Add(testTimeout)
	for time.Now().Before(deadline) {
		if fc, ok := next(t, w).(port.FullAutoChanged); ok && fc.Stopped() {
			if fc.Run.StopCondition == nil || *fc.Run.StopCondition != "userStop" {
				t.Errorf("stopped with %v, want userStop", fc.Run.StopCondition)
			}
			return
		}
	}
	t.Fatal("no FullAutoChanged stopped on the stream")
}

// A request full auto re-sends after a restart is announced on the port
// too, and the port's answer carries the run on: the command runs.
func TestPortAnswersRestoredRequest(t *testing.T) {
	t.Parallel()
	h, id, cwd := waitingRun(t, scripted.ToolCall{Command: "touch marker.txt"})
	h.open(t, false)
	th := h.m.Threads()
	w := th.Watch(id)
	defer w.Close()
	h.m.RestoreFullAuto()
	<-h.c.calls // the client got it again too, and does not answer
	var asked port.RequestAsked
	for {
		if o, ok := next(t, w).(port.RequestAsked); ok {
			asked = o
			break
		}
	}
	if asked.Method != protocol.RequestCommandApproval || asked.TurnID != "" {
		t.Fatalf("RequestAsked after the restart = %+v", asked)
	}
	if err := th.Answer(context.Background(), id, asked.RequestID, json.RawMessage(`{"decision":"accept"}`)); err != nil {
		t.Fatal(err)
	}
	for {
		if fc, ok := next(t, w).(port.FullAutoChanged); ok && fc.Stopped() {
			break
		}
	}
	if _, err := os.Stat(filepath.Join(cwd, "marker.txt")); err != nil {
		t.Errorf("the command approved through the port did not run: %v", err)
	}
}
