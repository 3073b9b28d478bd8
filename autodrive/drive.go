package autodrive

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/internal/clock"
	"github.com/apserver/apserver/internal/drive"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/tools"
)

// Full auto (docs/fullauto.md): a drive keeps a thread going by itself.
// The drive is a pure state machine (package fullauto) that the thread
// goroutine drives through the shared driver (package drive; Drive.Do):
// it feeds the machine events (a turn started or ended, a model
// response's usage, an approval asked or answered, a method of the
// fullAuto/* or thread/goal/* family) at the clock's time, stores what
// they log and the receipts they make, answers, and applies the effects
// the machine returns, after its reply: notifications, the stored drive
// and receipts, the next turn (Thread.BeginTurn), the workspace
// fingerprint, the decision model, attention, requests resent after a
// restart (Thread.Resend).

// Env is what a drive shares with the other drives of a session. Its
// fields are set before the drive is made.
type Env struct {
	// Clock is the time events are applied at, and the timers.
	Clock clock.Clock
	// Store waits for the store and returns it.
	Store func() (*store.Store, error)
	Log   *slog.Logger
	// Config tunes the drives ([full_auto]).
	Config *config.FullAutoConfig
	// Attention is the summary of what waits on a human.
	Attention *Attention
	// DecisionModel is the configured decision model, or nil.
	DecisionModel func() *DecisionModel
	// InputClosed: the client's input has ended; no turn starts (the
	// next client resumes the drive).
	InputClosed func() bool
	// NewID makes a receipt's id.
	NewID func() string
	// OnMachine, if not nil, is called each time a thread's machine is
	// reached (tests make it panic).
	OnMachine func(thread string)
}

// Thread is what a drive sees of its thread. The drive calls it, and is
// called, only on the thread goroutine, but for ID and Post, which any
// goroutine may call.
type Thread interface {
	// ID is the thread's id; Persistent says whether it is stored.
	ID() string
	Persistent() bool
	// Context ends when the thread does.
	Context() context.Context
	// Cwd is the thread's workspace.
	Cwd() string
	// Notify sends a notification about the thread.
	Notify(method string, params any)
	// Post runs f on the thread goroutine, unless ctx ends first.
	Post(ctx context.Context, f func())
	// BeginTurn starts a turn of the drive: with a visible user message,
	// or hidden input, or items carried over from before a restart.
	BeginTurn(in fullauto.TurnInput) error
	// Interrupt ends the running turn, if any, interrupted.
	Interrupt()
	// TurnTimer calls f on the thread goroutine after d, if turn turnID is
	// still running then; the turn's end stops the timer.
	TurnTimer(turnID string, d time.Duration, f func())
	// Ask sends p, a request stored before a restart, to the client
	// again, under its old id when the client allows it.
	Ask(p store.PendingRequest) Call
	// Await lets the thread port answer request id too: the wait for the
	// client's answer derives from ctx, which the port's answer ends; the
	// answer is then on answer; release ends the port's chance.
	Await(id int64, method string, params json.RawMessage) (ctx context.Context, answer <-chan json.RawMessage, release func())
	// Answered: request id, resent after a restart, has its answer (the
	// client hears serverRequest/resolved).
	Answered(id int64)
	// RunApproved runs command, approved in answer to a request resent
	// after a restart (forSession: for the rest of the session), in dir
	// under the thread's command policy, and calls done with the result on
	// the thread goroutine.
	RunApproved(command, dir string, forSession bool, done func(tools.ExecResult, error))
	// Handoff carries out fullauto.Handoff: the drive goes on in a fresh
	// thread.
	Handoff(e fullauto.Handoff)
}

