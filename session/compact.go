package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apserver/apserver/compaction"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/contextwindow"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/turnwire"
)

// Context compaction (docs/protocol.md, "Compaction").
//
// A compaction replaces, for the model's prompt, the thread's history so
// far by a summary the compaction model writes, plus what is never
// summarized: the newest user messages (the last one verbatim), the
// full-auto objective and the current plan. The system prompt, AGENTS.md
// and configured instructions are the request's instructions and never
// part of the history. The store keeps every item; the compaction is a
// tombstone row the next prompt is built from (store/compaction.go).
// The planning — the trigger arithmetic, the summary request, what
// replaces the history and whether the result is kept — is the pure
// package compaction; this file does what it decides: the model request,
// the store, the notifications.

// compactLimits are the token limits of model as provider serves it: its
// context window (0 unknown, configured or learned) and the
// automatic-compaction trigger (0 never).
func (t *thread) compactLimits(provider, modelName string) (window, trigger int64) {
	return t.m.windows.Limits(&t.m.opts.Config, provider, modelName)
}

// turnLimits is compactLimits for the turn's own model and provider.
func (t *thread) turnLimits(tr *turn) (window, trigger int64) {
	return t.compactLimits(tr.providerName(), tr.modelName)
}

// providerName is the name of the provider the turn's requests go to.
func (tr *turn) providerName() string {
	if tr.client == nil {
		return ""
	}
	return tr.client.Provider().Name
}

// messageTooBig is the error of a user message of n bytes that cannot fit
// the turn's context window even with everything else compacted away:
// with the instructions and tools it reaches 95% of the window, where a
// compaction, which keeps the latest message verbatim, would end the turn
// anyway. Said before anything is sent; nil when it fits or the window is
// unknown.
func (t *thread) messageTooBig(tr *turn, n int) error {
	return t.messageTooBigFor(tr, n, "nothing was sent to the model")
}

// messageTooBigFor is messageTooBig with what became of the message.
func (t *thread) messageTooBigFor(tr *turn, n int, fate string) error {
	window, _ := t.turnLimits(tr)
	learned := t.m.opts.Config.ContextWindow(tr.modelName) == 0
	if msg := compaction.MessageTooBig(tr.modelName, window, learned, n, len(tr.prompt)+t.toolsBytes(), fate); msg != "" {
		return &turnwire.ContextError{Msg: msg}
	}
	return nil
}

// entry is what compaction reads of a history entry.
func entry(e model.Entry) compaction.Entry { return contextwindow.Entry(e) }

// toolsBytes is the encoded size of the tools the agent is offered. The
// set depends only on the tools switched off (the thread's settings, and
// plan mode's read-only turns), so the size is kept per that list.
func (t *thread) toolsBytes() int {
	off := t.disabledTools()
	if t.toolsSize == 0 || t.toolsSizeOff != off {
		b, _ := json.Marshal(t.agentTools())
		t.toolsSize, t.toolsSizeOff = len(b)+1, off
	}
	return t.toolsSize
}

// promptTokens estimates the tokens of the turn's next request: the last
// response's reported input and output plus what the history gained since,
// or, when no response was seen since the history was last rebuilt, an
// estimate of the whole request. The larger of the two counts.
func (t *thread) promptTokens(tr *turn) int64 {
	e := compaction.Estimate{
		FixedBytes:   len(tr.prompt) + t.toolsBytes(),
		HistoryBytes: contextwindow.Bytes(t.history),
		HistoryLen:   len(t.history),
		Usage:        compaction.Usage{Valid: t.lastUsage.valid, Tokens: t.lastUsage.tokens, HistLen: t.lastUsage.histLen},
	}
	if u := t.lastUsage; u.valid && u.histLen <= len(t.history) {
		e.SinceBytes = contextwindow.Bytes(t.history[u.histLen:])
	}
	return e.Tokens()
}

// usageMark is the last response's reported tokens and the history length
// then; owned by the thread goroutine.
type usageMark struct {
	valid   bool
	tokens  int64
	histLen int
}

