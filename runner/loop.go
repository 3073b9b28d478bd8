package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apserver/apserver/internal/drive"
	"github.com/apserver/apserver/internal/ownfile"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runs"
	"github.com/apserver/apserver/store"
)

// run is one run's loop. The goroutine started by spawn owns m; every
// other goroutine reaches it through post.
type run struct {
	rn    *Runner
	id    string
	m     *runs.Machine
	owner *drive.Owner
	ctx   context.Context
	stop  context.CancelFunc

	// restored: the run's work in flight was taken up (Restore), or the
	// run is new. Owned by the run's goroutine.
	restored bool
	// panics counts the panics recovered on the run's goroutine
	// (panics.go); owned by it.
	panics int
	// seq is the sequence number of the last stored event the machine
	// applied (shared.go); owned by the run's goroutine.
	seq int64
	// busy counts the run's slow steps in flight in this process (a
	// cluster worker's job ends when none is left); owned by the run's
	// goroutine.
	busy int

	// hasSlot and granted are guarded by the Runner's slotMu: the run
	// holds a slot of max_parallel_runs, or waits in the queue for one
	// (granted is closed when it gets it).
	hasSlot bool
	granted chan struct{}

	// bpMu guards the run's records to its blueprint waiting to be
	// applied, in order, by one goroutine at a time (bpBusy; blueprint.go).
	bpMu    sync.Mutex
	bpQueue []func()
	bpBusy  bool

	// asked are the closures posted with ask that the run's goroutine has
	// not taken yet; when it ends, each is told it was dropped (askMu
	// guards them; askDone: it has ended).
	askMu   sync.Mutex
	asked   map[*asked]struct{}
	askDone bool
}

// asked is one closure of ask: run it, or tell it it was dropped.
type asked struct{ f, dropped func() }

func (rn *Runner) spawn(id string, m *runs.Machine, seq int64) *run {
	ctx, cancel := context.WithCancel(rn.ctx)
	x := &run{rn: rn, id: id, m: m, owner: drive.NewOwner(ctx, 16), ctx: ctx, stop: cancel, seq: seq}
	rn.mu.Lock()
	rn.active[id] = x
	rn.mu.Unlock()
	rn.wg.Add(1)
	go func() {
		defer rn.wg.Done()
		x.owner.Run(x.guard) // a panic fails the run (panics.go)
		x.dropAsked()
	}()
	return x
}

// post runs f on the run's goroutine. It returns false when the runner is
// closing. What is posted when the goroutine stops is not run: a caller
// that waits for f uses ask.
func (x *run) post(f func()) bool { return x.owner.Post(f) }

// ask runs f on the run's goroutine, or dropped (on another goroutine)
// when it will not run there: the runner is closing or the run's loop has
// stopped, even after f was posted. Exactly one of the two runs, so that a
// caller waiting for an answer never waits for ever.
func (x *run) ask(f, dropped func()) {
	a := &asked{f: f, dropped: dropped}
	x.askMu.Lock()
	if x.askDone {
		x.askMu.Unlock()
		dropped()
		return
	}
	if x.asked == nil {
		x.asked = map[*asked]struct{}{}
	}
	x.asked[a] = struct{}{}
	x.askMu.Unlock()
	if !x.post(func() {
		if x.takeAsked(a) {
			a.f()
		}
	}) && x.takeAsked(a) {
		dropped()
	}
}

// takeAsked removes a from the closures waiting; false when it was not
// there (run or dropped already).
func (x *run) takeAsked(a *asked) bool {
	x.askMu.Lock()
	defer x.askMu.Unlock()
	_, ok := x.asked[a]
	delete(x.asked, a)
	return ok
}

// dropAsked, once the run's goroutine has ended, tells every closure of
// ask still waiting that it was dropped.
func (x *run) dropAsked() {
	x.askMu.Lock()
	left := x.asked
	x.asked, x.askDone = nil, true
	x.askMu.Unlock()
	for a := range left {
		a.dropped()
	}
}

