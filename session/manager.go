package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"

	"github.com/apserver/apserver/agenttools"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/contextwindow"
	"github.com/apserver/apserver/dynamictools"
	"github.com/apserver/apserver/internal/clock"
	"github.com/apserver/apserver/internal/modelsched"
	"github.com/apserver/apserver/internal/uuid"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/modelcatalog"
	"github.com/apserver/apserver/outcomes"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/threadwire"
	"github.com/apserver/apserver/tools/checkpoint"
	"github.com/apserver/apserver/tools/sandbox"
)

// Options configure a Manager.
type Options struct {
	// OpenStore opens the store. It runs once, in the background, as soon as
	// the Manager is made, so that start-up is not held up by SQLite.
	OpenStore func() (*store.Store, error)
	Config    config.Config
	Client    Client
	Logger    *slog.Logger
	// Version is apserver's version, reported as a thread's cliVersion.
	Version string
	// CoalesceDeltas merges agent-message deltas that arrive faster than
	// the thread goroutine can send them (see drainModelEvents).
	CoalesceDeltas bool
	// HTTPClient is used for model requests; nil means a default client.
	HTTPClient *http.Client
	// SandboxSupport reports what the kernel offers for confining commands;
	// nil means sandbox.Probe. (Tests use it to act out a kernel without
	// Landlock.)
	SandboxSupport func() sandbox.Support
	// DataDir holds apserver's files besides the database: the per-turn
	// checkpoints of each workspace. Empty turns checkpoints (and with them
	// turn diffs and thread/revert) off.
	DataDir string
	// Clock is the session's time and timers; nil means the real clock.
	Clock Clock
	// Checkpoints tunes the snapshot stores (how many snapshots each
	// workspace keeps, when git collects garbage); zero values are defaults.
	Checkpoints checkpoint.Options
	// ConfigSources are the config files and flags config/read reports
	// (services/configread); MCP reloads and config writes read them too.
	ConfigSources ConfigSources
	// Cwd is the working directory of a thread started without one; empty
	// means the process's. (A server in a test process gets its own.)
	Cwd string
	// Align, when set, is the project brain's alignment check of file
	// writes and commands under full auto (brainhook.go).
	Align Aligner
	// Intents, when set, routes a project thread's user messages to the manager (intenthook.go).
	Intents IntentRouter
}

// Manager owns the set of loaded threads. Its own fields are small leaf
// state behind mu; each thread's state belongs to that thread's goroutine.
type Manager struct {
	opts   Options
	log    *slog.Logger
	client Client
	ctx    context.Context
	stop   context.CancelFunc

	storeReady chan struct{}
	db         *store.Store // set before storeReady is closed
	dbErr      error

	wg sync.WaitGroup

	fa *fullAutoManager // full auto across threads (fullauto.go); set by NewManager
	// sched caps the model calls of every thread (internal/modelsched); clock is
	// Options.Clock or the real one. Both are set by NewManager.
	sched *modelsched.Scheduler
	clock Clock

	toolsOnce sync.Once
	tools     []model.Tool // the agent's tools, built on first use (tools.go)

	// inputClosed: the client's input has ended (Drain); full-auto runs
	// start no new turn. eofCancelled counts the requests answered by
	// apserver because no client was left to (drain.go).
	inputClosed  atomic.Bool
	eofCancelled atomic.Int64

	mu        sync.Mutex
	turnEnded chan struct{}      // closed at the next turn/completed, for Drain; nil: nobody waits
	threads   map[string]*thread // loaded threads
	models    map[string]*model.Client
	ckpts     *checkpoint.Stores // snapshot stores by workspace (checkpoint.go)
	// atClose and atInterrupt are the services' hooks (host.go).
	atClose, atInterrupt []func()

	// windows are the context windows learned from requests a provider
	// refused as too long (compact.go).
	windows contextwindow.Windows

	mcp      *mcpState // MCP servers (mcptools.go); set by NewManager
	watchers watchers  // the thread port's outcome streams (threads.go)

	// defaultProvider is modelProvider/default/set's choice (defaultprovider.go);
	// nil: the configured provider.
	defaultProvider atomic.Pointer[string]
}

