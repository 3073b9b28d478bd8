package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// Full auto (docs/fullauto.md): a run keeps a thread going by itself. After
// every turn the session sums the turn up (fullauto_turn.go), asks the pure
// controller (and, when the config has a "decision" role, the decision
// model, fullauto_model.go) what to do, stores the receipt and does it:
// another turn with hidden input, a review turn, a pause or a stop.
// Approvals under full auto go through controller.Approve
// (fullauto_approve.go). Codex's thread/goal/* methods are a view of the
// same run (goal.go).
//
// A thread's run (threadAuto) is owned by the thread goroutine, like the
// rest of the thread. The Manager keeps what spans threads
// (fullAutoManager): the model-call scheduler, the attention summary and
// the restart of runs.

// Limits on what a run keeps for the controller.
const (
	runHistoryTurns     = 20
	runRecentDecisions  = 20
	receiptSourceModel  = "model"
	overrideTurnStarted = "turnStarted"
	overrideTimeoutMode = "onApprovalTimeout=pause"
	// overrideGoalInterrupted: a goal stays active after an interrupted
	// turn, without a continuation (Codex 0.169).
	overrideGoalInterrupted = "goalInterrupted"
	// ruleInterrupted is the controller's rule for an interrupted turn.
	ruleInterrupted = "waiting.interrupted"
)

// fullAutoManager is the Manager's share of full auto. Its fields are set
// once by NewManager; attention has its own lock.
type fullAutoManager struct {
	m     *Manager
	sched *scheduler
	attn  attention

	restoreOnce sync.Once
}

func newFullAutoManager(m *Manager) *fullAutoManager {
	return &fullAutoManager{m: m, sched: newScheduler(m.opts.Config.MaxConcurrentModelCalls), attn: attention{m: m}}
}

// faRun is one thread's run: everything the controller needs across turns.
// It is stored as JSON (store.Run) after every change.
type faRun struct {
	Objective string                      `json:"objective"`
	State     protocol.FullAutoState      `json:"state"`
	Reason    string                      `json:"reason,omitempty"`
	Stop      controller.StopCondition    `json:"stopCondition,omitempty"`
	Approvals controller.ApprovalStrategy `json:"approvals"`
	Config    controller.Config           `json:"config"`
	// ApprovalTimeoutMs: 0 waits forever. OnTimeout is "pause" or "stop".
	ApprovalTimeoutMs int64  `json:"approvalTimeoutMs,omitempty"`
	OnTimeout         string `json:"onApprovalTimeout"`

	// Goal: the run was made by thread/goal/set (goal.go).
	Goal          bool  `json:"goal,omitempty"`
	GoalCreatedAt int64 `json:"goalCreatedAt,omitempty"` // unix s
	GoalUpdatedAt int64 `json:"goalUpdatedAt,omitempty"` // unix s

	StartedAtMs int64                     `json:"startedAtMs"`
	Spent       controller.Spent          `json:"spent"`
	History     []controller.TurnSummary  `json:"history"`
	Recent      []controller.Decision     `json:"recent"`
	Retries     int                       `json:"retries,omitempty"`
	Denials     map[string]int            `json:"denials,omitempty"`
	Last        *protocol.FullAutoReceipt `json:"last,omitempty"`
	// LastKind is the kind of the last turn the run started; a retry runs
	// the same kind again.
	LastKind string `json:"lastKind,omitempty"`
	// Seq numbers receipts of threads without a store (ephemeral).
	Seq int `json:"seq,omitempty"`
}

func (r *faRun) active() bool {
	return r != nil && (r.State == protocol.FullAutoRunning || r.State == protocol.FullAutoWaiting)
}

