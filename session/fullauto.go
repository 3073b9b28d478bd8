package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apserver/apserver/autodrive"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/internal/drive"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// Full auto (docs/fullauto.md): a drive keeps a thread going by itself. The
// drive is a pure state machine (package fullauto) that the thread goroutine
// drives through the shared driver (package drive; thread.drive): it feeds
// the machine events (a turn started or ended, a model response's usage,
// an approval asked or answered, a method of the fullAuto/* or
// thread/goal/* family) at the Manager's clock, stores what they log and
// the receipts they make, answers, and applies the effects the machine
// returns, after its reply: notifications, the stored drive and receipts,
// the next turn (beginTurn, the same as turn/start's), the workspace
// fingerprint (fullauto_turn.go), the decision model (fullauto_model.go),
// attention, requests resent after a restart (fullauto_restore.go).
//
// The Manager keeps what spans threads (fullAutoManager): the attention
// summary and the restart of drives. The model-call scheduler that every
// turn goes through is the Manager's (sched.go).

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

// ApprovalReceiptInput and ApprovalReceiptOutput are the stored input and
// output of an approval receipt (fullauto owns them).
type (
	ApprovalReceiptInput  = fullauto.ApprovalInput
	ApprovalReceiptOutput = fullauto.ApprovalOutput
)

// threadAuto is a thread's full-auto state; owned by the thread goroutine.
type threadAuto struct {
	// fsm is the drive's state machine, made (and the stored drive replayed
	// from its log) on first use: see thread.fsm.
	fsm *autoMachine
	// fpCache speeds up the workspace fingerprint; nil while a walk has it.
	fpCache autodrive.FPCache
	// resend are the requests stored before a restart, by id, while the
	// machine has them resent.
	resend map[int64]store.PendingRequest
	// restored: restoreDrive ran (by RestoreFullAuto or RestoreFullAutoOf);
	// a drive is brought back once.
	restored bool
	// driver feeds the machine (drive); made on first use.
	driver *drive.Driver[fullauto.Event, fullauto.Effect]
}

// autoMachine is the thread's full-auto machine. Everything reaches it
// through feed (Apply); TurnStarted and Compacted are feed for the callers
// in compact.go.
type autoMachine struct {
	*fullauto.Machine
}

// TurnStarted is Apply(TurnStarted).
func (a *autoMachine) TurnStarted(now int64, turnID, kind string) []fullauto.Effect {
	return a.Apply(now, fullauto.TurnStarted{TurnID: turnID, Kind: kind})
}

// Compacted is Apply(Compacted).
func (a *autoMachine) Compacted(now int64, turnID string, ratio float64) []fullauto.Effect {
	return a.Apply(now, fullauto.Compacted{TurnID: turnID, Ratio: ratio})
}

// fsm returns the thread's full-auto machine, rebuilt from the stored drive
// the first time: replayed from its event log, or, for a drive stored
// before drives had a log, loaded from its snapshot (fullauto.Loaded).
func (t *thread) fsm() *autoMachine {
	panicPoint("fullauto", t.id) // tests: a panic in the machine (panics.go)
	a := &t.auto
	if a.fsm != nil {
		return a.fsm
	}
	fa := t.m.opts.Config.FullAuto
	opts := fullauto.Options{
		ThreadID:              t.id,
		Ephemeral:             !t.persistent(),
		DecisionModel:         t.m.decisionModel() != nil,
		QuestionMinConfidence: fa.QuestionMinConfidence,
		ErrorBackoffMs:        fa.ErrorBackoff.Milliseconds(),
		ApprovalTimeoutMs:     fa.ApprovalTimeout.Milliseconds(),
		OnRestartPaused:       fa.OnRestart == config.OnRestartPaused,
	}
	if lg, ok := t.loadLog(); ok {
		a.fsm = &autoMachine{fullauto.Replay(opts, lg)}
		// No turn of the process that wrote the log survives it.
		t.apply(a.fsm.Apply(t.nowMs(), fullauto.Reloaded{}))
		return a.fsm
	}
	a.fsm = &autoMachine{fullauto.New(opts)}
	if r := t.loadDrive(); r != nil {
		t.apply(a.fsm.Apply(t.nowMs(), fullauto.Loaded{Run: *r}))
	}
	return a.fsm
}

// feed applies ev to the thread's machine at the clock's time and returns
// the effects (the answer among them).
func (t *thread) feed(ev fullauto.Event) []fullauto.Effect {
	return t.fsm().Apply(t.nowMs(), ev)
}