// driver is how the run's goroutine feeds its machine (package drive): an
// event comes with its time (handle stamps it from the Runner's clock) or
// takes the clock's, is applied, stored with the work it queues
// (persist), answered, and its effects carried out.
func (x *run) driver() *drive.Driver[runs.Event, runs.Effect] {
	return &drive.Driver[runs.Event, runs.Effect]{
		Clock: x.rn.opts.Clock,
		Apply: func(now int64, ev runs.Event) []runs.Effect {
			if ev.AtMs != 0 {
				now = ev.AtMs // a result that carries its own time
			}
			panicPoint("apply", x.id, ev)
			return x.m.Apply(now, ev)
		},
		Store: func(ev runs.Event, effs []runs.Effect) ([]runs.Effect, error) {
			work, effs := x.queued(effs)
			return effs, x.persist(ev, work)
		},
		Carry: x.apply,
	}
}

// do applies ev on the run's goroutine: checked, stored, applied; then
// done(nil) (the reply) and the effects, in that order. An event that does
// not fit the run is answered with the error and changes nothing.
func (x *run) do(ev runs.Event, done func(error)) {
	x.ask(func() { x.handle(ev, done) }, func() {
		done(fmt.Errorf("run %s: apserver is shutting down, or the run is no longer driven here", x.id))
	})
}

// handle is do on the run's goroutine.
func (x *run) handle(ev runs.Event, done func(error)) {
	answered := false
	defer func() {
		if !answered {
			if r := recover(); r != nil {
				done(fmt.Errorf("run %s: internal error: %v", x.id, r))
				panic(r) // for guard, which fails the run
			}
		}
	}()
	if ev.AtMs == 0 {
		ev.AtMs = x.rn.now()
	}
	if ev.Type == runs.EvStarted && x.m.Run().ID != "" {
		done(fmt.Errorf("run %s has already started", x.id))
		return
	}
	if err := x.catchUpLog(x.ctx); err != nil {
		done(fmt.Errorf("run %s: reading what others appended: %w", x.id, err))
		return
	}
	if err := x.m.Accepts(ev); err != nil {
		done(err)
		return
	}
	err := x.driver().Do(ev, func(_ []runs.Effect, err error) {
		if err == nil {
			answered = true
			done(nil)
			x.brainSaw(ev) // decisions the event made (runner/brain.go)
		}
	})
	if errors.Is(err, ErrLogMoved) && x.rebuild() == nil {
		// Another process appended between the catch-up and this append:
		// the machine, rebuilt from the log, judges the event again.
		answered = true
		x.handle(ev, done)
		return
	}
	if err != nil {
		// The machine is ahead of the log: stop driving this run; the
		// next process replays what was stored.
		x.rn.log.Error("storing a run event; the run stops here", "run", x.id, "event", ev.Type, "err", err)
		answered = true
		done(err)
		x.stop()
		x.dropShared()
	}
}

// result posts the result of an effect; a stale one is dropped.
func (x *run) result(ev runs.Event) {
	x.do(ev, func(err error) {
		if err != nil {
			x.rn.log.Debug("run result dropped", "run", x.id, "event", ev.Type, "task", ev.TaskID, "err", err)
		}
	})
}

// resultWait posts the result and waits until it is stored.
func (x *run) resultWait(ev runs.Event) error {
	ch := make(chan error, 1)
	x.do(ev, func(err error) { ch <- err })
	return <-ch
}

// queued splits effects into the work the run's queue takes (enqueued
// with the event) and the effects left to this process.
func (x *run) queued(effs []runs.Effect) ([]Work, []runs.Effect) {
	q := x.rn.opts.Queue
	var work []Work
	var here []runs.Effect
	for _, e := range effs {
		if w, ok := WorkOf(x.id, e); ok && q.Takes(e) {
			work = append(work, w)
			continue
		}
		here = append(here, e)
	}
	return work, here
}

func (x *run) persist(ev runs.Event, work []Work) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	r := x.m.Run()
	view, err := json.Marshal(r)
	if err != nil {
		return err
	}
	row := store.RunRow{ID: r.ID, Cwd: r.Cwd, Status: string(r.Status), Run: view, CreatedAt: r.CreatedAtMs}
	var seq int64
	if s, ok := x.rn.shared(); ok {
		seq, err = s.AppendRunEventAfter(x.ctx, x.seq, row, string(ev.Type), b, ev.AtMs, work)
	} else {
		seq, err = x.rn.opts.Runs.AppendRunEvent(x.ctx, row, string(ev.Type), b, ev.AtMs, work)
	}
	if err == nil {
		x.seq = seq
	}
	return err
}