// threadAuto is a thread's full-auto state; owned by the thread goroutine.
type threadAuto struct {
	run *faRun
	// looked: the stored run was looked up (runs load lazily).
	looked bool
	// runningSince is when the run last became running or waiting; Spent
	// grows by the time since.
	runningSince time.Time
	// next is what the turn that startTurn is about to start begins with
	// (set just before the run calls startTurn).
	next *autoTurnInput
	// cur is the running turn as the run sees it.
	cur *faTurn
	// epoch changes whenever the run changes state, so that delayed work
	// (a backoff timer, a decision in flight) can tell it is stale.
	epoch int
	// forwarded is the request autoAnswer last passed on, and modelAsked
	// the requests the decision model was asked about: sendRequest consults
	// the hooks again for a request they already let through.
	forwarded  string
	modelAsked map[string]bool
	// pending are requests a full-auto run forwarded to a human, by id.
	pending map[int64]*pendingRequest
	// fpCache speeds up the workspace fingerprint; nil while a walk has it.
	fpCache fpCache
	// held are run notifications kept back while a request that changed
	// the run is answered (holding is non-nil): the response comes first.
	held    []heldNote
	holding bool
}

// heldNote is a notification kept back by hold.
type heldNote struct {
	method string
	params any
}

// notifyRun sends a run notification, or keeps it for after the response
// being prepared (see hold).
func (t *thread) notifyRun(method string, params any) {
	if t.auto.holding {
		t.auto.held = append(t.auto.held, heldNote{method, params})
		return
	}
	t.notify(method, params)
}

// hold keeps run notifications back until the returned func sends them:
// a method that changes the run answers first, then announces.
func (t *thread) hold() (release func()) {
	t.auto.holding = true
	return func() {
		t.auto.holding = false
		held := t.auto.held
		t.auto.held = nil
		for _, n := range held {
			t.notify(n.method, n.params)
		}
	}
}

// autoTurnInput starts a turn the run begins: hidden text the model sees
// as the user's input (no userMessage item), or items carried over from
// before a restart.
type autoTurnInput struct {
	kind   string
	hidden string
	resume *resumedCall
}

// faTurn is what the run collects about a running turn.
type faTurn struct {
	id        string
	kind      string
	histStart int // len(t.history) before the turn's input
	usage     controller.Usage
	// pressure counts model responses whose input filled the context
	// window past the compaction threshold (see compactionThreshold).
	pressure int
	timeouts int
	// pendingApprovals and pendingQuestions are requests still waiting
	// for a human when the turn ended.
	pendingApprovals, pendingQuestions int
}

// ensureRun loads the thread's stored run the first time it is needed.
func (t *thread) ensureRun() *faRun {
	a := &t.auto
	if a.looked || !t.persistent() {
		a.looked = true
		return a.run
	}
	a.looked = true
	db, err := t.m.store()
	if err != nil {
		return nil
	}
	sr, err := db.GetRun(t.ctx, t.id)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) && t.ctx.Err() == nil {
			t.m.log.Error("loading full-auto run", "thread", t.id, "err", err)
		}
		return nil
	}
	var r faRun
	if err := json.Unmarshal(sr.Run, &r); err != nil {
		t.m.log.Error("decoding full-auto run", "thread", t.id, "err", err)
		return nil
	}
	a.run = &r
	return a.run
}

// saveRun stores the run.
func (t *thread) saveRun() {
	r := t.auto.run
	if r == nil || !t.persistent() {
		return
	}
	b, err := json.Marshal(r)
	if err == nil {
		var db *store.Store
		db, err = t.m.store()
		if err == nil {
			err = db.PutRun(context.WithoutCancel(t.ctx), store.Run{ThreadID: t.id, State: string(r.State), Run: b})
		}
	}
	if err != nil {
		t.m.log.Error("saving full-auto run", "thread", t.id, "err", err)
	}
}

// accrue adds the time the run was active since runningSince to Spent.
func (t *thread) accrue() {
	a := &t.auto
	if a.run == nil || a.runningSince.IsZero() {
		return
	}
	now := time.Now()
	a.run.Spent.TimeMs += now.Sub(a.runningSince).Milliseconds()
	if a.run.active() {
		a.runningSince = now
	} else {
		a.runningSince = time.Time{}
	}
}