// compactRun is a compaction in flight; owned by the thread goroutine.
type compactRun struct {
	item   protocol.ContextCompactionItem
	auto   bool
	before int64 // prompt tokens before
	cancel context.CancelFunc
	then   func() // what the turn does next, after an automatic compaction
}

// sampleNext asks the model again, compacting first when the request would
// pass the trigger: Codex's pre-turn and mid-turn checks (only follow-up
// work, tool outputs or steered input, samples mid-turn).
func (t *thread) sampleNext(tr *turn) {
	_, trigger := t.turnLimits(tr)
	if compaction.Due(trigger, t.promptTokens(tr)) {
		t.startCompaction(tr, true, func() { t.sampleAfterCompaction(tr) })
		return
	}
	t.sample(tr)
}

// compactOnOverflow handles a request the provider refused as too long for
// the model's window: the estimate did not see it coming (the window is
// unknown, or the provider counts differently). If nothing of the response
// arrived, the context is compacted and the request sent again, once;
// false means the turn fails with the error (contextWindowExceeded).
func (t *thread) compactOnOverflow(tr *turn, err error) bool {
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.ErrKindContextWindow || !compaction.CompactOnOverflow(compaction.Overflow{
		Compacted: tr.overflowCompacted, CompactionTurn: tr.kind == turnKindCompact,
		Output: tr.msg != nil || tr.reasoning != nil || len(tr.calls) > 0}) {
		return false
	}
	tr.overflowCompacted = true
	tr.sampling = false
	t.m.windows.Learn(&t.m.opts.Config, tr.providerName(), tr.modelName, t.promptTokens(tr))
	// A window learned just now from a request that was mostly the
	// latest message: no compaction can help, since it keeps that message.
	if i := compaction.LatestUser(contextwindow.Entries(t.history), tr.histStart); i >= 0 {
		if err := t.messageTooBigFor(tr, len(t.history[i].Text), "the provider refused it as too long"); err != nil {
			t.failTurn(tr, err)
			return true
		}
	}
	t.m.log.Warn("the model refused the request as too long for its window; compacting", "thread", t.id, "turn", tr.id, "err", me.Message)
	t.startCompaction(tr, true, func() { t.sampleAfterCompaction(tr) })
	return true
}

// sampleAfterCompaction goes on with the turn after an automatic
// compaction: steered input that arrived meanwhile, then the model.
func (t *thread) sampleAfterCompaction(tr *turn) {
	if err := t.consumePendingInput(tr); err != nil {
		t.failTurn(tr, err)
		return
	}
	t.sample(tr)
}

// CompactThread implements thread/compact/start: {} at once, then a
// compaction turn. A running turn is replaced by it (ended as interrupted,
// as Codex does).
func (m *Manager) CompactThread(ctx context.Context, p protocol.ThreadIDParams, reply Reply) {
	m.onThread(p.ThreadID, reply, func(t *thread) { t.compactStart(reply) })
}

func (t *thread) compactStart(reply Reply) {
	if tr := t.turn; tr != nil && tr.kind == turnKindCompact {
		reply(protocol.Empty{}, nil) // already compacting: that turn is the answer
		return
	}
	reply(protocol.Empty{}, nil)
	if t.turn != nil {
		t.turn.replaced = true // full auto decides after the compaction turn, not on this one
		t.finishInterrupted()
	}
	tr, err := t.beginTurn(protocol.TurnStartParams{})
	if err != nil {
		t.m.log.Error("starting a compaction turn", "thread", t.id, "err", err)
		t.notify(protocol.NotifyError, protocol.ErrorNotification{Error: turnwire.ErrorFrom(err, ""), ThreadID: t.id})
		return
	}
	tr.kind = turnKindCompact
	t.setStatus(protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{}})
	started := tr.wire(protocol.ItemsNotLoaded)
	started.StartedAt = ptr(tr.started.Unix())
	t.notify(protocol.NotifyTurnStarted, protocol.TurnNotification{ThreadID: t.id, Turn: started})
	tr.histStart = len(t.history)
	t.apply(t.fsm().TurnStarted(t.nowMs(), tr.id, "")) // a run sees it like a client's turn
	t.startCompaction(tr, false, func() {
		tr.endRecorded = true
		t.completeTurn(tr, protocol.TurnCompleted, nil)
	})
}