// apply carries out effects on the run's goroutine: the quick ones inline,
// the slow ones on goroutines that post their results back.
func (x *run) apply(effs []runs.Effect) {
	rn := x.rn
	for _, e := range effs {
		switch e := e.(type) {
		case runs.Notify:
			rn.threads.Notify(e.Method, e.Params)
			x.changed(e.Method)
		case runs.SetAttention:
			rn.threads.SetRunAttention(x.id, protocol.AttentionItem{ThreadID: e.ThreadID, Kind: e.Kind, Reason: e.Reason, SinceMs: e.SinceMs, TaskID: e.TaskID})
		case runs.ClearAttention:
			rn.threads.ClearRunAttention(x.id)
		case runs.WriteArtifacts:
			if err := writeArtifacts(rn.local(x.m.Config()).Worktree, e.Snapshot); err != nil {
				rn.log.Warn("writing run artifacts", "run", x.id, "err", err)
			}
		case runs.Released:
			x.release()
			if r := x.m.Run(); r.Status.Final() {
				rn.mu.Lock()
				delete(rn.active, x.id)
				rn.mu.Unlock()
				x.stop()
				rn.runEnded(r.Cwd)
				if removable(r.Status) {
					// The branch stays; git forgets the worktree.
					rn.wg.Add(1)
					go func() {
						defer rn.wg.Done()
						// Not cut short by Close: apserver run exits
						// right after the run ends.
						c := rn.local(x.m.Config())
						rn.removeWorktree(context.WithoutCancel(rn.ctx), r.ID, c.Cwd, c.Worktree, r.Status)
					}()
				}
			}
		case runs.BlueprintEvidence:
			x.recordEvidence(e)
		case runs.BlueprintProgress:
			x.recordProgress(e)
		case runs.Interrupt:
			thread := e.ThreadID
			go func() {
				if _, err := rn.threads.StopFullAuto(context.Background(), thread); err != nil {
					rn.log.Debug("stopping a task thread's full auto", "run", x.id, "thread", thread, "err", err)
				}
			}()
		case runs.UpdatePRBody:
			cfg := rn.local(x.m.Config())
			rn.wg.Add(1)
			go func() {
				defer rn.wg.Done()
				x.updateBody(x.ctx, cfg, e)
			}()
		case runs.Retry:
			// A rate limit's wait or a network error's backoff, then the
			// effect again, on the run's goroutine.
			rn.wg.Add(1)
			x.busy++ // the effect is still to come
			go func() {
				defer rn.wg.Done()
				defer x.post(func() { x.busy-- })
				if sleep(x.ctx, time.Duration(e.DelayMs)*time.Millisecond) {
					x.post(func() { x.apply([]runs.Effect{e.Effect}) })
				}
			}()
		case runs.CreateWorktree, runs.StartPlanner, runs.StartTask, runs.Validate, runs.Commit, runs.Merge,
			runs.PushBranch, runs.OpenPR, runs.MarkReady, runs.PollPR, runs.ReplyAndResolve, runs.MergePR:
			cfg := rn.local(x.m.Config())
			snap := x.m.Snapshot()
			rn.wg.Add(1)
			x.busy++
			go func() {
				defer rn.wg.Done()
				// Posted after the step's result: the effects that result
				// starts are counted before this one is not.
				defer x.post(func() { x.busy-- })
				if !x.acquire() {
					return
				}
				x.work(cfg, snap, e)
			}()
		}
	}
}