// Drive is a thread's full auto: its machine, the driver that feeds it
// and what carrying out its effects needs. It is owned by the thread
// goroutine.
type Drive struct {
	env *Env
	th  Thread

	// fsm is the drive's state machine, made (and the stored drive
	// replayed from its log) on first use: see Machine.
	fsm *Machine
	// fpCache speeds up the workspace fingerprint; nil while a walk has it.
	fpCache FPCache
	// resend are the requests stored before a restart, by id, while the
	// machine has them resent.
	resend map[int64]store.PendingRequest
	// restored: Restore ran; a drive is brought back once.
	restored bool
	// driver feeds the machine (Do); made on first use.
	driver *drive.Driver[fullauto.Event, fullauto.Effect]
}

// New makes th's drive; nothing is read before it is used.
func New(env *Env, th Thread) *Drive { return &Drive{env: env, th: th} }

// Machine is a thread's full-auto machine. Everything reaches it through
// Do (Apply); TurnStarted and Compacted are Apply for compaction's turns,
// whose effects go to Drive.Apply.
type Machine struct {
	*fullauto.Machine
}

// TurnStarted is Apply(TurnStarted).
func (a *Machine) TurnStarted(now int64, turnID, kind string) []fullauto.Effect {
	return a.Apply(now, fullauto.TurnStarted{TurnID: turnID, Kind: kind})
}

// Compacted is Apply(Compacted).
func (a *Machine) Compacted(now int64, turnID string, ratio float64) []fullauto.Effect {
	return a.Apply(now, fullauto.Compacted{TurnID: turnID, Ratio: ratio})
}

// Machine returns the thread's full-auto machine, rebuilt from the stored
// drive the first time: replayed from its event log, or, for a drive
// stored before drives had a log, loaded from its snapshot
// (fullauto.Loaded).
func (d *Drive) Machine() *Machine {
	if d.env.OnMachine != nil {
		d.env.OnMachine(d.th.ID())
	}
	if d.fsm != nil {
		return d.fsm
	}
	fa := *d.env.Config
	opts := fullauto.Options{
		ThreadID:              d.th.ID(),
		Ephemeral:             !d.th.Persistent(),
		DecisionModel:         d.env.DecisionModel() != nil,
		QuestionMinConfidence: fa.QuestionMinConfidence,
		ErrorBackoffMs:        fa.ErrorBackoff.Milliseconds(),
		ApprovalTimeoutMs:     fa.ApprovalTimeout.Milliseconds(),
		OnRestartPaused:       fa.OnRestart == config.OnRestartPaused,
	}
	if lg, ok := d.loadLog(); ok {
		d.fsm = &Machine{fullauto.Replay(opts, lg)}
		// No turn of the process that wrote the log survives it.
		d.Apply(d.fsm.Apply(d.Now(), fullauto.Reloaded{}))
		return d.fsm
	}
	d.fsm = &Machine{fullauto.New(opts)}
	if r := d.loadDrive(); r != nil {
		d.Apply(d.fsm.Apply(d.Now(), fullauto.Loaded{Run: *r}))
	}
	return d.fsm
}

// feed applies ev to the machine at the clock's time and returns the
// effects (the answer among them).
func (d *Drive) feed(ev fullauto.Event) []fullauto.Effect {
	return d.Machine().Apply(d.Now(), ev)
}

// Answer finds the machine's answer of type A among effs.
func Answer[A fullauto.Effect](effs []fullauto.Effect) (A, bool) {
	for _, e := range effs {
		if a, ok := e.(A); ok {
			return a, true
		}
	}
	var zero A
	return zero, false
}

// Run is the thread's drive, or nil.
func (d *Drive) Run() *fullauto.Drive { return d.Machine().Drive() }

// Now is the clock in unix ms.
func (d *Drive) Now() int64 { return clock.Ms(d.env.Clock) }

// Wire renders the drive for the client.
func (d *Drive) Wire() protocol.FullAutoRun { return d.Machine().Wire(d.Now()) }

// Result is a fullAuto/* method's answer: the drive, or the machine's
// refusal among effs.
func (d *Drive) Result(effs []fullauto.Effect) (any, error) {
	if r, ok := Answer[fullauto.Refused](effs); ok {
		return nil, r.Err
	}
	return protocol.FullAutoRunResult{Run: d.Wire()}, nil
}