// answer finds the machine's answer of type A among effs.
func answer[A fullauto.Effect](effs []fullauto.Effect) (A, bool) {
	for _, e := range effs {
		if a, ok := e.(A); ok {
			return a, true
		}
	}
	var zero A
	return zero, false
}

// autoDrive is the thread's drive, or nil.
func (t *thread) autoDrive() *fullauto.Drive { return t.fsm().Drive() }

// loadLog reads the thread's drive log; ok is false when there is none (no
// drive, or one stored before logs) or it cannot be read (then the
// snapshot is the fallback).
func (t *thread) loadLog() (fullauto.Log, bool) {
	if !t.persistent() {
		return fullauto.Log{}, false
	}
	db, err := t.m.store()
	if err != nil {
		return fullauto.Log{}, false
	}
	sl, err := db.GetFullAutoLog(t.ctx, t.id)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) && t.ctx.Err() == nil {
			t.m.log.Error("loading the full-auto log", "thread", t.id, "err", err)
		}
		return fullauto.Log{}, false
	}
	lg, err := fullauto.DecodeLog(sl.Base, sl.Entries)
	if err != nil {
		t.m.log.Error("decoding the full-auto log; reading the stored run instead", "thread", t.id, "err", err)
		return fullauto.Log{}, false
	}
	return lg, true
}

// loadDrive reads the thread's stored drive.
func (t *thread) loadDrive() *fullauto.Drive {
	if !t.persistent() {
		return nil
	}
	db, err := t.m.store()
	if err != nil {
		return nil
	}
	sr, err := db.GetDrive(t.ctx, t.id)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) && t.ctx.Err() == nil {
			t.m.log.Error("loading full-auto run", "thread", t.id, "err", err)
		}
		return nil
	}
	var r fullauto.Drive
	if err := json.Unmarshal(sr.Data, &r); err != nil {
		t.m.log.Error("decoding full-auto run", "thread", t.id, "err", err)
		return nil
	}
	return &r
}

// nowMs is the Manager's clock in unix ms.
func (t *thread) nowMs() int64 { return t.m.clock.Now().UnixMilli() }

// wireDrive renders the drive for the client.
func (t *thread) wireDrive() protocol.FullAutoRun { return t.fsm().Wire(t.nowMs()) }

// drive feeds ev to the thread's machine through the shared driver
// (package drive): applied at the clock's time, what its effects store
// (the log entry, receipts) is stored — a reply shows the decision a
// receipt records — then reply (if not nil) reads the answer among the
// effects left, then they are carried out in order.
func (t *thread) drive(ev fullauto.Event, reply func(effs []fullauto.Effect)) {
	a := &t.auto
	if a.driver == nil {
		a.driver = &drive.Driver[fullauto.Event, fullauto.Effect]{
			Clock: t.m.clock,
			Apply: func(now int64, ev fullauto.Event) []fullauto.Effect { return t.fsm().Apply(now, ev) },
			Store: func(_ fullauto.Event, effs []fullauto.Effect) ([]fullauto.Effect, error) { return t.store(effs), nil },
			Carry: t.carryOut,
		}
	}
	var r func([]fullauto.Effect, error)
	if reply != nil {
		r = func(effs []fullauto.Effect, _ error) { reply(effs) }
	}
	_ = a.driver.Do(ev, r) // t.store never fails: what it cannot store is logged
}

// replyDrive answers a fullAuto/* request with the drive, or the machine's
// refusal.
func (t *thread) replyDrive(reply Reply) func(effs []fullauto.Effect) {
	return func(effs []fullauto.Effect) {
		if r, ok := answer[fullauto.Refused](effs); ok {
			reply(nil, r.Err)
			return
		}
		reply(protocol.FullAutoRunResult{Run: t.wireDrive()}, nil)
	}
}

// store carries out the effects of effs that store — the log entry, the
// receipts — and returns the others in order. A decision receipt, once
// stored, is fed back (ReceiptStored), and the effects that answers gives
// take the receipt's place in the queue.
func (t *thread) store(effs []fullauto.Effect) []fullauto.Effect {
	var out []fullauto.Effect
	queue := effs
	for len(queue) > 0 {
		e := queue[0]
		queue = queue[1:]
		switch e := e.(type) {
		case fullauto.LogEvent:
			t.logEvent(e)
		case fullauto.StoreReceipt:
			id := newID()
			seq := t.storeReceipt(e, id)
			if e.Kind == fullauto.ReceiptDecision {
				more := t.feed(fullauto.ReceiptStored{ID: id, Seq: seq})
				queue = append(more, queue...)
			}
		default:
			out = append(out, e)
		}
	}
	return out
}

