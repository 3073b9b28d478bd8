package session

import (
	"context"
	"sync"
	"time"

	"github.com/apserver/apserver/autodrive"
	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/internal/uuid"
	"github.com/apserver/apserver/protocol"
)

// Full auto (docs/fullauto.md): a drive keeps a thread going by itself.
// Package autodrive carries it out (autodrive.Drive: the pure machine of
// package fullauto, fed through the shared driver, and its effects); the
// thread holds its drive (thread.auto) and is the drive's
// autodrive.Thread (autoThread): the turns it begins, its notifications,
// its goroutine. The agent loop feeds the drive at the points autohooks.go
// lists.
//
// The Manager keeps what spans threads (fullAutoManager): the attention
// summary, what the drives share (autodrive.Env) and the restart of
// drives. The model-call scheduler that every turn goes through is the
// Manager's (internal/modelsched).

// fullAutoManager is the Manager's share of full auto. Its fields are set
// once by NewManager; attention has its own lock.
type fullAutoManager struct {
	m    *Manager
	attn attention

	restoreOnce sync.Once
}

func newFullAutoManager(m *Manager) *fullAutoManager {
	return &fullAutoManager{m: m, attn: attention{m: m}}
}

// drives is what a thread's drive shares with the others, made when the
// drive is.
func (fa *fullAutoManager) drives() *autodrive.Env {
	m := fa.m
	return &autodrive.Env{
		Clock: m.clock, Store: m.store, Log: m.log, Config: &m.opts.Config.FullAuto,
		Attention: fa.attn.summary(), DecisionModel: m.decisionModel, InputClosed: m.inputClosed.Load, NewID: uuid.NewV7,
		OnMachine: func(id string) { panicPoint("fullauto", id) }, // tests: a panic in the machine (panics.go)
	}
}

// ApprovalReceiptInput and ApprovalReceiptOutput are the stored input and
// output of an approval receipt (fullauto owns them).
type (
	ApprovalReceiptInput  = fullauto.ApprovalInput
	ApprovalReceiptOutput = fullauto.ApprovalOutput
)

// threadAuto is a thread's full auto; owned by the thread goroutine.
type threadAuto struct {
	d *autodrive.Drive // made on first use: see thread.autod
}

// autoMachine is the thread's full-auto machine (autodrive.Machine).
type autoMachine = autodrive.Machine

// autod is the thread's drive.
func (t *thread) autod() *autodrive.Drive {
	if t.auto.d == nil {
		t.auto.d = autodrive.New(t.m.fa.drives(), autoThread{t})
	}
	return t.auto.d
}

// fsm is the thread's full-auto machine, rebuilt from the stored drive
// the first time (autodrive.Drive.Machine).
func (t *thread) fsm() *autoMachine { return t.autod().Machine() }

// autoDrive is the thread's drive, or nil.
func (t *thread) autoDrive() *fullauto.Drive { return t.autod().Run() }

// nowMs is the Manager's clock in unix ms.
func (t *thread) nowMs() int64 { return t.m.clock.Now().UnixMilli() }

// wireDrive renders the drive for the client.
func (t *thread) wireDrive() protocol.FullAutoRun { return t.autod().Wire() }

// drive feeds ev to the thread's machine (autodrive.Drive.Do).
func (t *thread) drive(ev fullauto.Event, reply func(effs []fullauto.Effect)) {
	t.autod().Do(ev, reply)
}

// apply carries out effects the machine returned outside drive (compact.go's).
func (t *thread) apply(effs []fullauto.Effect) { t.autod().Apply(effs) }

// replyDrive answers a fullAuto/* request with the drive, or the machine's
// refusal.
func (t *thread) replyDrive(reply Reply) func(effs []fullauto.Effect) {
	return func(effs []fullauto.Effect) { reply(t.autod().Result(effs)) }
}

// autoThread is the thread as its drive sees it (autodrive.Thread).
type autoThread struct{ t *thread }

func (a autoThread) ID() string                         { return a.t.id }
func (a autoThread) Persistent() bool                   { return a.t.persistent() }
func (a autoThread) Context() context.Context           { return a.t.ctx }
func (a autoThread) Cwd() string                        { return a.t.settings.Cwd }
func (a autoThread) Notify(method string, params any)   { a.t.notify(method, params) }
func (a autoThread) Post(ctx context.Context, f func()) { a.t.postEvent(ctx, f) }
func (a autoThread) Handoff(e fullauto.Handoff)         { a.t.handoff(e) } // compact_handoff.go

func (a autoThread) Interrupt() {
	if a.t.turn != nil {
		a.t.finishInterrupted()
	}
}

func (a autoThread) TurnTimer(turnID string, d time.Duration, f func()) {
	tr := a.t.turn
	if tr == nil || tr.id != turnID {
		return
	}
	ctx := tr.ctx
	tr.deadline = a.t.m.clock.AfterFunc(d, func() { a.t.postEvent(ctx, f) })
}

// BeginTurn starts a turn of the drive: with a visible user message, or
// hidden input, or items carried over from before a restart.
func (a autoThread) BeginTurn(in fullauto.TurnInput) error {
	t := a.t
	var input []protocol.UserInput
	if in.Text != "" {
		input = []protocol.UserInput{{Type: "text", Text: in.Text, TextElements: []protocol.TextElement{}}}
	}
	tr, err := t.beginTurn(protocol.TurnStartParams{ThreadID: t.id, Input: input})
	if err != nil {
		return err
	}
	t.runTurn(tr, userInput{content: input}, &in)
	return nil
}

