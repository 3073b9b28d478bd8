package autodrive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/internal/clock"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/tools"
)

// fakeClock stands still; its timers fire only when a test says so.
type fakeClock struct {
	now    time.Time
	timers []func()
}

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) AfterFunc(_ time.Duration, f func()) clock.Timer {
	c.timers = append(c.timers, f)
	return stopper{}
}

type stopper struct{}

func (stopper) Stop() bool { return true }

// fakeThread is an ephemeral thread that records what its drive asks of
// it; posted work runs at once (the test is the thread goroutine).
type fakeThread struct {
	ctx     context.Context
	log     []string
	turns   []fullauto.TurnInput
	failing error // BeginTurn's answer
}

func (f *fakeThread) ID() string                          { return "t1" }
func (f *fakeThread) Persistent() bool                    { return false }
func (f *fakeThread) Context() context.Context            { return f.ctx }
func (f *fakeThread) Cwd() string                         { return "/w" }
func (f *fakeThread) Post(ctx context.Context, fn func()) { fn() }
func (f *fakeThread) Notify(method string, params any) {
	f.log = append(f.log, "notify "+method)
}
func (f *fakeThread) BeginTurn(in fullauto.TurnInput) error {
	f.turns = append(f.turns, in)
	f.log = append(f.log, fmt.Sprintf("turn %q hidden=%t", in.Text, in.Hidden != ""))
	return f.failing
}
func (f *fakeThread) Interrupt()                              { f.log = append(f.log, "interrupt") }
func (f *fakeThread) TurnTimer(string, time.Duration, func()) {}
func (f *fakeThread) Handoff(fullauto.Handoff)                { f.log = append(f.log, "handoff") }
func (f *fakeThread) Ask(store.PendingRequest) Call           { panic("no restart here") }
func (f *fakeThread) Answered(int64)                          {}
func (f *fakeThread) RunApproved(string, string, bool, func(tools.ExecResult, error)) {
	panic("no restart here")
}
func (f *fakeThread) Await(int64, string, json.RawMessage) (context.Context, <-chan json.RawMessage, func()) {
	panic("no restart here")
}

func newTestDrive(t *testing.T) (*Drive, *fakeThread, *[]string) {
	th := &fakeThread{ctx: context.Background()}
	var attn []string
	cfg := config.FullAutoConfig{OnRestart: config.OnRestartRunning, ApprovalTimeout: time.Minute, ErrorBackoff: time.Second, QuestionMinConfidence: 0.8}
	ids := 0
	env := &Env{
		Clock: &fakeClock{now: time.UnixMilli(1_000_000)},
		Store: func() (*store.Store, error) { return nil, errors.New("no store") },
		Log:   slog.New(slog.NewTextHandler(io.Discard, nil)), Config: &cfg,
		Attention: NewAttention(func(_ string, params any) {
			n := params.(protocol.AttentionNotification)
			var kinds []string
			for _, it := range n.Items {
				kinds = append(kinds, string(it.Kind))
			}
			attn = append(attn, strings.Join(kinds, ","))
		}),
		DecisionModel: func() *DecisionModel { return nil },
		InputClosed:   func() bool { return false },
		NewID:         func() string { ids++; return fmt.Sprint("r", ids) },
	}
	return New(env, th), th, &attn
}