// setRunState changes the run's state, stores it and tells the client
// (fullAuto/statusChanged, the goal view, attention).
func (t *thread) setRunState(st protocol.FullAutoState, reason string, cond controller.StopCondition) {
	r := t.auto.run
	if r == nil {
		return
	}
	t.accrue()
	was := r.State
	r.State, r.Reason, r.Stop = st, reason, cond
	if r.active() && t.auto.runningSince.IsZero() {
		t.auto.runningSince = time.Now()
	}
	if !r.active() {
		t.auto.runningSince = time.Time{}
	}
	t.auto.epoch++
	t.saveRun()
	if st == protocol.FullAutoPaused {
		t.m.fa.attn.set(attnKey{t.id, protocol.AttentionPaused, 0}, protocol.AttentionItem{
			ThreadID: t.id, Kind: protocol.AttentionPaused, Reason: reason, SinceMs: nowMs(),
		})
	} else if was == protocol.FullAutoPaused {
		t.m.fa.attn.clear(attnKey{t.id, protocol.AttentionPaused, 0})
	}
	run := t.wireRun()
	t.notifyRun(protocol.NotifyFullAutoStatusChanged, protocol.FullAutoStatusChangedNotification{
		ThreadID: t.id, State: st, Reason: run.Reason, Run: run,
	})
	t.goalChanged(nil)
}

// wireRun renders the run for the client.
func (t *thread) wireRun() protocol.FullAutoRun {
	r := t.auto.run
	spent := r.Spent
	if !t.auto.runningSince.IsZero() {
		spent.TimeMs += time.Since(t.auto.runningSince).Milliseconds()
	}
	w := protocol.FullAutoRun{
		ThreadID:  t.id,
		State:     r.State,
		Approvals: string(r.Approvals),
		Spent:     protocol.FullAutoSpent(spent),
		Budgets:   wireBudgets(r.Config.Budgets),
	}
	if r.Reason != "" {
		w.Reason = ptr(r.Reason)
	}
	if r.Objective != "" {
		w.Objective = ptr(r.Objective)
	}
	if r.Stop != "" {
		w.StopCondition = ptr(string(r.Stop))
	}
	if r.Last != nil {
		last := *r.Last
		w.LastDecision = &last
	}
	return w
}

func wireBudgets(b controller.Budgets) protocol.FullAutoBudgets {
	var w protocol.FullAutoBudgets
	if b.Tokens > 0 {
		w.Tokens = ptr(b.Tokens)
	}
	if b.Turns > 0 {
		w.Turns = ptr(b.Turns)
	}
	if b.TimeMs > 0 {
		w.TimeMs = ptr(b.TimeMs)
	}
	if b.CostUSD > 0 {
		w.CostUSD = ptr(b.CostUSD)
	}
	return w
}

func budgetsFrom(w *protocol.FullAutoBudgets) controller.Budgets {
	var b controller.Budgets
	if w == nil {
		return b
	}
	if w.Tokens != nil {
		b.Tokens = *w.Tokens
	}
	if w.Turns != nil {
		b.Turns = *w.Turns
	}
	if w.TimeMs != nil {
		b.TimeMs = *w.TimeMs
	}
	if w.CostUSD != nil {
		b.CostUSD = *w.CostUSD
	}
	return b
}

// errRunActive is the error for starting a run over one still going.
func errRunActive(id string) error {
	return protocol.Errorf(protocol.ErrInvalidRequest, "full auto is already running on thread %s; stop it first", id)
}

func errNoRun(id string) error {
	return protocol.Errorf(protocol.ErrInvalidRequest, "no full-auto run on thread %s", id)
}

// StartFullAuto implements fullAuto/start.
func (m *Manager) StartFullAuto(ctx context.Context, p protocol.FullAutoStartParams, reply Reply) {
	t, err := m.load(ctx, p.ThreadID)
	if err != nil {
		reply(nil, err)
		return
	}
	t.post(func() { t.startFullAuto(p, reply) })
}