// loadLog reads the thread's drive log; ok is false when there is none (no
// drive, or one stored before logs) or it cannot be read (then the
// snapshot is the fallback).
func (d *Drive) loadLog() (fullauto.Log, bool) {
	if !d.th.Persistent() {
		return fullauto.Log{}, false
	}
	db, err := d.env.Store()
	if err != nil {
		return fullauto.Log{}, false
	}
	ctx := d.th.Context()
	sl, err := db.GetFullAutoLog(ctx, d.th.ID())
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) && ctx.Err() == nil {
			d.env.Log.Error("loading the full-auto log", "thread", d.th.ID(), "err", err)
		}
		return fullauto.Log{}, false
	}
	lg, err := fullauto.DecodeLog(sl.Base, sl.Entries)
	if err != nil {
		d.env.Log.Error("decoding the full-auto log; reading the stored run instead", "thread", d.th.ID(), "err", err)
		return fullauto.Log{}, false
	}
	return lg, true
}

// loadDrive reads the thread's stored drive.
func (d *Drive) loadDrive() *fullauto.Drive {
	if !d.th.Persistent() {
		return nil
	}
	db, err := d.env.Store()
	if err != nil {
		return nil
	}
	ctx := d.th.Context()
	sr, err := db.GetDrive(ctx, d.th.ID())
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) && ctx.Err() == nil {
			d.env.Log.Error("loading full-auto run", "thread", d.th.ID(), "err", err)
		}
		return nil
	}
	var r fullauto.Drive
	if err := json.Unmarshal(sr.Data, &r); err != nil {
		d.env.Log.Error("decoding full-auto run", "thread", d.th.ID(), "err", err)
		return nil
	}
	return &r
}

// Do feeds ev to the machine through the shared driver (package drive):
// applied at the clock's time, what its effects store (the log entry,
// receipts) is stored — a reply shows the decision a receipt records —
// then reply (if not nil) reads the answer among the effects left, then
// they are carried out in order.
func (d *Drive) Do(ev fullauto.Event, reply func(effs []fullauto.Effect)) {
	if d.driver == nil {
		d.driver = &drive.Driver[fullauto.Event, fullauto.Effect]{
			Clock: d.env.Clock,
			Apply: func(now int64, ev fullauto.Event) []fullauto.Effect { return d.Machine().Apply(now, ev) },
			Store: func(_ fullauto.Event, effs []fullauto.Effect) ([]fullauto.Effect, error) { return d.store(effs), nil },
			Carry: d.carryOut,
		}
	}
	var r func([]fullauto.Effect, error)
	if reply != nil {
		r = func(effs []fullauto.Effect, _ error) { reply(effs) }
	}
	_ = d.driver.Do(ev, r) // d.store never fails: what it cannot store is logged
}

// store carries out the effects of effs that store — the log entry, the
// receipts — and returns the others in order. A decision receipt, once
// stored, is fed back (ReceiptStored), and the effects that answers gives
// take the receipt's place in the queue.
func (d *Drive) store(effs []fullauto.Effect) []fullauto.Effect {
	var out []fullauto.Effect
	queue := effs
	for len(queue) > 0 {
		e := queue[0]
		queue = queue[1:]
		switch e := e.(type) {
		case fullauto.LogEvent:
			d.logEvent(e)
		case fullauto.StoreReceipt:
			id := d.env.NewID()
			seq := d.storeReceipt(e, id)
			if e.Kind == fullauto.ReceiptDecision {
				more := d.feed(fullauto.ReceiptStored{ID: id, Seq: seq})
				queue = append(more, queue...)
			}
		default:
			out = append(out, e)
		}
	}
	return out
}