// NewManager starts opening the store and returns at once.
func NewManager(opts Options) *Manager {
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{
		opts:       opts,
		log:        opts.Logger,
		client:     opts.Client,
		ctx:        ctx,
		stop:       cancel,
		storeReady: make(chan struct{}),
		threads:    map[string]*thread{},
		models:     map[string]*model.Client{},
		ckpts:      checkpoint.NewStores(ctx, opts.DataDir, opts.Checkpoints),
	}
	if m.log == nil {
		m.log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	// What apserver keeps to itself reaches no command: its data dir
	// (the store, the ws token) and the variables holding its keys.
	sandbox.Conceal(opts.DataDir)
	// The providers' keys, the GitHub token, the MCP servers' credentials
	// and the cluster's database URL (it may carry a password), whatever
	// their names: the secret-word rule may miss some, and the user's
	// pass_env cannot open them.
	for name := range opts.Config.OwnSecretEnv() {
		sandbox.HideEnv(name)
	}
	sandbox.PassEnv(opts.Config.SandboxPassEnv...)
	m.fa = newFullAutoManager(m)
	m.mcp = newMCPState(m)
	m.sched = modelsched.New(opts.Config.MaxConcurrentModelCalls)
	m.clock = opts.Clock
	if m.clock == nil {
		m.clock = clock.Real{}
	}
	go func() {
		defer close(m.storeReady)
		if opts.OpenStore == nil {
			m.dbErr = errors.New("no store configured")
			return
		}
		m.db, m.dbErr = opts.OpenStore()
		if m.dbErr != nil {
			m.log.Error("opening store", "err", m.dbErr)
			return
		}
		for _, r := range m.db.Recovered() {
			m.log.Warn("turn was in progress when apserver stopped; marked interrupted", "thread", r.ThreadID, "turn", r.TurnID)
		}
	}()
	return m
}

// store waits for the store to be open.
func (m *Manager) store() (*store.Store, error) {
	<-m.storeReady
	if m.dbErr != nil {
		return nil, fmt.Errorf("store unavailable: %w", m.dbErr)
	}
	return m.db, nil
}

// Close interrupts running turns, stops every thread goroutine and closes
// the store. Completed items are already committed.
func (m *Manager) Close() error {
	m.mu.Lock()
	ts := make([]*thread, 0, len(m.threads))
	for _, t := range m.threads {
		ts = append(ts, t)
	}
	m.mu.Unlock()
	for _, t := range ts {
		t.shutdown()
	}
	m.stop()
	m.wg.Wait()
	m.mcp.close() // no MCP server process outlives apserver
	for _, f := range m.hooks(&m.atClose) {
		f()
	}
	<-m.storeReady
	if m.db != nil {
		return m.db.Close()
	}
	return nil
}

func (m *Manager) notify(method string, params any) {
	m.client.Notify(method, params)
}

// notifyAbout sends a notification about thread threadID, naming the
// thread to a client that routes by it (ThreadClient), then gives the
// thread port's streams the outcome it is, if it is one (threads.go).
func (m *Manager) notifyAbout(threadID, method string, params any) {
	if tc, ok := m.client.(ThreadClient); ok {
		tc.NotifyThread(threadID, method, params)
	} else {
		m.client.Notify(method, params)
	}
	if o := outcomes.Of(threadID, method, params); o != nil {
		m.watchers.publish(o)
	}
	if method == protocol.NotifyTurnCompleted {
		m.signalTurnEnded()
	}
}

func (m *Manager) loaded(id string) *thread {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.threads[id]
}

func (m *Manager) modelClient(p model.Provider) *model.Client {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := p.Name + "\x00" + p.BaseURL + "\x00" + string(p.Wire)
	c, ok := m.models[key]
	if !ok {
		c = model.NewClient(p, m.opts.HTTPClient)
		m.models[key] = c
	}
	return c
}

func threadNotFound(id string) error {
	return &protocol.Error{Kind: protocol.ErrInvalidRequest, Msg: "thread not found: " + id}
}

// wrapNotFound converts store.ErrNotFound into the client-facing error.
func wrapNotFound(id string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return threadNotFound(id)
	}
	return err
}