// startCompaction compacts the thread's history within tr: item/started
// contextCompaction, the summary request (off the thread goroutine), then
// finishCompaction. then runs after a successful compaction.
func (t *thread) startCompaction(tr *turn, auto bool, then func()) {
	ctx, cancel := context.WithCancel(tr.ctx)
	c := &compactRun{item: protocol.ContextCompactionItem{ID: t.uniqueItemID("")}, auto: auto, before: t.promptTokens(tr), cancel: cancel, then: then}
	tr.compacting = c
	t.notify(protocol.NotifyItemStarted, protocol.ItemStartedNotification{Item: c.item, ThreadID: t.id, TurnID: tr.id, StartedAtMs: t.m.clock.Now().UnixMilli()})

	modelName, client := tr.modelName, tr.client
	if t.m.opts.Config.HasRole(config.CompactionRole) {
		name, prov, err := t.m.opts.Config.ResolveModel(config.CompactionRole, "")
		if err != nil {
			cancel()
			t.failTurn(tr, fmt.Errorf("compaction model: %w", err))
			return
		}
		modelName, client = name, t.m.modelClient(prov)
	}
	window, _ := t.compactLimits(client.Provider().Name, modelName)
	input := compaction.FitSummaryInput(compaction.Summarizable(contextwindow.Entries(t.history)), window)
	go func() {
		summary, err := t.summarizeContext(ctx, client, modelName, input)
		t.postEvent(ctx, func() { t.finishCompaction(tr, c, summary, err) })
	}()
}

// summarizeContext asks the compaction model for the handoff summary of
// entries, in a scheduler's slot (contextwindow.Summarize).
func (t *thread) summarizeContext(ctx context.Context, client *model.Client, modelName string, entries []compaction.Entry) (string, error) {
	return contextwindow.Summarize(ctx, t.m.sched.Stream, client, modelName, entries)
}

// finishCompaction installs the summary: the new history, the tombstone in
// the store, item/completed and Codex's warning; then the guards.
func (t *thread) finishCompaction(tr *turn, c *compactRun, summary string, err error) {
	if t.turn != tr || tr.compacting != c {
		return
	}
	tr.compacting = nil
	c.cancel()
	if err != nil {
		tr.dropOpen(c.item.ID) // nothing was compacted: no item/completed
		t.failTurn(tr, fmt.Errorf("compacting the context: %w", err))
		return
	}
	hist, inflight := t.compactedHistory(tr, summary)
	base := len(tr.prompt) + t.toolsBytes()
	window, trigger := t.turnLimits(tr)
	o := compaction.Judge(compaction.Judged{
		Auto:   c.auto,
		Before: compaction.ApproxTokens(base + contextwindow.Bytes(t.history)), After: compaction.ApproxTokens(base + contextwindow.Bytes(hist)),
		Window: window, Trigger: trigger, Streak: t.compactStreak,
	})
	after := compaction.ApproxTokens(base + contextwindow.Bytes(hist))
	if !o.Replaced {
		// Roo's rule: a compaction that does not shrink the prompt (both
		// sides estimated alike) is refused; the history stays as it was.
		t.m.log.Warn("compaction refused: it would not shrink the prompt", "thread", t.id, "turn", tr.id, "before", compaction.ApproxTokens(base+contextwindow.Bytes(t.history)), "after", after)
		if o.Verdict == compaction.Fail {
			// The prompt is over the trigger and cannot be made smaller.
			tr.dropOpen(c.item.ID)
			t.failTurn(tr, &turnwire.ContextError{Msg: o.Message})
			return
		}
		// A client's compaction of a thread too small to gain from one:
		// nothing is replaced (no tombstone, the history stays), the turn
		// ends normally and the warning says so. Not an error: the thread
		// is fine as it is.
		if err := t.commitItem(tr, c.item, nil); err != nil {
			t.failTurn(tr, err)
			return
		}
		t.notify(protocol.NotifyWarning, protocol.WarningNotification{ThreadID: &t.id, Message: o.Message})
		c.then()
		return
	}
	now := t.m.clock.Now()
	if t.persistent() {
		raw, _ := json.Marshal(c.item)
		h, _ := json.Marshal(hist)
		db, err := t.m.store()
		if err == nil {
			_, err = db.AppendCompaction(tr.ctx, store.Item{ThreadID: t.id, TurnID: tr.id, ID: c.item.ID, Type: c.item.ItemType(), Item: raw, CompletedAt: now.UnixMilli()},
				store.Compaction{Summary: summary, History: h, TokensBefore: c.before, TokensAfter: after, Auto: c.auto, CreatedAt: now.UnixMilli()})
		}
		if err != nil {
			t.failTurn(tr, fmt.Errorf("storing compaction %s: %w", c.item.ID, err))
			return
		}
	} else {
		t.ephemeralCompactions = append(t.ephemeralCompactions, savedHistory{turnID: tr.id, history: t.history})
	}
	t.history = hist
	t.lastUsage = usageMark{}
	tr.histStart = len(hist) - inflight
	tr.stepStart = tr.histStart
	tr.items = append(tr.items, c.item)
	t.notify(protocol.NotifyItemCompleted, protocol.ItemCompletedNotification{Item: c.item, ThreadID: t.id, TurnID: tr.id, CompletedAtMs: now.UnixMilli()})
	t.notify(protocol.NotifyWarning, protocol.WarningNotification{ThreadID: &t.id, Message: compaction.Warning})
	t.compacted(tr, window, after)
	if !c.auto {
		c.then()
		return
	}
	t.compactStreak = o.Streak // reset only by real user input (userMessage)
	if o.Verdict == compaction.Fail {
		t.failTurn(tr, &turnwire.ContextError{Msg: o.Message})
		return
	}
	c.then()
}