// PauseFullAuto implements fullAuto/pause: no new turn starts; a running
// turn finishes.
func (m *Manager) PauseFullAuto(ctx context.Context, p protocol.FullAutoThreadParams, reply Reply) {
	m.withRun(ctx, p.ThreadID, reply, func(t *thread) {
		release := t.hold()
		defer release()
		if t.auto.run.active() {
			t.setRunState(protocol.FullAutoPaused, "paused by the user", controller.StopNone)
		}
		reply(protocol.FullAutoRunResult{Run: t.wireRun()}, nil)
	})
}

// ResumeFullAuto implements fullAuto/resume: a paused run goes on; when the
// thread is idle a turn starts at once.
func (m *Manager) ResumeFullAuto(ctx context.Context, p protocol.FullAutoThreadParams, reply Reply) {
	m.withRun(ctx, p.ThreadID, reply, func(t *thread) {
		if t.auto.run.State == protocol.FullAutoStopped {
			reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "the full-auto run on thread %s has stopped; start a new one", t.id))
			return
		}
		release := t.hold()
		t.resumeRun("resumed by the user")
		reply(protocol.FullAutoRunResult{Run: t.wireRun()}, nil)
		release()
		t.startRunTurn(autoTurnInput{kind: controller.KindNormal, hidden: continueText(t.auto.run.Objective)}, "")
	})
}

// StopFullAuto implements fullAuto/stop: the run ends with userStop (a
// decision receipt records it) and a running turn is interrupted.
func (m *Manager) StopFullAuto(ctx context.Context, p protocol.FullAutoThreadParams, reply Reply) {
	m.withRun(ctx, p.ThreadID, reply, func(t *thread) {
		release := t.hold()
		t.stopRun()
		reply(protocol.FullAutoRunResult{Run: t.wireRun()}, nil)
		release()
		if t.turn != nil {
			t.finishInterrupted()
		}
	})
}