func (m *Manager) defaultSettings() threadSettings {
	c := m.opts.Config
	cwd := m.opts.Cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	provider, modelName := modelcatalog.Defaults(c, m.defaultProvider.Load())
	s := threadSettings{
		Cwd:            cwd,
		Model:          modelName,
		Provider:       provider,
		ApprovalPolicy: protocol.ApprovalPolicy(c.ApprovalPolicy),
		Sandbox:        protocol.SandboxMode(c.Sandbox),
	}
	if s.ApprovalPolicy == "" {
		s.ApprovalPolicy = protocol.ApprovalOnRequest
	}
	if s.Sandbox == "" {
		s.Sandbox = protocol.SandboxWorkspaceWrite
	}
	return s
}

// StartThread implements thread/start: the response, then thread/started.
func (m *Manager) StartThread(ctx context.Context, p protocol.ThreadStartParams, reply Reply) {
	s, err := threadwire.ResolveSettings(m.defaultSettings(), p.ThreadSettings)
	if err != nil {
		reply(nil, err)
		return
	}
	if st, err := os.Stat(s.Cwd); err != nil || !st.IsDir() {
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "cwd is not a directory: %s", s.Cwd))
		return
	}
	now := m.clock.Now()
	meta := store.Thread{
		ID:        uuid.NewV7(),
		Cwd:       s.Cwd,
		CreatedAt: now.UnixMilli(),
		UpdatedAt: now.UnixMilli(),
		Ephemeral: p.Ephemeral != nil && *p.Ephemeral,
	}
	s.DisabledTools = agenttools.Disabled(p.Config)
	if s.DynamicTools, err = dynamictools.Encode(p.DynamicTools); err != nil {
		reply(nil, err)
		return
	}
	t := m.newThread(meta, s)
	t.post(func() { t.create(reply) })
}

// ResumeThread implements thread/resume: loads the thread if needed
// (announcing it idle), then answers with its history.
// Loading reads the store, so it runs on a goroutine of its own; later
// requests about the thread wait in its lane for the answer.
func (m *Manager) ResumeThread(ctx context.Context, p protocol.ThreadResumeParams, reply Reply) {
	go func() {
		t, err := m.load(ctx, p.ThreadID)
		if err != nil {
			reply(nil, err)
			return
		}
		t.post(func() { t.resume(p, reply) })
	}()
}

// load returns the loaded thread, loading it from the store if needed. The
// store is read here, on the caller's goroutine, never on the thread's. A
// thread whose history cannot be read is not loaded: the error says why
// and nothing is written.
func (m *Manager) load(ctx context.Context, id string) (*thread, error) {
	if t := m.loaded(id); t != nil {
		return t, nil
	}
	db, err := m.store()
	if err != nil {
		return nil, err
	}
	meta, err := db.GetThread(ctx, id)
	if err != nil {
		return nil, wrapNotFound(id, err)
	}
	h, err := readHistory(ctx, db, id)
	if err != nil {
		return nil, fmt.Errorf("loading thread %s: %w", id, wrapNotFound(id, err))
	}
	s := threadwire.SettingsFromStore(meta, m.defaultSettings())
	m.mu.Lock()
	if t := m.threads[id]; t != nil { // lost a race with another load
		m.mu.Unlock()
		return t, nil
	}
	m.mu.Unlock()
	t := m.newThread(meta, s)
	t.post(func() {
		t.setHistory(h)
		t.setStatus(protocol.ThreadStatus{Type: protocol.StatusIdle})
	})
	return t, nil
}