// TestDriveThroughThread: a drive carries out its machine's effects
// through the Thread it is given: fullAuto/start begins a turn with the
// objective and answers with the running drive; the rules answer a
// request under the drive without the editor; pause shows in attention;
// a turn that cannot start is fed back to the machine, which pauses.
func TestDriveThroughThread(t *testing.T) {
	d, th, attn := newTestDrive(t)
	if d.Run() != nil {
		t.Fatalf("a fresh thread has a drive: %+v", d.Run())
	}
	objective := "make the tests pass"
	var res any
	var err error
	d.Do(fullauto.Start{Params: protocol.FullAutoStartParams{ThreadID: "t1", Objective: &objective}}, func(effs []fullauto.Effect) {
		res, err = d.Result(effs)
	})
	run, ok := res.(protocol.FullAutoRunResult)
	if err != nil || !ok || run.Run.State != protocol.FullAutoRunning {
		t.Fatalf("fullAuto/start = %+v, %v; want a running drive", res, err)
	}
	if len(th.turns) != 1 || !strings.Contains(th.turns[0].Text, objective) {
		t.Fatalf("turns begun = %+v, want one with the objective", th.turns)
	}
	d.Do(fullauto.TurnStarted{TurnID: "turn1", Kind: th.turns[0].Kind}, nil)

	// Under the default strategy the rules accept an allowed check (the
	// editor never sees it) and pass a forbidden command on to a human,
	// whose wait shows in attention until it ends.
	raw, ok := d.AutoAnswer("turn1", Request{Method: protocol.RequestCommandApproval, Kind: "command", Command: "go test ./...", Rule: "allow", Sandboxed: true, InsideWorkspace: true,
		Params: protocol.CommandApprovalParams{ItemID: "c1"}})
	if !ok || string(raw) != `{"decision":"accept"}` {
		t.Errorf("AutoAnswer(sandboxed go test) = %s, %t; want accepted", raw, ok)
	}
	forbidden := Request{Method: protocol.RequestCommandApproval, Kind: "command", Command: "rm -rf /", Rule: "forbidden",
		Params: protocol.CommandApprovalParams{ItemID: "c2"}}
	if raw, ok = d.AutoAnswer("turn1", forbidden); ok {
		t.Errorf("AutoAnswer(forbidden) = %s, want it passed on to a human", raw)
	}
	wait := d.RequestWait("turn1", forbidden, "approve command: rm -rf /", 7)
	_, cancel := wait(context.Background())
	if n := d.env.Attention.Snapshot(); n.Count != 1 || n.Items[0].Kind != protocol.AttentionApproval {
		t.Errorf("attention while a request waits = %+v, want its approval", n)
	}
	cancel()
	if n := d.env.Attention.Snapshot(); n.Count != 0 {
		t.Errorf("attention after the wait = %+v, want none", n)
	}

	d.Do(fullauto.Pause{}, func(effs []fullauto.Effect) { res, err = d.Result(effs) })
	if run, _ := res.(protocol.FullAutoRunResult); err != nil || run.Run.State != protocol.FullAutoPaused {
		t.Fatalf("fullAuto/pause = %+v, %v; want paused", res, err)
	}
	d.Do(fullauto.TurnEnded{End: fullauto.TurnEnd{Summary: Summarize(FinishedTurn{ID: "turn1", Status: "completed"})}}, nil)
	if got := strings.Join(*attn, " | "); !strings.Contains(got, "paused") {
		t.Errorf("attention = %q, want the pause in it", got)
	}

	th.failing = errors.New("the model is gone")
	d.Do(fullauto.Resume{}, func(effs []fullauto.Effect) { res, err = d.Result(effs) })
	if len(th.turns) != 2 {
		t.Fatalf("turns begun after resume = %d, want 2", len(th.turns))
	}
	// The failure went back to the machine: the drive pauses, saying why,
	// and waits on a human.
	if w := d.Wire(); w.State != protocol.FullAutoPaused || w.Reason == nil || !strings.Contains(*w.Reason, "the model is gone") {
		t.Errorf("drive after a turn failed to start = %+v, want paused with the error", w)
	}
	if n := d.env.Attention.Snapshot(); n.Count != 1 || n.Items[0].Kind != protocol.AttentionPaused {
		t.Errorf("attention after a turn failed to start = %+v, want the pause", n)
	}
	if _, err := d.Result([]fullauto.Effect{fullauto.Refused{Err: errors.New("x")}}); err == nil {
		t.Error("Result(Refused) = nil error")
	}
	if !strings.Contains(strings.Join(th.log, "\n"), "notify "+protocol.NotifyFullAutoStatusChanged) {
		t.Errorf("notifications = %q, want the drive's status", th.log)
	}
}

// TestTurnBegan: a turn's start reaches the machine; a drive's input
// gives back its carried-over call and hidden text, a client's turn
// neither.
func TestTurnBegan(t *testing.T) {
	d, _, _ := newTestDrive(t)
	if rc, hidden := d.TurnBegan("a", nil); rc != nil || hidden != "" {
		t.Errorf("TurnBegan(client's turn) = %v, %q; want nothing", rc, hidden)
	}
	carried := &ResumedCall{Hist: CallHistory(model.ToolCall{CallID: "c", Name: "exec_command"}, "ok")}
	rc, hidden := d.TurnBegan("b", &fullauto.TurnInput{Kind: "continue", Hidden: "go on", Resume: carried})
	if rc != carried || hidden != "go on" {
		t.Errorf("TurnBegan(drive's turn) = %v, %q; want its call and hidden text", rc, hidden)
	}
	if len(carried.Hist) != 2 || carried.Hist[1].Output != "ok" || carried.Hist[0].Name != "exec_command" {
		t.Errorf("CallHistory = %+v, want the call and its output", carried.Hist)
	}
	if err := d.StoreHidden(context.Background(), "b", "go on"); err != nil {
		t.Errorf("StoreHidden on an ephemeral thread = %v, want nil (nothing to store)", err)
	}
	if g := d.Goal(); g.Goal != nil {
		t.Errorf("Goal() on an ephemeral thread = %+v, want none", g)
	}
}
