package session

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/apserver/apserver/autodrive"
	"github.com/apserver/apserver/instructions"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/modelstream"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/threadwire"
	"github.com/apserver/apserver/tools/checkpoint"
)

// threadSettings are a thread's effective settings (threadwire.Settings).
type threadSettings = threadwire.Settings

// thread is one loaded conversation. Every field below mu-free is owned by
// the thread's goroutine (run); other goroutines only post closures.
type thread struct {
	m     *Manager
	id    string
	inbox chan func()
	// events carries model stream events from the sampling goroutine.
	events eventQueue
	done   chan struct{}
	ctx    context.Context
	stop   context.CancelFunc

	// Owned by run.
	meta     store.Thread
	settings threadSettings
	history  []model.Entry
	turns    []protocol.Turn // completed turns with their items (for resume/read of ephemeral threads)
	turn     *turn           // the active turn, or nil
	auto     threadAuto      // full-auto run (fullauto.go)
	usage    protocol.TokenUsageBreakdown
	approved map[string]bool // commands accepted for the session
	// approvedPaths are files whose changes were accepted for the session.
	approvedPaths map[string]bool
	// ckpts are the checkpoints of an ephemeral thread's turns (persistent
	// threads keep them in the store).
	ckpts map[string]checkpoint.Turn
	// histMark is len(history) when each turn started (for reverting
	// ephemeral threads).
	histMark map[string]int
	// rules is the command rules cache; sandboxWarned: the missing-sandbox
	// warning was sent.
	rules         *rulesCache
	sandboxWarned bool
	// agentsSkipped is why AGENTS.md was last not read, once the user was
	// told (agents).
	agentsSkipped string
	spareEvents   []modelEvent    // drained event buffer, reused
	itemIDs       map[string]bool // item ids used in this thread
	status        protocol.ThreadStatus
	statusSent    bool
	// portAnswers are the pending requests sent to the client that the
	// thread port may answer instead (threads.go), by request id.
	portAnswers map[int64]portAnswer

	// Compaction state (compact.go): the encoded size of the agent's
	// tools, the last response's usage, automatic compactions since the
	// last real user input that left the prompt above the trigger, the
	// latest plan of a finished turn, and an ephemeral thread's histories
	// from before its compactions.
	toolsSize            int
	toolsSizeOff         string // the disabledTools toolsSize was measured for
	lastUsage            usageMark
	compactStreak        int
	lastPlan             []protocol.TurnPlanStep
	ephemeralCompactions []savedHistory

	// statusMu guards statusSnap, read by thread/list from other goroutines.
	statusMu   sync.Mutex
	statusSnap protocol.ThreadStatus
}

func (m *Manager) newThread(meta store.Thread, s threadSettings) *thread {
	ctx, cancel := context.WithCancel(m.ctx)
	t := &thread{
		m:        m,
		id:       meta.ID,
		inbox:    make(chan func(), 256),
		events:   modelstream.NewQueue[*turn](),
		done:     make(chan struct{}),
		ctx:      ctx,
		stop:     cancel,
		meta:     meta,
		settings: s,
		approved: map[string]bool{},

		approvedPaths: map[string]bool{},
		ckpts:         map[string]checkpoint.Turn{},
		histMark:      map[string]int{},
		itemIDs:       map[string]bool{},
		portAnswers:   map[int64]portAnswer{},
		status:        protocol.ThreadStatus{Type: protocol.StatusIdle},
	}
	t.statusSnap = t.status
	m.mu.Lock()
	m.threads[t.id] = t
	m.mu.Unlock()
	m.wg.Add(1)
	go t.loop()
	return t
}

// loop is the thread's goroutine.
func (t *thread) loop() {
	defer t.m.wg.Done()
	defer close(t.done)
	for {
		select {
		case f := <-t.inbox:
			if t.ctx.Err() != nil {
				// Stopping: select picks at random among ready cases, and
				// what children post once cancelled (a request's wait
				// ending in context.Canceled) must not act as an answer.
				t.abandonTurn()
				return
			}
			t.guard("inbox", f)
		case <-t.events.Wake():
			if t.ctx.Err() != nil {
				t.abandonTurn()
				return
			}
			t.guard("modelEvents", t.drainModelEvents)
		case <-t.ctx.Done():
			t.abandonTurn()
			return
		}
	}
}