// FullAutoStatus implements fullAuto/status: one thread's run, or every
// run of the loaded threads and the stored ones.
func (m *Manager) FullAutoStatus(ctx context.Context, p protocol.FullAutoStatusParams, reply Reply) {
	if p.ThreadID != nil && *p.ThreadID != "" {
		m.withRun(ctx, *p.ThreadID, reply, func(t *thread) {
			reply(protocol.FullAutoStatusResult{Runs: []protocol.FullAutoRun{t.wireRun()}, Attention: m.fa.attn.snapshot()}, nil)
		})
		return
	}
	go func() {
		runs := []protocol.FullAutoRun{}
		seen := map[string]bool{}
		for _, t := range m.loadedThreads() {
			ch := make(chan *protocol.FullAutoRun, 1)
			t.post(func() {
				if t.ensureRun() == nil {
					ch <- nil
					return
				}
				w := t.wireRun()
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
			stored, err := db.Runs(ctx)
			if err != nil {
				reply(nil, err)
				return
			}
			for _, sr := range stored {
				if seen[sr.ThreadID] {
					continue
				}
				var r faRun
				if json.Unmarshal(sr.Run, &r) != nil {
					continue
				}
				tmp := &thread{id: sr.ThreadID, auto: threadAuto{run: &r}}
				runs = append(runs, tmp.wireRun())
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

// withRun runs f on the thread goroutine when the thread has a run.
func (m *Manager) withRun(ctx context.Context, id string, reply Reply, f func(t *thread)) {
	t, err := m.load(ctx, id)
	if err != nil {
		reply(nil, err)
		return
	}
	t.post(func() {
		if t.ensureRun() == nil {
			reply(nil, errNoRun(id))
			return
		}
		f(t)
	})
}

// newRun makes a fresh run from defaults.
func (t *thread) newRun(objective string) *faRun {
	cfg := controller.DefaultConfig()
	return &faRun{
		Objective:   objective,
		State:       protocol.FullAutoRunning,
		Approvals:   controller.ApprovePolicy,
		Config:      cfg,
		OnTimeout:   protocol.OnTimeoutPause,
		StartedAtMs: nowMs(),
		Denials:     map[string]int{},
		History:     []controller.TurnSummary{},
		Recent:      []controller.Decision{},
	}
}

// startFullAuto answers fullAuto/start on the thread goroutine.
func (t *thread) startFullAuto(p protocol.FullAutoStartParams, reply Reply) {
	if old := t.ensureRun(); old.active() {
		reply(nil, errRunActive(t.id))
		return
	}
	objective := ""
	if p.Objective != nil {
		objective = strings.TrimSpace(*p.Objective)
	}
	firstTurn := objective != "" && t.turn == nil
	if objective == "" {
		objective = t.meta.Preview
	}
	if objective == "" && t.turn == nil {
		reply(nil, protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: objective is required on a thread with no messages"))
		return
	}
	r := t.newRun(objective)
	r.Config.Budgets = budgetsFrom(p.Budgets)
	if p.Approvals != nil {
		r.Approvals = controller.ApprovalStrategy(*p.Approvals)
	}
	if p.Review != nil {
		r.Config.ReviewOnDone = *p.Review
	}
	r.ApprovalTimeoutMs = t.m.opts.Config.FullAuto.ApprovalTimeout.Milliseconds()
	if p.ApprovalTimeoutMs != nil {
		r.ApprovalTimeoutMs = *p.ApprovalTimeoutMs
	}
	if p.OnApprovalTimeout != nil {
		r.OnTimeout = *p.OnApprovalTimeout
	}
	t.installRun(r)
	reply(protocol.FullAutoRunResult{Run: t.wireRun()}, nil)
	t.announceRun()
	switch {
	case firstTurn:
		t.startRunTurn(autoTurnInput{kind: controller.KindNormal}, objective)
	case t.turn == nil:
		t.startRunTurn(autoTurnInput{kind: controller.KindNormal, hidden: continueText(objective)}, "")
	}
	// A turn already running is decided on when it ends.
}

// installRun makes r the thread's run, replacing any earlier one.
func (t *thread) installRun(r *faRun) {
	t.auto.run = r
	t.auto.looked = true
	t.auto.epoch++
	t.auto.runningSince = time.Now()
	t.m.fa.attn.clear(attnKey{t.id, protocol.AttentionPaused, 0})
	t.saveRun()
}

// announceRun sends fullAuto/statusChanged and the goal view for a new run.
func (t *thread) announceRun() {
	run := t.wireRun()
	t.notifyRun(protocol.NotifyFullAutoStatusChanged, protocol.FullAutoStatusChangedNotification{
		ThreadID: t.id, State: run.State, Reason: run.Reason, Run: run,
	})
	t.goalChanged(nil)
}

// continueText is the hidden input of a turn that (re)starts a run on an
// idle thread without a new user message.
func continueText(objective string) string {
	return "Continue working toward the objective:\n" + objective + "\n\n" +
		"When the objective is fully achieved and verified (tests pass), say \"The task is complete.\" " +
		"If you are blocked, say exactly what blocks you."
}

// resumeRun makes a paused (or waiting) run run again. The caller starts a
// turn when the thread is idle.
func (t *thread) resumeRun(reason string) {
	r := t.auto.run
	if r.State != protocol.FullAutoRunning {
		r.Retries = 0
		t.setRunState(protocol.FullAutoRunning, reason, controller.StopNone)
	}
}

// stopRun ends the run at the user's request, at once: a decision receipt
// records it. The caller interrupts a running turn.
func (t *thread) stopRun() {
	r := t.auto.run
	if r.State == protocol.FullAutoStopped {
		return
	}
	in := controller.Input{
		Objective: r.Objective, Config: r.Config, Spent: r.Spent, RunElapsedMs: nowMs() - r.StartedAtMs,
		History: append([]controller.TurnSummary{}, r.History...), Recent: append([]controller.Decision{}, r.Recent...),
		UserStop: true,
	}
	if n := len(in.History); n > 0 {
		in.Turn, in.History = in.History[n-1], in.History[:n-1]
	}
	t.execute(in, controller.Decide(in))
}

// startRunTurn starts a turn for the run: with text as a visible user
// message, or with in's hidden input or carried-over items.
func (t *thread) startRunTurn(in autoTurnInput, text string) {
	if t.turn != nil || !t.auto.run.active() || t.m.inputClosed.Load() { // no client: the next one resumes the run
		return
	}
	t.auto.run.LastKind = in.kind
	t.auto.next = &in
	var input []protocol.UserInput
	if text != "" {
		input = []protocol.UserInput{{Type: "text", Text: text, TextElements: []protocol.TextElement{}}}
	}
	t.startTurn(protocol.TurnStartParams{ThreadID: t.id, Input: input}, func(_ any, err error) {
		if err != nil {
			t.auto.next = nil
			t.m.log.Error("full auto: starting a turn", "thread", t.id, "err", err)
			t.setRunState(protocol.FullAutoPaused, "could not start a turn: "+err.Error(), controller.StopWaitingOnHuman)
		}
	})
	t.auto.next = nil
}

// turnInput records the input a turn starts with (called by startTurn
// right after turn/started): the user's message, or for a turn the run
// started, its hidden input, which the model sees as the user's but no
// item shows (like Codex's goal continuation).
func (t *thread) turnInput(tr *turn, in []protocol.UserInput) error {
	a := &t.auto
	next := a.next
	a.next = nil
	a.cur = &faTurn{id: tr.id, kind: controller.KindNormal, histStart: len(t.history)}
	if next != nil {
		a.cur.kind = next.kind
	}
	t.armTimeBudget(tr)
	if next != nil {
		if next.resume != nil {
			if err := t.resumeCallItems(tr, next.resume); err != nil {
				return err
			}
		}
		if next.hidden != "" {
			if err := t.hiddenInput(tr, wrapHidden(a.run, next.hidden)); err != nil {
				return err
			}
		}
	}
	if len(in) == 0 {
		return nil
	}
	return t.userMessage(tr, in)
}

// wrapHidden marks hidden input as the run's, not the user's, and numbers
// the run's turns (the model can tell an automated continuation from a
// human; a scripted test model can match on the turn).
func wrapHidden(r *faRun, text string) string {
	n := 1
	if r != nil {
		n = r.Spent.Turns + 1
	}
	return fmt.Sprintf("<apserver_full_auto turn=\"%d\">\n%s\n</apserver_full_auto>", n, text)
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

// backoff is the cooldown before the turn after the n-th failure in a row.
func backoff(base time.Duration, n int) time.Duration {
	if base <= 0 || n <= 0 {
		return 0
	}
	d := base
	for i := 1; i < n && d < config.MaxErrorBackoff; i++ {
		d *= 2
	}
	return min(d, config.MaxErrorBackoff)
}

// armTimeBudget enforces the run's time budget during a turn: when the
// budget runs out while tr is still going, tr is interrupted, and the
// controller, which checks budgets first, stops the run with its budget
// reason as it would after any turn. Between turns the controller's own
// check is enough. A wrap-up turn (the soft landing the controller grants
// as a budget runs out) is left to finish its handoff; the turn caps
// (turn_max_time_ms) still bound it.
func (t *thread) armTimeBudget(tr *turn) {
	r := t.auto.run
	if r == nil || !r.active() || r.Config.Budgets.TimeMs <= 0 {
		return
	}
	if cur := t.auto.cur; cur != nil && cur.kind == controller.KindWrapUp {
		return
	}
	spent := r.Spent.TimeMs
	if since := t.auto.runningSince; !since.IsZero() {
		spent += time.Since(since).Milliseconds()
	}
	left := time.Duration(r.Config.Budgets.TimeMs-spent+1) * time.Millisecond // +1: spent is rounded down
	ctx := tr.ctx
	tr.budget = time.AfterFunc(max(left, 0), func() {
		t.postEvent(ctx, func() {
			if t.turn == tr && t.auto.run.active() {
				t.m.log.Info("full auto: time budget spent during a turn; interrupting it", "thread", t.id, "turn", tr.id)
				t.finishInterrupted()
			}
		})
	})
}