// Apply carries out effects the machine returned outside Do (a rebuilt
// machine's, compaction's): stored, then carried out.
func (d *Drive) Apply(effs []fullauto.Effect) { d.carryOut(d.store(effs)) }

// carryOut carries out the machine's effects that do not store, in order;
// the answers among them were read by the caller.
func (d *Drive) carryOut(effs []fullauto.Effect) {
	id := d.th.ID()
	for _, e := range effs {
		switch e := e.(type) {
		case fullauto.Notify:
			d.th.Notify(e.Method, e.Params)
		case fullauto.SaveDrive:
			d.saveDrive(e)
		case fullauto.DeleteDrive:
			d.deleteDrive()
		case fullauto.StartTurn:
			d.startTurn(e)
		case fullauto.Fingerprint:
			d.fingerprint(e)
		case fullauto.AskModel:
			d.askModel(e)
		case fullauto.SetAttention:
			d.env.Attention.Set(AttnKey{id, protocol.AttentionPaused, 0}, protocol.AttentionItem{
				ThreadID: id, Kind: protocol.AttentionPaused, Reason: e.Reason, SinceMs: e.SinceMs,
			})
		case fullauto.ClearAttention:
			d.env.Attention.Clear(AttnKey{id, protocol.AttentionPaused, 0})
		case fullauto.DropPending:
			d.DropPending(e.Request)
		case fullauto.Resend:
			d.resendStored(e)
		case fullauto.Interrupt:
			d.th.Interrupt()
		case fullauto.TurnDeadline:
			d.turnDeadline(e)
		case fullauto.Handoff:
			d.th.Handoff(e)
		}
	}
}

// logEvent appends an event the machine applied to the stored drive log.
func (d *Drive) logEvent(e fullauto.LogEvent) {
	if !d.th.Persistent() {
		return
	}
	entry, err := json.Marshal(e.Entry)
	var base []byte
	if err == nil && e.Fresh {
		base, err = json.Marshal(e.Base)
	}
	if err != nil {
		d.env.Log.Error("bug: a full-auto event does not encode", "thread", d.th.ID(), "err", err)
		return
	}
	db, err := d.env.Store()
	if err == nil {
		err = db.AppendFullAutoEvent(context.WithoutCancel(d.th.Context()), d.th.ID(), e.Entry.AtMs, entry, e.Fresh, base)
	}
	if err != nil {
		d.env.Log.Error("storing a full-auto event", "thread", d.th.ID(), "err", err)
	}
}

// saveDrive stores the drive.
func (d *Drive) saveDrive(e fullauto.SaveDrive) {
	if !d.th.Persistent() {
		return
	}
	db, err := d.env.Store()
	if err == nil {
		err = db.PutDrive(context.WithoutCancel(d.th.Context()), store.Drive{ThreadID: d.th.ID(), State: e.State, Data: e.Data})
	}
	if err != nil {
		d.env.Log.Error("saving full-auto run", "thread", d.th.ID(), "err", err)
	}
}

func (d *Drive) deleteDrive() {
	if !d.th.Persistent() {
		return
	}
	if db, err := d.env.Store(); err == nil {
		ctx := context.WithoutCancel(d.th.Context())
		if err := db.DeleteDrive(ctx, d.th.ID()); err != nil {
			d.env.Log.Error("deleting a full-auto run", "thread", d.th.ID(), "err", err)
		}
		if err := db.DeleteFullAutoLog(ctx, d.th.ID()); err != nil {
			d.env.Log.Error("deleting a full-auto log", "thread", d.th.ID(), "err", err)
		}
	}
}