// ForkThread implements thread/fork: a new thread with the history copied
// through lastTurnId (or all of it), then thread/started.
func (m *Manager) ForkThread(ctx context.Context, p protocol.ThreadForkParams, reply Reply) {
	db, err := m.store()
	if err != nil {
		reply(nil, err)
		return
	}
	src, err := db.GetThread(ctx, p.ThreadID)
	if err != nil {
		// An ephemeral source lives only in memory.
		reply(nil, wrapNotFound(p.ThreadID, err))
		return
	}
	s, err := threadwire.ResolveSettings(threadwire.SettingsFromStore(src, m.defaultSettings()), p.ThreadSettings)
	if err != nil {
		reply(nil, err)
		return
	}
	now := m.clock.Now()
	meta := src
	meta.ID = uuid.NewV7()
	meta.ForkedFromID = src.ID
	meta.CreatedAt, meta.UpdatedAt = now.UnixMilli(), now.UnixMilli()
	meta.Archived = false
	meta.Ephemeral = false
	through := ""
	if p.LastTurnID != nil {
		through = *p.LastTurnID
	}
	t := m.newThread(meta, s)
	t.post(func() { t.fork(src.ID, through, p.ExcludeTurns, reply) })
}

// ListThreads implements thread/list.
func (m *Manager) ListThreads(ctx context.Context, p protocol.ThreadListParams, reply Reply) {
	go func() {
		db, err := m.store()
		if err != nil {
			reply(nil, err)
			return
		}
		rows, next, err := db.ListThreads(ctx, threadwire.ListOptions(p))
		if err != nil {
			if errors.Is(err, store.ErrBadCursor) {
				err = protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: invalid cursor")
			}
			reply(nil, err)
			return
		}
		res := protocol.ThreadListResult{Data: make([]protocol.Thread, 0, len(rows))}
		for _, r := range rows {
			res.Data = append(res.Data, m.wireThread(r, m.liveStatus(r.ID)))
		}
		if next != "" {
			res.NextCursor = &next
		}
		reply(res, nil)
	}()
}

// liveStatus is a loaded thread's status, or notLoaded.
func (m *Manager) liveStatus(id string) protocol.ThreadStatus {
	if t := m.loaded(id); t != nil {
		return t.statusSnapshot()
	}
	return protocol.ThreadStatus{Type: protocol.StatusNotLoaded}
}

// ReadThread implements thread/read, without loading the thread.
func (m *Manager) ReadThread(ctx context.Context, p protocol.ThreadReadParams, reply Reply) {
	go func() {
		if t := m.loaded(p.ThreadID); t != nil && t.meta.Ephemeral {
			t.post(func() { reply(protocol.ThreadResult{Thread: t.wire(p.IncludeTurns)}, nil) })
			return
		}
		db, meta, err := m.storedThread(ctx, p.ThreadID)
		if err != nil {
			reply(nil, err)
			return
		}
		res := protocol.ThreadResult{Thread: m.wireThread(meta, m.liveStatus(meta.ID))}
		if !p.IncludeTurns {
			reply(res, nil)
			return
		}
		reply(threadwire.Stream(ctx, db, m.opts.DataDir, res))
	}()
}

// ArchiveThread implements thread/archive: a loaded thread is unloaded first
// (thread/status/changed notLoaded), then {} and thread/archived.
func (m *Manager) ArchiveThread(ctx context.Context, p protocol.ThreadIDParams, reply Reply) {
	go func() {
		db, meta, err := m.storedThread(ctx, p.ThreadID)
		if err != nil {
			reply(nil, err)
			return
		}
		if t := m.loaded(p.ThreadID); t != nil {
			t.unload()
		}
		meta.Archived = true
		meta.UpdatedAt = m.clock.Now().UnixMilli()
		if err := db.UpdateThread(ctx, meta); err != nil {
			reply(nil, err)
			return
		}
		reply(protocol.Empty{}, nil)
		m.notifyAbout(p.ThreadID, protocol.NotifyThreadArchived, protocol.ThreadIDNotification(p))
	}()
}