// savedHistory is an ephemeral thread's history before a compaction in
// turn turnID, for thread/revert (a persistent thread's store keeps it).
type savedHistory struct {
	turnID  string
	history []model.Entry
}

// undoCompactions restores, for an ephemeral thread reverted from the
// first of dropped, the history from before the earliest compaction in a
// dropped turn.
func (t *thread) undoCompactions(dropped []string) {
	gone := map[string]bool{}
	for _, id := range dropped {
		gone[id] = true
	}
	for i, s := range t.ephemeralCompactions {
		if gone[s.turnID] {
			t.history = s.history
			t.ephemeralCompactions = t.ephemeralCompactions[:i]
			return
		}
	}
}

// compactedHistory builds the history that replaces t.history
// (compaction.Replace): the summary, the pinned context (objective, plan),
// the newest user messages, and, mid-turn, the step in flight. inflight is
// that step's length.
func (t *thread) compactedHistory(tr *turn, summary string) (hist []model.Entry, inflight int) {
	p := compaction.Replace(contextwindow.Entries(t.history), compaction.Step{InStep: tr.inStep, Start: tr.stepStart},
		summary, t.pinnedContext(tr), compaction.KeptBudget(t.outputBudget(tr)))
	return contextwindow.Compacted(t.history, p)
}

// pinnedContext is what no summary may lose: the full-auto objective and
// the current plan, verbatim (compaction.Pinned). With no plan seen since
// the thread was loaded, the one the last compaction pinned is carried.
func (t *thread) pinnedContext(tr *turn) string {
	objective := ""
	if r := t.autoDrive(); r != nil {
		objective = r.Objective
	}
	plan := tr.plan
	if len(plan) == 0 {
		plan = t.lastPlan
	}
	last := ""
	for _, e := range t.history {
		if entry(e).Pinned() {
			last = e.Text
			break
		}
	}
	return compaction.Pinned(objective, plan, last)
}

// compacted tells a full-auto run how full the context is after a
// compaction (fullauto.Machine.Compacted).
func (t *thread) compacted(tr *turn, window, after int64) {
	ratio := 0.0
	if window > 0 {
		ratio = float64(after) / float64(window)
	}
	t.apply(t.fsm().Compacted(t.nowMs(), tr.id, ratio))
}