// post queues f to run on the thread goroutine. It never blocks the caller
// once the thread has stopped.
func (t *thread) post(f func()) {
	select {
	case t.inbox <- f:
	case <-t.done:
	}
}

// shutdown stops the goroutine, interrupting any turn, and waits for it.
func (t *thread) shutdown() {
	t.stop()
	<-t.done
}

// unload interrupts any running turn, announces notLoaded and stops the thread.
func (t *thread) unload() {
	ch := make(chan struct{})
	t.post(func() {
		if t.turn != nil {
			t.finishInterrupted()
		}
		t.setStatus(protocol.ThreadStatus{Type: protocol.StatusNotLoaded})
		t.m.mu.Lock()
		delete(t.m.threads, t.id)
		t.m.mu.Unlock()
		close(ch)
	})
	select {
	case <-ch:
	case <-t.done:
	}
	t.shutdown()
}

// notify sends a notification, noting which items of the active turn are
// open (started, not completed) so that a failing turn can close them.
func (t *thread) notify(method string, params any) {
	if tr := t.turn; tr != nil {
		switch p := params.(type) {
		case protocol.ItemStartedNotification:
			if p.TurnID == tr.id {
				tr.open = append(tr.open, p.Item)
			}
		case protocol.ItemCompletedNotification:
			if p.TurnID == tr.id {
				tr.dropOpen(p.Item.ItemID())
			}
		}
	}
	t.m.notifyAbout(t.id, method, params)
}

// setStatus records the status and announces it if it changed.
func (t *thread) setStatus(s protocol.ThreadStatus) {
	if t.statusSent && t.status.Equal(s) {
		return
	}
	t.status, t.statusSent = s, true
	t.statusMu.Lock()
	t.statusSnap = s
	t.statusMu.Unlock()
	t.notify(protocol.NotifyThreadStatusChanged, protocol.ThreadStatusChangedNotification{ThreadID: t.id, Status: s})
}

func (t *thread) statusSnapshot() protocol.ThreadStatus {
	t.statusMu.Lock()
	defer t.statusMu.Unlock()
	return t.statusSnap
}

func (t *thread) persistent() bool { return !t.meta.Ephemeral }

// saveMeta writes the thread row (settings included).
func (t *thread) saveMeta() error {
	if !t.persistent() {
		return nil
	}
	t.meta.Cwd = t.settings.Cwd
	t.meta.Model = t.settings.Model
	t.meta.ModelProvider = t.settings.Provider
	t.meta.ApprovalPolicy = string(t.settings.ApprovalPolicy)
	t.meta.Sandbox = string(t.settings.Sandbox)
	t.meta.Settings, _ = json.Marshal(t.settings)
	db, err := t.m.store()
	if err != nil {
		return err
	}
	return db.UpdateThread(t.ctx, t.meta)
}

// create persists a new thread, answers thread/start and announces it.
func (t *thread) create(reply Reply) {
	t.meta.Model = t.settings.Model
	t.meta.ModelProvider = t.settings.Provider
	t.meta.ApprovalPolicy = string(t.settings.ApprovalPolicy)
	t.meta.Sandbox = string(t.settings.Sandbox)
	t.meta.Settings, _ = json.Marshal(t.settings)
	if t.persistent() {
		db, err := t.m.store()
		if err == nil {
			err = db.CreateThread(t.ctx, t.meta)
		}
		if err != nil {
			t.m.mu.Lock()
			delete(t.m.threads, t.id)
			t.m.mu.Unlock()
			reply(nil, err)
			t.stop()
			return
		}
	}
	t.statusSent = true // a new thread starts idle without a status notification
	reply(t.sessionResult(), nil)
	t.notify(protocol.NotifyThreadStarted, protocol.ThreadStartedNotification{Thread: t.wire(false)})
}

// storedHistory is what loading a thread reads from the store: the model
// history and the ids of the items.
type storedHistory struct {
	entries []model.Entry
	itemIDs []string
}

