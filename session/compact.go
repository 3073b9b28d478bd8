package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
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
const (
	// keptUserTokens bounds the newest user messages kept verbatim (Codex
	// keeps 20,000 tokens of them).
	keptUserTokens = 20000
	// maxAutoStreak: this many automatic compactions in a row that leave
	// the prompt above the trigger end the turn with contextWindowExceeded.
	maxAutoStreak = 3
	// maxOverflowRetries bounds the retries of a compaction request the
	// model refused as too long (each drops the oldest history entry).
	maxOverflowRetries = 16
	// entryOverhead approximates the bytes of JSON around one history
	// entry in a request.
	entryOverhead = 48
)

// compactWarning is the warning Codex sends after every compaction.
const compactWarning = "Heads up: Long threads and multiple compactions can cause the model to be less accurate. Start a new thread when possible to keep threads small and targeted."

// Markers of the history entries a compaction writes, so a later
// compaction recognises them (they are replaced, not kept as user input).
const (
	summaryHeader = "[Context compacted] Earlier parts of this conversation were replaced by the handoff summary below. Work marked [completed] is done: do not do it again."
	pinnedHeader  = "[Kept verbatim across compactions]"
	earlierPrefix = "[Earlier user message, already handled; do not act on it again unless the latest message asks for it]\n"
)

const planHeading = "\n\n## Current plan"

const compactInstructions = "You write handoff summaries of a coding agent's session. Another agent continues the work from your summary alone. Be exact and brief; never invent progress."

// compactPrompt is the request to summarize. Our own wording; the
// structure follows what a successor needs to go on without re-doing or
// forgetting anything.
const compactPrompt = `Compaction request: the transcript above will be replaced by your handoff summary. The system instructions, AGENTS.md, the objective, the current plan and the latest user message are kept verbatim for your successor, so do not restate them in full.

Write the summary in Markdown with exactly these sections:

## Task
What the user asked for, with every identifier copied exactly (issue and PR numbers, ids, branch names, file paths, URLs).

## Done
Every instruction and step that is finished, one per line, each starting with "[completed]". Finished work must never be carried out again.

## Pending
What is still to do, in order. Quote the next steps verbatim from the user or the plan where they exist.

## Files
Each file read, created or changed, with one line on what changed.

## Tests
Each test or check run: the command and its latest result (passed, or how it failed).

## Decisions
Choices made and why; approaches tried and abandoned.

Reply with the summary only. Do not call tools.`

// windowKey keys a learned context window: the same model name served by
// two providers (a hosted model and a local quantization of it, two
// gateways) may have two windows, so a refusal by one provider says
// nothing about the other.
type windowKey struct{ provider, model string }

// compactLimits are the token limits of model as provider serves it: its
// context window (0 unknown) and the automatic-compaction trigger (0
// never).
func (t *thread) compactLimits(provider, modelName string) (window, trigger int64) {
	c := t.m.opts.Config
	window = c.ContextWindow(modelName)
	if window == 0 {
		if v, ok := t.m.learnedWindows.Load(windowKey{provider, modelName}); ok {
			window = v.(int64)
		}
	}
	return window, c.CompactTrigger(window)
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

// learnWindow notes that provider refused a request of about tokens as
// too long for model, whose window no configuration gives: the window is
// at most that for that provider, and its later requests compact before
// they reach 90% of it.
func (t *thread) learnWindow(provider, modelName string, tokens int64) {
	if t.m.opts.Config.ContextWindow(modelName) > 0 || tokens <= 0 {
		return
	}
	key := windowKey{provider, modelName}
	for {
		old, loaded := t.m.learnedWindows.LoadOrStore(key, tokens)
		if !loaded || old.(int64) <= tokens || t.m.learnedWindows.CompareAndSwap(key, old, tokens) {
			return
		}
	}
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
	if window <= 0 {
		return nil
	}
	msg := approxTokens(n)
	fixed := approxTokens(len(tr.prompt) + t.toolsBytes())
	if msg+fixed < window*95/100 {
		return nil
	}
	size := fmt.Sprintf("%d tokens", window)
	if t.m.opts.Config.ContextWindow(tr.modelName) == 0 {
		size = fmt.Sprintf("at most %d tokens (learned from a refusal)", window)
	}
	if msg >= window {
		return &contextError{msg: fmt.Sprintf("the message alone is larger than the model's context window: about %d tokens (%d bytes), and %s's window is %s; %s", msg, n, tr.modelName, size, fate)}
	}
	return &contextError{msg: fmt.Sprintf("the message does not fit the model's context window: about %d tokens (%d bytes), with %d tokens of instructions and tools, and %s's window is %s; %s", msg, n, fixed, tr.modelName, size, fate)}
}

// approxTokens estimates the tokens of n bytes of request (4 bytes a token).
func approxTokens(n int) int64 { return int64(n+3) / 4 }

func entryBytes(e model.Entry) int {
	return len(e.Text) + len(e.CallID) + len(e.Name) + len(e.Arguments) + len(e.Output) + entryOverhead
}

func entriesBytes(es []model.Entry) int {
	n := 0
	for _, e := range es {
		n += entryBytes(e)
	}
	return n
}

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
	est := approxTokens(len(tr.prompt) + entriesBytes(t.history) + t.toolsBytes())
	if u := t.lastUsage; u.valid && u.histLen <= len(t.history) {
		if n := u.tokens + approxTokens(entriesBytes(t.history[u.histLen:])); n > est {
			return n
		}
	}
	return est
}

