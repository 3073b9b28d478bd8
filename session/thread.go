package session

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// threadSettings are a thread's effective settings. Turn overrides stick.
type threadSettings struct {
	Cwd                   string `json:"cwd"`
	Model                 string `json:"model"`
	Provider              string `json:"provider"`
	ApprovalPolicy        string `json:"approvalPolicy"`
	Sandbox               string `json:"sandbox"`
	Effort                string `json:"effort,omitempty"`
	BaseInstructions      string `json:"baseInstructions,omitempty"`
	DeveloperInstructions string `json:"developerInstructions,omitempty"`
	DisabledTools         string `json:"disabledTools,omitempty"` // from thread/start config (configtools.go)
}

func settingsFromStore(meta store.Thread, def threadSettings) threadSettings {
	s := def
	if len(meta.Settings) > 0 {
		_ = json.Unmarshal(meta.Settings, &s)
	}
	if meta.Cwd != "" {
		s.Cwd = meta.Cwd
	}
	if meta.Model != "" {
		s.Model = meta.Model
	}
	if meta.ModelProvider != "" {
		s.Provider = meta.ModelProvider
	}
	if meta.ApprovalPolicy != "" {
		s.ApprovalPolicy = meta.ApprovalPolicy
	}
	if meta.Sandbox != "" {
		s.Sandbox = meta.Sandbox
	}
	return s
}

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
	ckpts map[string]turnCheckpoints
	// histMark is len(history) when each turn started (for reverting
	// ephemeral threads).
	histMark map[string]int
	// rules is the command rules cache; sandboxWarned: the missing-sandbox
	// warning was sent.
	rules         *rulesCache
	sandboxWarned bool
	spareEvents   []modelEvent    // drained event buffer, reused
	itemIDs       map[string]bool // item ids used in this thread
	status        protocol.ThreadStatus
	statusSent    bool

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
		events:   newEventQueue(),
		done:     make(chan struct{}),
		ctx:      ctx,
		stop:     cancel,
		meta:     meta,
		settings: s,
		approved: map[string]bool{},

		approvedPaths: map[string]bool{},
		ckpts:         map[string]turnCheckpoints{},
		histMark:      map[string]int{},
		itemIDs:       map[string]bool{},
		status:        protocol.ThreadStatus{Type: protocol.StatusIdle},
	}
	t.statusSnap = t.status
	m.mu.Lock()
	m.threads[t.id] = t
	m.mu.Unlock()
	m.wg.Add(1)
	go t.run()
	return t
}

// run is the thread's goroutine.
func (t *thread) run() {
	defer t.m.wg.Done()
	defer close(t.done)
	for {
		select {
		case f := <-t.inbox:
			f()
		case <-t.events.wake:
			t.drainModelEvents()
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

func (t *thread) notify(method string, params any) { t.m.notify(method, params) }

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
	t.meta.ApprovalPolicy = t.settings.ApprovalPolicy
	t.meta.Sandbox = t.settings.Sandbox
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
	t.meta.ApprovalPolicy = t.settings.ApprovalPolicy
	t.meta.Sandbox = t.settings.Sandbox
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
	reply(t.sessionResult(false), nil)
	t.notify(protocol.NotifyThreadStarted, protocol.ThreadStartedNotification{Thread: t.wire(false)})
}

// loadFromStore rebuilds history, usage and turns from the store.
func (t *thread) loadFromStore(announce bool) {
	db, err := t.m.store()
	if err != nil {
		t.m.log.Error("loading thread", "thread", t.id, "err", err)
		return
	}
	items, err := db.Items(t.ctx, t.id)
	if err != nil {
		t.m.log.Error("loading thread items", "thread", t.id, "err", err)
		return
	}
	t.history = t.history[:0]
	hidden := t.storedHiddenInputs(db) // full auto: turns started with hidden input (fullauto_restore.go)
	for _, it := range items {
		if h, ok := hidden[it.TurnID]; ok {
			t.history = append(t.history, hiddenEntry(h))
			delete(hidden, it.TurnID)
		}
		t.itemIDs[it.ID] = true
		if len(it.History) > 0 {
			var es []model.Entry
			if err := json.Unmarshal(it.History, &es); err == nil {
				t.history = append(t.history, es...)
			}
		}
	}
	if announce {
		t.setStatus(protocol.ThreadStatus{Type: protocol.StatusIdle})
	}
}

// resume answers thread/resume.
func (t *thread) resume(p protocol.ThreadResumeParams, reply Reply) {
	s, err := t.m.resolveSettings(t.settings, p.ThreadSettings)
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
	res := protocol.ThreadResumeResult{ThreadSessionResult: t.sessionResult(!p.ExcludeTurns)}
	reply(res, nil)
	t.goalOnResume() // Codex syncs the goal on resume (goal.go)
}

// fork creates this (new) thread as a copy of src and announces it.
func (t *thread) fork(srcID, through string, excludeTurns bool, reply Reply) {
	db, err := t.m.store()
	if err == nil {
		t.meta.Settings, _ = json.Marshal(t.settings)
		t.meta.Model, t.meta.ModelProvider = t.settings.Model, t.settings.Provider
		t.meta.ApprovalPolicy, t.meta.Sandbox, t.meta.Cwd = t.settings.ApprovalPolicy, t.settings.Sandbox, t.settings.Cwd
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
	t.loadFromStore(false)
	t.statusSent = true
	reply(t.sessionResult(!excludeTurns), nil)
	t.notify(protocol.NotifyThreadStarted, protocol.ThreadStartedNotification{Thread: t.wire(false)})
}

func (t *thread) setName(name string, reply Reply) {
	t.meta.Name = name
	t.meta.UpdatedAt = time.Now().UnixMilli()
	if err := t.saveMeta(); err != nil {
		reply(nil, err)
		return
	}
	reply(protocol.Empty{}, nil)
	t.notify(protocol.NotifyThreadNameUpdated, protocol.ThreadNameUpdatedNotification{ThreadID: t.id, ThreadName: &name})
}

// sessionResult is the shared body of thread/start, resume and fork results.
func (t *thread) sessionResult(withTurns bool) protocol.ThreadSessionResult {
	var effort *string
	if t.settings.Effort != "" {
		e := t.settings.Effort
		effort = &e
	}
	return protocol.ThreadSessionResult{
		Thread:             t.wire(withTurns),
		Model:              t.settings.Model,
		ModelProvider:      t.settings.Provider,
		Cwd:                t.settings.Cwd,
		ApprovalPolicy:     protocol.AskForApproval{Mode: t.settings.ApprovalPolicy},
		ApprovalsReviewer:  "user",
		Sandbox:            protocol.SandboxPolicyFor(t.settings.Sandbox),
		ReasoningEffort:    effort,
		InstructionSources: instructionSources(t.settings.Cwd),
	}
}

// wire is the thread as sent to the client.
func (t *thread) wire(withTurns bool) protocol.Thread {
	th := t.m.wireThread(t.meta, t.status)
	if withTurns {
		if t.persistent() {
			if db, err := t.m.store(); err == nil {
				if turns, err := loadTurns(t.ctx, db, t.id); err == nil {
					th.Turns = turns
				}
			}
		} else {
			th.Turns = append(th.Turns, t.turns...)
		}
		if t.turn != nil && !t.persistent() {
			th.Turns = append(th.Turns, t.turn.wire(protocol.ItemsFull))
		}
	}
	return th
}