// UnarchiveThread implements thread/unarchive: {thread}, then thread/unarchived.
func (m *Manager) UnarchiveThread(ctx context.Context, p protocol.ThreadIDParams, reply Reply) {
	go func() {
		db, meta, err := m.storedThread(ctx, p.ThreadID)
		if err != nil {
			reply(nil, err)
			return
		}
		meta.Archived = false
		meta.UpdatedAt = m.clock.Now().UnixMilli()
		if err := db.UpdateThread(ctx, meta); err != nil {
			reply(nil, err)
			return
		}
		reply(protocol.ThreadResult{Thread: m.wireThread(meta, m.liveStatus(meta.ID))}, nil)
		m.notifyAbout(p.ThreadID, protocol.NotifyThreadUnarchived, protocol.ThreadIDNotification(p))
	}()
}

// SetThreadName implements thread/name/set: {}, then thread/name/updated.
func (m *Manager) SetThreadName(ctx context.Context, p protocol.ThreadNameSetParams, reply Reply) {
	if t := m.loaded(p.ThreadID); t != nil {
		t.post(func() { t.setName(*p.Name, reply) })
		return
	}
	go func() {
		db, meta, err := m.storedThread(ctx, p.ThreadID)
		if err != nil {
			reply(nil, err)
			return
		}
		meta.Name = *p.Name
		meta.UpdatedAt = m.clock.Now().UnixMilli()
		if err := db.UpdateThread(ctx, meta); err != nil {
			reply(nil, err)
			return
		}
		reply(protocol.Empty{}, nil)
		m.notifyAbout(p.ThreadID, protocol.NotifyThreadNameUpdated, protocol.ThreadNameUpdatedNotification{ThreadID: p.ThreadID, ThreadName: p.Name})
	}()
}

// onThread runs f on the goroutine of a loaded thread, or answers that the
// thread is not loaded.
func (m *Manager) onThread(id string, reply Reply, f func(t *thread)) {
	t := m.loaded(id)
	if t == nil {
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "thread not loaded: %s", id))
		return
	}
	t.post(func() { f(t) })
}

// storedThread waits for the store and reads a thread row.
func (m *Manager) storedThread(ctx context.Context, id string) (*store.Store, store.Thread, error) {
	db, err := m.store()
	if err != nil {
		return nil, store.Thread{}, err
	}
	meta, err := db.GetThread(ctx, id)
	if err != nil {
		return nil, store.Thread{}, wrapNotFound(id, err)
	}
	return db, meta, nil
}

// StartTurn implements turn/start. On a busy thread it steers the running
// turn and answers with that turn, as Codex does.
func (m *Manager) StartTurn(ctx context.Context, p protocol.TurnStartParams, reply Reply) {
	m.onThread(p.ThreadID, reply, func(t *thread) { t.startTurn(p, reply) })
}

// SteerTurn implements turn/steer.
func (m *Manager) SteerTurn(ctx context.Context, p protocol.TurnSteerParams, reply Reply) {
	m.onThread(p.ThreadID, reply, func(t *thread) { t.steer(p, reply) })
}

// RevertThread implements thread/revert.
func (m *Manager) RevertThread(ctx context.Context, p protocol.ThreadRevertParams, reply Reply) {
	m.onThread(p.ThreadID, reply, func(t *thread) { t.revert(p, reply) })
}

// InterruptTurn implements turn/interrupt.
func (m *Manager) InterruptTurn(ctx context.Context, p protocol.TurnInterruptParams, reply Reply) {
	m.onThread(p.ThreadID, reply, func(t *thread) { t.interrupt(p.TurnID, reply) })
}

// ListModels implements model/list from the configured catalog
// (modelcatalog.List).
func (m *Manager) ListModels(ctx context.Context, p protocol.ModelListParams, reply Reply) {
	reply(protocol.ModelListResult{Data: modelcatalog.List(&m.opts.Config, p, m.defaultProvider.Load())}, nil)
}