// usageMark is the last response's reported tokens and the history length
// then; owned by the thread goroutine.
type usageMark struct {
	valid   bool
	tokens  int64
	histLen int
}

// compaction is a compaction in flight; owned by the thread goroutine.
type compaction struct {
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
	if trigger > 0 && t.promptTokens(tr) >= trigger {
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
	if !errors.As(err, &me) || me.Kind != model.ErrKindContextWindow || tr.overflowCompacted ||
		tr.kind == turnKindCompact || tr.msg != nil || tr.reasoning != nil || len(tr.calls) > 0 {
		return false
	}
	tr.overflowCompacted = true
	tr.sampling = false
	t.learnWindow(tr.providerName(), tr.modelName, t.promptTokens(tr))
	// A window learned just now from a request that was mostly the
	// latest message: no compaction can help, since it keeps that message.
	for i := len(t.history) - 1; i >= tr.histStart && i >= 0; i-- {
		if e := t.history[i]; e.Kind == model.EntryUser && !isCompactionEntry(e) {
			if err := t.messageTooBigFor(tr, len(e.Text), "the provider refused it as too long"); err != nil {
				t.failTurn(tr, err)
				return true
			}
			break
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
		t.notify(protocol.NotifyError, protocol.ErrorNotification{Error: turnErrorFrom(err, ""), ThreadID: t.id})
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

// notSteerable is turn/steer's answer while a compaction turn runs.
func notSteerable(kind string) error {
	msg := "cannot steer a " + kind + " turn"
	data, _ := json.Marshal(protocol.TurnError{Message: msg, CodexErrorInfo: protocol.ErrorInfoNotSteerable(kind)})
	return &protocol.Error{Kind: protocol.ErrInvalidRequest, Msg: msg, Data: data}
}

// startCompaction compacts the thread's history within tr: item/started
// contextCompaction, the summary request (off the thread goroutine), then
// finishCompaction. then runs after a successful compaction.
func (t *thread) startCompaction(tr *turn, auto bool, then func()) {
	ctx, cancel := context.WithCancel(tr.ctx)
	c := &compaction{item: protocol.ContextCompactionItem{ID: t.uniqueItemID("")}, auto: auto, before: t.promptTokens(tr), cancel: cancel, then: then}
	tr.compacting = c
	t.notify(protocol.NotifyItemStarted, protocol.ItemStartedNotification{Item: c.item, ThreadID: t.id, TurnID: tr.id, StartedAtMs: time.Now().UnixMilli()})

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
	entries := summarizable(t.history)
	go func() {
		summary, err := t.summarizeContext(ctx, client, modelName, window, entries)
		t.postEvent(ctx, func() { t.finishCompaction(tr, c, summary, err) })
	}()
}

// summarizeContext asks the compaction model for the handoff summary of entries.
// A request too long for the window drops the oldest entries first; one
// the model refuses as too long drops the oldest entry and retries.
func (t *thread) summarizeContext(ctx context.Context, client *model.Client, modelName string, window int64, entries []model.Entry) (string, error) {
	if window > 0 {
		budget := window*95/100 - approxTokens(len(compactInstructions)+len(compactPrompt))
		for len(entries) > 1 && approxTokens(transcriptBytes(entries)) > budget {
			entries = entries[1:]
		}
	}
	for attempt := 0; ; attempt++ {
		req := model.Request{
			Model:        modelName,
			Instructions: compactInstructions,
			Input:        []model.Entry{{Kind: model.EntryUser, Text: transcript(entries) + "\n\n" + compactPrompt}},
		}
		var text, final strings.Builder
		err := t.m.sched.stream(ctx, client, req, func(ev model.Event) {
			switch ev.Kind {
			case model.EvTextDelta:
				text.WriteString(ev.Text)
			case model.EvMessageDone:
				final.WriteString(ev.Text)
			}
		})
		var me *model.Error
		if errors.As(err, &me) && me.Kind == model.ErrKindContextWindow && len(entries) > 1 && attempt < maxOverflowRetries {
			entries = entries[1:]
			continue
		}
		if err != nil {
			return "", err
		}
		s := final.String()
		if s == "" {
			s = text.String()
		}
		if strings.TrimSpace(s) == "" {
			return "", errors.New("the compaction model returned an empty summary")
		}
		return strings.TrimSpace(s), nil
	}
}

// finishCompaction installs the summary: the new history, the tombstone in
// the store, item/completed and Codex's warning; then the guards.
func (t *thread) finishCompaction(tr *turn, c *compaction, summary string, err error) {
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
	after := approxTokens(base + entriesBytes(hist))
	window, trigger := t.turnLimits(tr)
	if est := approxTokens(base + entriesBytes(t.history)); after >= est {
		// Roo's rule: a compaction that does not shrink the prompt (both
		// sides estimated alike) is refused; the history stays as it was.
		t.m.log.Warn("compaction refused: it would not shrink the prompt", "thread", t.id, "turn", tr.id, "before", est, "after", after)
		msg := fmt.Sprintf("compaction refused: it would not shrink the context (%d tokens before, %d after)", est, after)
		if c.auto {
			// The prompt is over the trigger and cannot be made smaller.
			tr.dropOpen(c.item.ID)
			t.failTurn(tr, &contextError{msg: msg})
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
		t.notify(protocol.NotifyWarning, protocol.WarningNotification{ThreadID: &t.id, Message: msg + "; the history is kept as it is"})
		c.then()
		return
	}
	now := time.Now()
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
	t.notify(protocol.NotifyWarning, protocol.WarningNotification{ThreadID: &t.id, Message: compactWarning})
	t.compacted(tr, window, after)
	if !c.auto {
		c.then()
		return
	}
	if trigger > 0 && after >= trigger {
		t.compactStreak++ // reset only by real user input (userMessage)
	}
	switch {
	case t.compactStreak >= maxAutoStreak:
		t.failTurn(tr, &contextError{msg: fmt.Sprintf("%d automatic compactions in a row left the context above the limit (%d of %d tokens); stopping", t.compactStreak, after, trigger)})
	case window > 0 && after >= window*95/100:
		t.failTurn(tr, &contextError{msg: fmt.Sprintf("the context does not fit the model's window even after compaction (%d of %d tokens)", after, window)})
	default:
		c.then()
	}
}

// contextError ends a turn that compaction cannot help: its TurnError has
// codexErrorInfo "contextWindowExceeded".
type contextError struct{ msg string }

func (e *contextError) Error() string { return e.msg }

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

// isCompactionEntry reports whether e is a summary or pinned entry a
// compaction wrote.
func isCompactionEntry(e model.Entry) bool {
	return e.Kind == model.EntryUser && (strings.HasPrefix(e.Text, summaryHeader) || strings.HasPrefix(e.Text, pinnedHeader))
}

// summarizable is the history the compaction model reads: everything but
// the pinned entries (they are re-injected as they are).
func summarizable(h []model.Entry) []model.Entry {
	out := make([]model.Entry, 0, len(h))
	for _, e := range h {
		if e.Kind == model.EntryUser && strings.HasPrefix(e.Text, pinnedHeader) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// compactedHistory builds the history that replaces t.history: the summary,
// the pinned context (objective, plan), the newest user messages up to
// keptUserTokens (the last verbatim, the earlier marked as handled), and,
// mid-turn, the step in flight (the last response's calls and outputs) so
// the model goes on from where it was. inflight is that step's length.
func (t *thread) compactedHistory(tr *turn, summary string) (hist []model.Entry, inflight int) {
	hist = append(hist, model.Entry{Kind: model.EntryUser, Text: summaryHeader + "\n\n" + summary})
	if p := t.pinnedContext(tr); p != "" {
		hist = append(hist, model.Entry{Kind: model.EntryUser, Text: p})
	}
	// The step in flight: the last response's tool calls and outputs,
	// unless steered input followed them.
	start := len(t.history)
	if tr.inStep && tr.stepStart <= len(t.history) {
		start = tr.stepStart
		for _, e := range t.history[tr.stepStart:] {
			if e.Kind != model.EntryToolCall && e.Kind != model.EntryToolOutput {
				start = len(t.history)
				break
			}
		}
	}
	var users []model.Entry
	budget := int64(keptUserTokens)
	if b := approxTokens(t.outputBudget(tr)) / 2; b > 0 && b < budget {
		// A small window: the kept messages may take half what one tool
		// output may (tooloutput.go), or a long run's messages alone
		// would fill it after a while; the compacted context then stays
		// well below the 75% at which full auto hands the run off.
		budget = b
	}
	for i := start - 1; i >= 0; i-- {
		e := t.history[i]
		if e.Kind != model.EntryUser || isCompactionEntry(e) {
			continue
		}
		n := approxTokens(len(e.Text))
		if len(users) > 0 && n > budget {
			break
		}
		budget -= n
		users = append(users, e)
	}
	for i := len(users) - 1; i >= 0; i-- {
		e := users[i]
		if i > 0 && !strings.HasPrefix(e.Text, earlierPrefix) {
			e.Text = earlierPrefix + e.Text
		}
		hist = append(hist, e)
	}
	hist = append(hist, t.history[start:]...)
	return hist, len(t.history) - start
}

// pinnedContext is what no summary may lose: the full-auto objective and
// the current plan, verbatim.
func (t *thread) pinnedContext(tr *turn) string {
	var b strings.Builder
	if r := t.autoDrive(); r != nil && r.Objective != "" {
		fmt.Fprintf(&b, "\n\n## Objective (full auto)\n%s", r.Objective)
	}
	plan := tr.plan
	if len(plan) == 0 {
		plan = t.lastPlan
	}
	if len(plan) > 0 {
		b.WriteString(planHeading)
		for _, s := range plan {
			fmt.Fprintf(&b, "\n- [%s] %s", s.Status, s.Step)
		}
	} else {
		// No plan seen since the thread was loaded: carry the one the
		// last compaction pinned.
		for _, e := range t.history {
			if e.Kind == model.EntryUser && strings.HasPrefix(e.Text, pinnedHeader) {
				if i := strings.Index(e.Text, planHeading); i >= 0 {
					b.WriteString(e.Text[i:])
				}
				break
			}
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return pinnedHeader + b.String()
}

// transcript renders entries as plain text for the compaction model: no
// tool-call pairing to keep valid, and any provider accepts it.
func transcript(es []model.Entry) string {
	var b strings.Builder
	b.Grow(transcriptBytes(es))
	b.WriteString("<transcript>\n")
	for _, e := range es {
		switch e.Kind {
		case model.EntryUser:
			b.WriteString("\n[user]\n")
			b.WriteString(e.Text)
		case model.EntryAssistant:
			b.WriteString("\n[assistant]\n")
			b.WriteString(e.Text)
		case model.EntryToolCall:
			fmt.Fprintf(&b, "\n[tool call %s %s]\n", e.Name, e.CallID)
			b.WriteString(e.Arguments)
		case model.EntryToolOutput:
			fmt.Fprintf(&b, "\n[tool output %s]\n", e.CallID)
			b.WriteString(e.Output)
		}
		b.WriteByte('\n')
	}
	b.WriteString("</transcript>")
	return b.String()
}

func transcriptBytes(es []model.Entry) int { return entriesBytes(es) + 32 }

// compacted tells a full-auto run how full the context is after a
// compaction (fullauto.Machine.Compacted).
func (t *thread) compacted(tr *turn, window, after int64) {
	ratio := 0.0
	if window > 0 {
		ratio = float64(after) / float64(window)
	}
	t.apply(t.fsm().Compacted(t.nowMs(), tr.id, ratio))
}