// apply carries out effects the machine returned outside drive (a
// rebuilt machine's, compact.go's): stored, then carried out.
func (t *thread) apply(effs []fullauto.Effect) { t.carryOut(t.store(effs)) }

// carryOut carries out the machine's effects that do not store, in order;
// the answers among them were read by the caller.
func (t *thread) carryOut(effs []fullauto.Effect) {
	for _, e := range effs {
		switch e := e.(type) {
		case fullauto.Notify:
			t.notify(e.Method, e.Params)
		case fullauto.SaveDrive:
			t.saveDrive(e)
		case fullauto.DeleteDrive:
			t.deleteDrive()
		case fullauto.StartTurn:
			t.startDriveTurn(e)
		case fullauto.Fingerprint:
			t.fingerprint(e)
		case fullauto.AskModel:
			t.askDecisionModel(e)
		case fullauto.SetAttention:
			t.m.fa.attn.set(attnKey{t.id, protocol.AttentionPaused, 0}, protocol.AttentionItem{
				ThreadID: t.id, Kind: protocol.AttentionPaused, Reason: e.Reason, SinceMs: e.SinceMs,
			})
		case fullauto.ClearAttention:
			t.m.fa.attn.clear(attnKey{t.id, protocol.AttentionPaused, 0})
		case fullauto.DropPending:
			t.dropPending(e.Request)
		case fullauto.Resend:
			t.resend(e)
		case fullauto.Interrupt:
			if t.turn != nil {
				t.finishInterrupted()
			}
		case fullauto.TurnDeadline:
			t.turnDeadline(e)
		case fullauto.Handoff:
			t.handoff(e) // compact_handoff.go
		}
	}
}

// logEvent appends an event the machine applied to the stored drive log.
func (t *thread) logEvent(e fullauto.LogEvent) {
	if !t.persistent() {
		return
	}
	entry, err := json.Marshal(e.Entry)
	var base []byte
	if err == nil && e.Fresh {
		base, err = json.Marshal(e.Base)
	}
	if err != nil {
		t.m.log.Error("bug: a full-auto event does not encode", "thread", t.id, "err", err)
		return
	}
	db, err := t.m.store()
	if err == nil {
		err = db.AppendFullAutoEvent(context.WithoutCancel(t.ctx), t.id, e.Entry.AtMs, entry, e.Fresh, base)
	}
	if err != nil {
		t.m.log.Error("storing a full-auto event", "thread", t.id, "err", err)
	}
}

// saveDrive stores the drive.
func (t *thread) saveDrive(e fullauto.SaveDrive) {
	if !t.persistent() {
		return
	}
	db, err := t.m.store()
	if err == nil {
		err = db.PutDrive(context.WithoutCancel(t.ctx), store.Drive{ThreadID: t.id, State: e.State, Data: e.Data})
	}
	if err != nil {
		t.m.log.Error("saving full-auto run", "thread", t.id, "err", err)
	}
}

func (t *thread) deleteDrive() {
	if !t.persistent() {
		return
	}
	if db, err := t.m.store(); err == nil {
		if err := db.DeleteDrive(context.WithoutCancel(t.ctx), t.id); err != nil {
			t.m.log.Error("deleting a full-auto run", "thread", t.id, "err", err)
		}
		if err := db.DeleteFullAutoLog(context.WithoutCancel(t.ctx), t.id); err != nil {
			t.m.log.Error("deleting a full-auto log", "thread", t.id, "err", err)
		}
	}
}

// storeReceipt stores a receipt as id and returns its sequence number
// (the machine's own for a thread without a store).
func (t *thread) storeReceipt(e fullauto.StoreReceipt, id string) int {
	if !t.persistent() {
		return e.Seq
	}
	ib, err := json.Marshal(e.Input)
	if err != nil {
		t.m.log.Error("bug: receipt input does not encode", "thread", t.id, "err", err)
		return 0
	}
	ob, _ := json.Marshal(e.Output)
	db, err := t.m.store()
	if err == nil {
		var sr store.Receipt
		sr, err = db.AppendReceipt(context.WithoutCancel(t.ctx), store.Receipt{ThreadID: t.id, ID: id, Kind: e.Kind, TurnID: e.TurnID,
			Input: ib, Output: ob, PolicyHash: e.PolicyHash, Executed: e.Executed, Override: e.Override})
		if err == nil {
			return sr.Seq
		}
	}
	t.m.log.Error("storing receipt", "thread", t.id, "err", err)
	return 0
}