// readHistory reads a thread's model history from the store: the latest
// compaction's history and the items after it, never the wire items nor
// what a compaction replaced (store.PromptSource). It runs off the thread
// goroutine (Manager.load) or, after a fork or revert, on it. Any row it
// cannot read or decode is an error: a thread loaded without part of its
// history would run its next turn without that context.
func readHistory(ctx context.Context, db *store.Store, threadID string) (storedHistory, error) {
	src, err := db.PromptSource(ctx, threadID)
	if err != nil {
		return storedHistory{}, err
	}
	var h storedHistory
	if c := src.Compaction; c != nil {
		if err := json.Unmarshal(c.History, &h.entries); err != nil {
			return storedHistory{}, fmt.Errorf("decoding compaction %s (turn %s): %w", c.ItemID, c.TurnID, err)
		}
	}
	// Full auto: turns started with hidden input (fullauto_restore.go).
	hidden := src.Hidden
	for _, it := range src.Items {
		if text, ok := hidden[it.TurnID]; ok {
			h.entries = append(h.entries, autodrive.HiddenEntry(text))
			delete(hidden, it.TurnID)
		}
		if len(it.History) > 0 {
			var es []model.Entry
			if err := json.Unmarshal(it.History, &es); err != nil {
				return storedHistory{}, fmt.Errorf("decoding the history of item %s (turn %s): %w", it.ID, it.TurnID, err)
			}
			h.entries = append(h.entries, es...)
		}
	}
	// Only the ids after the compaction: older ones are checked in the
	// store when a model-given id could clash (uniqueItemID).
	for _, it := range src.Items {
		h.itemIDs = append(h.itemIDs, it.ID)
	}
	return h, nil
}

// setHistory replaces the thread's history with one read from the store.
func (t *thread) setHistory(h storedHistory) {
	t.history = append(t.history[:0], h.entries...)
	t.lastUsage = usageMark{}
	for _, id := range h.itemIDs {
		t.itemIDs[id] = true
	}
}

// reloadHistory rereads the history after the thread's turns changed in
// the store (fork, revert). When that fails the thread unloads itself, so
// that no turn runs on a partial history; a later thread/resume reloads it
// or reports the error.
func (t *thread) reloadHistory(db *store.Store) error {
	h, err := readHistory(t.ctx, db, t.id)
	if err != nil {
		t.m.log.Error("reloading thread history; unloading the thread", "thread", t.id, "err", err)
		t.setStatus(protocol.ThreadStatus{Type: protocol.StatusNotLoaded})
		t.m.mu.Lock()
		if t.m.threads[t.id] == t {
			delete(t.m.threads, t.id)
		}
		t.m.mu.Unlock()
		t.stop()
		return fmt.Errorf("loading thread %s: %w", t.id, err)
	}
	t.setHistory(h)
	return nil
}

// resume answers thread/resume.
func (t *thread) resume(p protocol.ThreadResumeParams, reply Reply) {
	s, err := threadwire.ResolveSettings(t.settings, p.ThreadSettings)
	if err != nil {
		reply(nil, err)
		return
	}
	if s != t.settings {
		t.settings = s
		if err := t.saveMeta(); err != nil {
			reply(nil, err)
			return
		}
	}
	if !t.statusSent {
		t.setStatus(t.status)
	}
	wrap := func(res protocol.ThreadSessionResult) any {
		return protocol.ThreadResumeResult{ThreadSessionResult: res}
	}
	t.withTurns(t.sessionResult(), !p.ExcludeTurns, wrap, reply, func(res any, err error) {
		if err != nil {
			reply(nil, err)
			return
		}
		reply(res, nil)
		t.goalOnResume() // Codex syncs the goal on resume (goal.go)
	})
}