// storeReceipt stores a receipt as id and returns its sequence number
// (the machine's own for a thread without a store).
func (d *Drive) storeReceipt(e fullauto.StoreReceipt, id string) int {
	if !d.th.Persistent() {
		return e.Seq
	}
	ib, err := json.Marshal(e.Input)
	if err != nil {
		d.env.Log.Error("bug: receipt input does not encode", "thread", d.th.ID(), "err", err)
		return 0
	}
	ob, _ := json.Marshal(e.Output)
	db, err := d.env.Store()
	if err == nil {
		var sr store.Receipt
		sr, err = db.AppendReceipt(context.WithoutCancel(d.th.Context()), store.Receipt{ThreadID: d.th.ID(), ID: id, Kind: e.Kind, TurnID: e.TurnID,
			Input: ib, Output: ob, PolicyHash: e.PolicyHash, Executed: e.Executed, Override: e.Override})
		if err == nil {
			return sr.Seq
		}
	}
	d.env.Log.Error("storing receipt", "thread", d.th.ID(), "err", err)
	return 0
}

// startTurn starts the turn a StartTurn asks for, now or after its delay
// (a cooldown after a failure).
func (d *Drive) startTurn(e fullauto.StartTurn) {
	if e.DelayMs > 0 {
		ctx := d.th.Context()
		d.env.Clock.AfterFunc(time.Duration(e.DelayMs)*time.Millisecond, func() {
			d.th.Post(ctx, func() { d.Do(fullauto.TimerFired{Token: e.Token}, nil) })
		})
		return
	}
	if d.env.InputClosed() {
		return // no client: the next one resumes the run
	}
	if err := d.th.BeginTurn(e.Input); err != nil {
		d.env.Log.Error("full auto: starting a turn", "thread", d.th.ID(), "err", err)
		d.Do(fullauto.TurnStartFailed{Message: err.Error()}, nil)
	}
}

// turnDeadline sets the timer of a TurnDeadline on the running turn; the
// turn's end stops it.
func (d *Drive) turnDeadline(e fullauto.TurnDeadline) {
	d.th.TurnTimer(e.TurnID, time.Duration(e.DelayMs)*time.Millisecond, func() {
		d.Do(fullauto.DeadlineReached{TurnID: e.TurnID}, func(effs []fullauto.Effect) {
			if _, ok := Answer[fullauto.Interrupt](effs); ok {
				d.env.Log.Info("full auto: time budget spent during a turn; interrupting it", "thread", d.th.ID(), "turn", e.TurnID)
			}
		})
	})
}

// fingerprint takes the workspace fingerprint off the thread goroutine
// (unless the machine knows it) and hands it back.
func (d *Drive) fingerprint(e fullauto.Fingerprint) {
	cwd, ctx := d.th.Cwd(), d.th.Context()
	cache := d.fpCache
	d.fpCache = nil
	go func() {
		fp := e.Known
		if fp == "" {
			fp, cache = WorkspaceFingerprint(ctx, cwd, cache)
		}
		d.th.Post(ctx, func() {
			d.fpCache = cache
			d.Do(fullauto.Fingerprinted{Token: e.Token, Fingerprint: fp}, nil)
		})
	}()
}

// askModel asks the decision model about a finished turn and hands the
// answer back (nil when it failed: the policy decides).
func (d *Drive) askModel(e fullauto.AskModel) {
	dm := d.env.DecisionModel()
	ctx := d.th.Context()
	go func() {
		var ans *controller.ModelAnswer
		if dm != nil {
			a, err := dm.Decide(ctx, e.Input)
			if err != nil {
				d.env.Log.Warn("decision model failed; the policy decides", "thread", d.th.ID(), "err", err)
			} else {
				ans = &a
			}
		}
		d.th.Post(ctx, func() { d.Do(fullauto.ModelAnswered{Token: e.Token, Answer: ans}, nil) })
	}()
}

// StoredRuns are the drives db holds, for the client, but for the threads
// of seen (whose loaded drives the caller has).
func StoredRuns(ctx context.Context, db *store.Store, seen map[string]bool) ([]protocol.FullAutoRun, error) {
	stored, err := db.Drives(ctx)
	if err != nil {
		return nil, err
	}
	var runs []protocol.FullAutoRun
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
	return runs, nil
}