// startDriveTurn starts the turn a StartTurn asks for, now or after its
// delay (a cooldown after a failure).
func (t *thread) startDriveTurn(e fullauto.StartTurn) {
	if e.DelayMs > 0 {
		ctx := t.ctx
		t.m.clock.AfterFunc(time.Duration(e.DelayMs)*time.Millisecond, func() {
			t.postEvent(ctx, func() { t.drive(fullauto.TimerFired{Token: e.Token}, nil) })
		})
		return
	}
	if t.m.inputClosed.Load() {
		return // no client: the next one resumes the run (drain.go)
	}
	if err := t.beginDriveTurn(e.Input); err != nil {
		t.m.log.Error("full auto: starting a turn", "thread", t.id, "err", err)
		t.drive(fullauto.TurnStartFailed{Message: err.Error()}, nil)
	}
}

// turnDeadline sets the timer of a TurnDeadline on the running turn; the
// turn's end stops it.
func (t *thread) turnDeadline(e fullauto.TurnDeadline) {
	tr := t.turn
	if tr == nil || tr.id != e.TurnID {
		return
	}
	ctx := tr.ctx
	tr.deadline = t.m.clock.AfterFunc(time.Duration(e.DelayMs)*time.Millisecond, func() {
		t.postEvent(ctx, func() {
			t.drive(fullauto.DeadlineReached{TurnID: e.TurnID}, func(effs []fullauto.Effect) {
				if _, ok := answer[fullauto.Interrupt](effs); ok {
					t.m.log.Info("full auto: time budget spent during a turn; interrupting it", "thread", t.id, "turn", e.TurnID)
				}
			})
		})
	})
}

// beginDriveTurn starts a turn of the drive: with a visible user message, or
// hidden input, or items carried over from before a restart.
func (t *thread) beginDriveTurn(in fullauto.TurnInput) error {
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
// items, which the model sees as the user's but no item shows (like
// Codex's goal continuation).
func (t *thread) runTurnInput(tr *turn, in *fullauto.TurnInput) error {
	kind := ""
	if in != nil {
		kind = in.Kind
	}
	t.drive(fullauto.TurnStarted{TurnID: tr.id, Kind: kind}, nil)
	if in == nil {
		return nil
	}
	if rc, ok := in.Resume.(*resumedCall); ok && rc != nil {
		if err := t.resumeCallItems(tr, rc); err != nil {
			return err
		}
	}
	if in.Hidden != "" {
		return t.hiddenInput(tr, in.Hidden)
	}
	return nil
}

// hiddenInput adds text to the model history as user input, stored so a
// reload rebuilds the same history (loadHidden), without an item.
func (t *thread) hiddenInput(tr *turn, text string) error {
	if t.persistent() {
		db, err := t.m.store()
		if err == nil {
			err = db.PutHiddenInput(tr.ctx, t.id, tr.id, text)
		}
		if err != nil {
			return fmt.Errorf("storing hidden input: %w", err)
		}
	}
	t.history = append(t.history, hiddenEntry(text))
	return nil
}

func errNoDrive(id string) error {
	return protocol.Errorf(protocol.ErrInvalidRequest, "no full-auto run on thread %s", id)
}

// StartFullAuto implements fullAuto/start.
func (m *Manager) StartFullAuto(ctx context.Context, p protocol.FullAutoStartParams, reply Reply) {
	t, err := m.load(ctx, p.ThreadID)
	if err != nil {
		reply(nil, err)
		return
	}
	t.post(func() {
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
			stored, err := db.Drives(ctx)
			if err != nil {
				reply(nil, err)
				return
			}
			for _, sr := range stored {
				if seen[sr.ThreadID] {
					continue
				}
				var r fullauto.Drive
				if json.Unmarshal(sr.Data, &r) != nil {
					continue
				}
				runs = append(runs, fullauto.WireDrive(sr.ThreadID, &r, 0))
			}
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

// withDrive runs f on the thread goroutine when the thread has a drive.
func (m *Manager) withDrive(ctx context.Context, id string, reply Reply, f func(t *thread)) {
	t, err := m.load(ctx, id)
	if err != nil {
		reply(nil, err)
		return
	}
	t.post(func() {
		if t.autoDrive() == nil {
			reply(nil, errNoDrive(id))
			return
		}
		f(t)
	})
}