// fork creates this (new) thread as a copy of src and announces it.
func (t *thread) fork(srcID, through string, excludeTurns bool, reply Reply) {
	db, err := t.m.store()
	if err == nil {
		t.meta.Settings, _ = json.Marshal(t.settings)
		t.meta.Model, t.meta.ModelProvider = t.settings.Model, t.settings.Provider
		t.meta.ApprovalPolicy, t.meta.Sandbox, t.meta.Cwd = string(t.settings.ApprovalPolicy), string(t.settings.Sandbox), t.settings.Cwd
		err = db.Fork(t.ctx, srcID, t.meta, through)
	}
	if err != nil {
		t.m.mu.Lock()
		delete(t.m.threads, t.id)
		t.m.mu.Unlock()
		reply(nil, wrapNotFound(srcID, err))
		t.stop()
		return
	}
	t.copyCheckpoints(db, srcID)
	if err := t.reloadHistory(db); err != nil {
		reply(nil, err)
		return
	}
	t.statusSent = true
	wrap := func(res protocol.ThreadSessionResult) any { return res }
	t.withTurns(t.sessionResult(), !excludeTurns, wrap, reply, func(res any, err error) {
		if err != nil {
			reply(nil, err)
			return
		}
		reply(res, nil)
		t.notify(protocol.NotifyThreadStarted, protocol.ThreadStartedNotification{Thread: t.wire(false)})
	})
}

func (t *thread) setName(name string, reply Reply) {
	t.meta.Name = name
	t.meta.UpdatedAt = t.m.clock.Now().UnixMilli()
	if err := t.saveMeta(); err != nil {
		reply(nil, err)
		return
	}
	reply(protocol.Empty{}, nil)
	t.notify(protocol.NotifyThreadNameUpdated, protocol.ThreadNameUpdatedNotification{ThreadID: t.id, ThreadName: &name})
}

// sessionResult is the shared body of thread/start, resume and fork results,
// without turns (see withTurns).
func (t *thread) sessionResult() protocol.ThreadSessionResult {
	return protocol.ThreadSessionResult{
		Thread:             t.wire(false),
		Model:              t.settings.Model,
		ModelProvider:      t.settings.Provider,
		ServiceTier:        optional(t.settings.ServiceTier),
		Cwd:                t.settings.Cwd,
		ApprovalPolicy:     protocol.AskForApproval{Mode: t.settings.ApprovalPolicy},
		ApprovalsReviewer:  "user",
		Sandbox:            protocol.SandboxPolicyFor(t.settings.Sandbox, t.m.opts.Config.SandboxNetwork, t.m.opts.Config.SandboxWritableRoots),
		ReasoningEffort:    optional(t.settings.Effort),
		InstructionSources: instructions.Sources(t.readAgents()),
	}
}

// wire is the thread as sent to the client. withTurns adds the turns of an
// ephemeral thread, which live in memory; a persistent thread's turns are
// in the store, read off the thread goroutine by withTurns.
func (t *thread) wire(withTurns bool) protocol.Thread {
	th := t.m.wireThread(t.meta, t.status)
	if withTurns && !t.persistent() {
		th.Turns = append(th.Turns, t.turns...)
		if t.turn != nil {
			th.Turns = append(th.Turns, t.turn.wire(protocol.ItemsFull))
		}
	}
	return th
}

// withTurns calls done on the thread goroutine with wrap(res), its turns
// added when want is set. A persistent thread's turns are read from the
// store by a child goroutine (SQLite reads of a long thread are slow work)
// into a *StreamedResult (wire.go), so that the answer is never held whole;
// an error reading them is done's error, never an empty list. If the thread
// stops before done can run, reply gets an error instead, so the request is
// still answered.
func (t *thread) withTurns(res protocol.ThreadSessionResult, want bool, wrap func(protocol.ThreadSessionResult) any,
	reply Reply, done func(any, error)) {
	if !want || !t.persistent() {
		if want {
			res.Thread = t.wire(true)
		}
		done(wrap(res), nil)
		return
	}
	db, err := t.m.store()
	if err != nil {
		done(nil, err)
		return
	}
	ctx, id, dir := t.ctx, t.id, t.m.opts.DataDir
	go func() {
		result, err := threadwire.Stream(ctx, db, dir, wrap(res))
		if err != nil {
			err = fmt.Errorf("reading the turns of thread %s: %w", id, err)
		}
		ran := make(chan struct{})
		t.post(func() {
			close(ran)
			done(result, err)
		})
		select {
		case <-ran:
		case <-t.done:
			select {
			case <-ran:
			default:
				if sr, ok := result.(*StreamedResult); ok {
					sr.Release()
				}
				reply(nil, fmt.Errorf("thread %s was unloaded before it could answer", id))
			}
		}
	}()
}

// optional is s, or nil when it is empty (a wire field that is null when unset).
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