// runTurnInput records how a turn starts, for the drive (called right after
// turn/started): a turn the drive began has its hidden input or carried-over
// items (autodrive.Drive.TurnBegan).
func (t *thread) runTurnInput(tr *turn, in *fullauto.TurnInput) error {
	rc, hidden := t.autod().TurnBegan(tr.id, in)
	if rc != nil {
		if err := t.resumeCallItems(tr, rc); err != nil {
			return err
		}
	}
	if hidden != "" {
		return t.hiddenInput(tr, hidden)
	}
	return nil
}

// hiddenInput adds text to the model history as user input, stored so a
// reload rebuilds the same history (loadHidden), without an item.
func (t *thread) hiddenInput(tr *turn, text string) error {
	if err := t.autod().StoreHidden(tr.ctx, tr.id, text); err != nil {
		return err
	}
	t.history = append(t.history, autodrive.HiddenEntry(text))
	return nil
}

func errNoDrive(id string) error {
	return protocol.Errorf(protocol.ErrInvalidRequest, "no full-auto run on thread %s", id)
}

// StartFullAuto implements fullAuto/start.
func (m *Manager) StartFullAuto(ctx context.Context, p protocol.FullAutoStartParams, reply Reply) {
	m.onLoad(ctx, p.ThreadID, reply, func(t *thread) {
		t.drive(fullauto.Start{Params: p, Preview: t.meta.Preview}, t.replyDrive(reply))
	})
}

// PauseFullAuto implements fullAuto/pause: no new turn starts; a running
// turn finishes.
func (m *Manager) PauseFullAuto(ctx context.Context, p protocol.FullAutoThreadParams, reply Reply) {
	m.withDrive(ctx, p.ThreadID, reply, func(t *thread) {
		t.drive(fullauto.Pause{}, t.replyDrive(reply))
	})
}

// ResumeFullAuto implements fullAuto/resume: a paused drive goes on; when the
// thread is idle a turn starts at once.
func (m *Manager) ResumeFullAuto(ctx context.Context, p protocol.FullAutoThreadParams, reply Reply) {
	m.withDrive(ctx, p.ThreadID, reply, func(t *thread) {
		t.drive(fullauto.Resume{}, t.replyDrive(reply))
	})
}

// StopFullAuto implements fullAuto/stop: the drive ends with userStop (a
// decision receipt records it) and a running turn is interrupted.
func (m *Manager) StopFullAuto(ctx context.Context, p protocol.FullAutoThreadParams, reply Reply) {
	m.withDrive(ctx, p.ThreadID, reply, func(t *thread) {
		t.drive(fullauto.Stop{}, t.replyDrive(reply))
	})
}

// FullAutoStatus implements fullAuto/status: one thread's drive, or every
// drive of the loaded threads and the stored ones.
func (m *Manager) FullAutoStatus(ctx context.Context, p protocol.FullAutoStatusParams, reply Reply) {
	if p.ThreadID != nil && *p.ThreadID != "" {
		m.withDrive(ctx, *p.ThreadID, reply, func(t *thread) {
			reply(protocol.FullAutoStatusResult{Runs: []protocol.FullAutoRun{t.wireDrive()}, Attention: m.fa.attn.snapshot()}, nil)
		})
		return
	}
	go func() {
		runs := []protocol.FullAutoRun{}
		seen := map[string]bool{}
		for _, t := range m.loadedThreads() {
			ch := make(chan *protocol.FullAutoRun, 1)
			t.post(func() {
				if t.autoDrive() == nil {
					ch <- nil
					return
				}
				w := t.wireDrive()
				ch <- &w
			})
			select {
			case w := <-ch:
				seen[t.id] = true
				if w != nil {
					runs = append(runs, *w)
				}
			case <-t.done:
			}
		}
		if db, err := m.store(); err == nil {
			stored, err := autodrive.StoredRuns(ctx, db, seen)
			if err != nil {
				reply(nil, err)
				return
			}
			runs = append(runs, stored...)
		}
		reply(protocol.FullAutoStatusResult{Runs: runs, Attention: m.fa.attn.snapshot()}, nil)
	}()
}

// loadedThreads returns the loaded threads.
func (m *Manager) loadedThreads() []*thread {
	m.mu.Lock()
	defer m.mu.Unlock()
	ts := make([]*thread, 0, len(m.threads))
	for _, t := range m.threads {
		ts = append(ts, t)
	}
	return ts
}

// onLoad runs f on the goroutine of thread id, loaded; a thread that
// cannot be loaded is the reply.
func (m *Manager) onLoad(ctx context.Context, id string, reply Reply, f func(t *thread)) {
	t, err := m.load(ctx, id)
	if err != nil {
		reply(nil, err)
		return
	}
	t.post(func() { f(t) })
}

// withDrive runs f on the thread goroutine when the thread has a drive.
func (m *Manager) withDrive(ctx context.Context, id string, reply Reply, f func(t *thread)) {
	m.onLoad(ctx, id, reply, func(t *thread) {
		if t.autoDrive() == nil {
			reply(nil, errNoDrive(id))
			return
		}
		f(t)
	})
}