// acquire takes a slot of max_parallel_runs for the run, once; while the
// other runs hold them all it waits in the queue, first come first
// served, and the run shows as queued with its place (syncQueue).
func (x *run) acquire() bool {
	rn := x.rn
	rn.slotMu.Lock()
	if x.hasSlot {
		rn.slotMu.Unlock()
		return true
	}
	if x.granted == nil {
		if rn.free > 0 && len(rn.queue) == 0 {
			rn.free--
			x.hasSlot = true
			rn.slotMu.Unlock()
			// A run restored as queued gets its slot at once.
			go x.post(x.syncQueue)
			return true
		}
		x.granted = make(chan struct{})
		rn.queue = append(rn.queue, x)
		go x.post(x.syncQueue)
	}
	granted := x.granted
	rn.slotMu.Unlock()
	select {
	case <-granted:
		return true
	case <-x.ctx.Done():
		rn.slotMu.Lock()
		if i := slices.Index(rn.queue, x); i >= 0 {
			rn.queue = slices.Delete(rn.queue, i, i+1)
			x.granted = nil
			rn.moved(rn.queue[i:])
		}
		rn.slotMu.Unlock()
		return false
	}
}

// release gives the run's slot to the first run of the queue, if any.
func (x *run) release() {
	rn := x.rn
	rn.slotMu.Lock()
	defer rn.slotMu.Unlock()
	if !x.hasSlot {
		return
	}
	x.hasSlot = false
	if len(rn.queue) == 0 {
		rn.free++
		return
	}
	next := rn.queue[0]
	rn.queue = rn.queue[1:]
	next.hasSlot = true
	close(next.granted)
	next.granted = nil
	rn.moved(append([]*run{next}, rn.queue...))
}

// moved tells the runs whose place in the queue changed (or that left it)
// to show it. Called with slotMu held; each run reads its place itself,
// on its own goroutine, so that the latest place wins.
func (rn *Runner) moved(rs []*run) {
	for _, y := range rs {
		go y.post(y.syncQueue)
	}
}

// syncQueue, on the run's goroutine, makes the run show its place in the
// queue: queued with its place while it waits for a slot, running once it
// has one. A place the run cannot take (it is paused, or nothing of it is
// in flight) is dropped by the machine.
func (x *run) syncQueue() {
	rn := x.rn
	rn.slotMu.Lock()
	pos := slices.Index(rn.queue, x) + 1
	rn.slotMu.Unlock()
	r := x.m.Run()
	queued := r.Status == protocol.RunQueued
	switch {
	case pos > 0 && (!queued || r.QueuePosition == nil || *r.QueuePosition != pos):
		x.handle(runs.Event{Type: runs.EvQueued, Position: pos}, x.dropped(runs.EvQueued))
	case pos == 0 && queued:
		x.handle(runs.Event{Type: runs.EvDequeued}, x.dropped(runs.EvDequeued))
	}
}

func (x *run) dropped(t runs.EventType) func(error) {
	return func(err error) {
		if err != nil {
			x.rn.log.Debug("run result dropped", "run", x.id, "event", t, "err", err)
		}
	}
}

// writeArtifacts writes the run's files into its worktree, each only when
// its content changed.
func writeArtifacts(worktree string, s runs.Snapshot) error {
	if _, err := os.Stat(worktree); err != nil {
		return nil // not created yet, or already removed
	}
	for rel, b := range runs.Artifacts(s) {
		// never through a link the repository committed (ownfile)
		if err := ownfile.Write(worktree, rel, b); err != nil {
			return err
		}
	}
	return nil
}

// writeMemory adds (or replaces) the run's section of .apserver/memory.md
// in the worktree.
func writeMemory(worktree string, s runs.Snapshot) error {
	old, _ := ownfile.Read(worktree, runs.MemoryFile) // a link in its place is replaced, not read
	return ownfile.Write(worktree, runs.MemoryFile, []byte(memoryText(string(old), s)))
}

// memoryText is memory.md text with the run's section added, or replaced
// where it is already.
func memoryText(text string, s runs.Snapshot) string {
	if text == "" {
		text = "# apserver memory\n\nDecisions of earlier runs; planners read this file.\n"
	}
	head := fmt.Sprintf("\n## Run %s ", s.Run.ID)
	if i := strings.Index(text, head); i >= 0 {
		end := strings.Index(text[i+len(head):], "\n## Run ")
		if end < 0 {
			text = text[:i]
		} else {
			text = text[:i] + text[i+len(head)+end:]
		}
	}
	return strings.TrimRight(text, "\n") + "\n" + runs.MemoryEntry(s)
}
