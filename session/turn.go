package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/imageinput"
	"github.com/apserver/apserver/instructions"
	"github.com/apserver/apserver/internal/uuid"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/tooloutput"
	"github.com/apserver/apserver/tools/checkpoint"
	"github.com/apserver/apserver/tools/files"
	"github.com/apserver/apserver/turnwire"
)

// turn is the active turn of a thread; owned by the thread goroutine.
type turn struct {
	id      string
	ctx     context.Context
	cancel  context.CancelFunc
	started time.Time
	seq     int

	modelName string
	client    *model.Client
	prompt    string
	// histStart is len(t.history) before the turn's input: the turn's
	// steps are the history after it.
	histStart int
	// deadline fires when a full-auto run's time budget runs out during
	// the turn (fullauto.go); the turn's end stops it.
	deadline Timer
	// schema, from turn/start's outputSchema, asks the model for
	// structured output for this turn only.
	schema *model.OutputSchema
	// readOnly: a plan-mode or review turn (planmode.go, review.go): no
	// file tools, commands only in the read-only sandbox. review is what
	// a review turn reviews ("" for any other turn).
	readOnly bool
	review   string
	// overflowCompacted: the last request was refused as too long for the
	// model's window and the context compacted for it (compact.go); a
	// second refusal of the same request ends the turn.
	overflowCompacted bool
	// replaced: interrupted to make way for a compaction turn
	// (thread/compact/start); full auto decides after that turn instead.
	replaced bool

	// Sampling state. gen counts model requests; events of older
	// generations are dropped.
	gen          int
	sampling     bool
	streamCancel context.CancelFunc
	msg          *protocol.AgentMessageItem // agent message in flight
	msgModelID   string
	msgText      model.TextBuffer
	msgStarted   time.Time
	reasoning    *protocol.ReasoningItem // reasoning in flight
	reasonParts  turnwire.Reasoning      // its streamed parts until it completes
	reasonModel  string
	calls        []model.ToolCall // tool calls of the last response, not yet run

	// pendingInput is steered input not yet given to the model.
	pendingInput []userInput
	// requests are server requests waiting for an answer.
	requests []int64

	items     []protocol.ThreadItem // completed items, in order
	lastAgent *protocol.AgentMessageItem
	// open are the items started and not completed, in start order
	// (tracked by thread.notify); a failing turn completes them.
	open []protocol.ThreadItem
	// outBytes is the model output streamed in this turn, against
	// Config.TurnMaxOutputBytes; limit fires at Config.TurnMaxTime.
	outBytes int64
	limit    Timer

	// plan is the agent's latest update_plan.
	plan []protocol.TurnPlanStep
	// kind is turnKindCompact for a thread/compact/start turn (it cannot
	// be steered); compacting is the compaction in flight (compact.go).
	kind       string
	compacting *compactRun
	// stepStart is len(t.history) when the last response's tool calls
	// began to run (inStep); a compaction keeps that step verbatim.
	stepStart int
	inStep    bool
	// stamps record what the agent last read or wrote of each file
	// (workspace-relative path); a change to a file whose stamp no longer
	// matches was edited by someone else and is refused.
	stamps map[string]files.Stamp
	// Checkpoints: the start snapshot being taken, the ids recorded so far,
	// whether a diff was sent and the end snapshot recorded.
	startSnap   *pendingSnapshot
	ckpt        checkpoint.Turn
	ckptWarned  bool
	diffSent    bool
	endRecorded bool
}

func (tr *turn) wire(view protocol.ItemsView) protocol.Turn {
	w := protocol.Turn{ID: tr.id, Items: []protocol.ThreadItem{}, ItemsView: view, Status: protocol.TurnInProgress}
	if view == protocol.ItemsFull {
		w.Items = append(w.Items, tr.items...)
	}
	return w
}

func ptr[T any](v T) *T { return &v }

// turnKindCompact is the kind of a thread/compact/start turn, as Codex
// names it in activeTurnNotSteerable.
const turnKindCompact = "compact"

// startTurn implements turn/start on the thread goroutine.
func (t *thread) startTurn(p protocol.TurnStartParams, reply Reply) {
	if tr := t.turn; tr != nil {
		if tr.kind == turnKindCompact {
			reply(nil, turnwire.NotSteerable(tr.kind))
			return
		}
		// Codex: turn/start on a busy thread steers the active turn.
		tr.pendingInput = append(tr.pendingInput, userInput{p.Input, p.ClientUserMessage})
		reply(protocol.TurnResult{Turn: tr.wire(protocol.ItemsNotLoaded)}, nil)
		t.consumeSteerIfSampling(tr)
		return
	}
	tr, err := t.beginTurn(p)
	if err != nil {
		reply(nil, err)
		return
	}
	t.applyMode(tr, p.CollaborationMode) // planmode.go
	reply(protocol.TurnResult{Turn: tr.wire(protocol.ItemsNotLoaded)}, nil)
	t.runTurn(tr, userInput{p.Input, p.ClientUserMessage}, nil)
}

// beginTurn makes the thread's next turn from p (its settings overrides
// stick) and records it; the caller answers, then calls runTurn. Both
// turn/start and a full-auto run start turns this way.
func (t *thread) beginTurn(p protocol.TurnStartParams) (*turn, error) {
	changed, err := t.settings.ApplyTurn(p)
	if err != nil {
		return nil, err
	}
	modelName, provider, err := t.m.opts.Config.ResolveThreadModel(t.settings.Model, t.settings.Provider)
	if err != nil {
		return nil, protocol.Errorf(protocol.ErrInvalidRequest, "model: %v", err)
	}
	if t.settings.Model == "" {
		t.settings.Model = modelName
	}
	if t.settings.Provider != provider.Name && provider.Name != "" {
		t.settings.Provider, changed = provider.Name, true
	}
	text := protocol.InputText(p.Input)
	if t.meta.Preview == "" && text != "" {
		t.meta.Preview = tooloutput.CutBytes(text, 200)
		changed = true
	}
	now := t.m.clock.Now()
	t.meta.UpdatedAt = now.UnixMilli()
	if changed {
		if err := t.saveMeta(); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(t.ctx)
	tr := &turn{
		id: uuid.NewV7(), ctx: ctx, cancel: cancel, started: now,
		modelName: modelName,
		stamps:    map[string]files.Stamp{},
		client:    t.m.modelClient(provider),
		prompt:    instructions.System(t.settings.Cwd, t.settings.BaseInstructions, t.agents(), t.m.opts.Config.Instructions, t.settings.DeveloperInstructions) + instructions.SandboxNote(t.settings.Sandbox) + t.projectContext(),
	}
	tr.schema = outputSchema(p.OutputSchema)
	if t.persistent() {
		db, err := t.m.store()
		if err == nil {
			var st store.Turn
			st, err = db.StartTurn(ctx, store.Turn{ThreadID: t.id, ID: tr.id, Status: store.StatusInProgress, StartedAt: now.UnixMilli()})
			tr.seq = st.Seq
		}
		if err != nil {
			cancel()
			return nil, fmt.Errorf("starting turn: %w", err)
		}
	}
	t.turn = tr
	if !t.persistent() {
		t.histMark[tr.id] = len(t.history) // for thread/revert; the store keeps the rest
	}
	if d := t.m.opts.Config.TurnMaxTime; d > 0 {
		tr.limit = t.m.clock.AfterFunc(d, func() {
			t.postEvent(ctx, func() {
				t.failTurn(tr, &turnwire.LimitError{What: fmt.Sprintf("the turn ran longer than %s", d), Key: "turn_max_time_ms"})
			})
		})
	}
	return tr, nil
}

// runTurn announces a turn beginTurn made and starts it with the user's
// input, or a full-auto run's (auto).
func (t *thread) runTurn(tr *turn, user userInput, auto *fullauto.TurnInput) {
	t.setStatus(protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{}})
	started := tr.wire(protocol.ItemsNotLoaded)
	started.StartedAt = ptr(tr.started.Unix())
	t.notify(protocol.NotifyTurnStarted, protocol.TurnNotification{ThreadID: t.id, Turn: started})
	tr.histStart = len(t.history)
	if err := t.runTurnInput(tr, auto); err != nil { // full auto's hidden input (fullauto.go)
		t.failTurn(tr, err)
		return
	}
	if len(user.content) > 0 {
		if err := t.userMessage(tr, user); err != nil {
			t.failTurn(tr, err)
			return
		}
	}
	if !t.routeIntent(tr, user, auto) { // the manager's intent from chat (intenthook.go)
		t.sampleNext(tr) // pre-turn compaction check (compact.go)
	}
}

// steer implements turn/steer.
func (t *thread) steer(p protocol.TurnSteerParams, reply Reply) {
	tr := t.turn
	if tr == nil {
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "no active turn to steer"))
		return
	}
	if p.ExpectedTurnID != tr.id {
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "expected active turn id `%s` but found `%s`", p.ExpectedTurnID, tr.id))
		return
	}
	if tr.kind == turnKindCompact {
		reply(nil, turnwire.NotSteerable(tr.kind))
		return
	}
	tr.pendingInput = append(tr.pendingInput, userInput{p.Input, p.ClientUserMessage})
	reply(protocol.TurnSteerResult{TurnID: tr.id}, nil)
	t.consumeSteerIfSampling(tr)
}

// consumeSteerIfSampling abandons an in-flight model request so the steered
// input reaches the model now. A partial agent message is left without
// item/completed, as Codex does. While a tool runs, the input waits for it.
func (t *thread) consumeSteerIfSampling(tr *turn) {
	if !tr.sampling {
		return
	}
	tr.streamCancel()
	tr.sampling = false
	// The partial message and reasoning are abandoned (CORE.md §6 turn/steer).
	if tr.msg != nil {
		tr.dropOpen(tr.msg.ID)
	}
	if tr.reasoning != nil {
		tr.dropOpen(tr.reasoning.ID)
	}
	tr.msg, tr.reasoning, tr.calls = nil, nil, nil
	tr.msgText.Reset()
	if err := t.consumePendingInput(tr); err != nil {
		t.failTurn(tr, err)
		return
	}
	t.sampleNext(tr)
}

func (t *thread) consumePendingInput(tr *turn) error {
	for len(tr.pendingInput) > 0 {
		in := tr.pendingInput[0]
		tr.pendingInput = tr.pendingInput[1:]
		if err := t.userMessage(tr, in); err != nil {
			return err
		}
	}
	return nil
}

// interrupt implements turn/interrupt: {} then idle, turn/completed
// interrupted, then serverRequest/resolved for every request cleaned up.
func (t *thread) interrupt(turnID string, reply Reply) {
	tr := t.turn
	if tr == nil {
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "no active turn to interrupt"))
		return
	}
	if turnID != tr.id {
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "expected active turn id `%s` but found `%s`", turnID, tr.id))
		return
	}
	reply(protocol.Empty{}, nil)
	t.finishInterrupted()
}

func (t *thread) finishInterrupted() {
	if tr := t.turn; tr != nil {
		t.completeTurn(tr, protocol.TurnInterrupted, nil)
	}
}

// abandonTurn runs when the thread goroutine stops (apserver shutting down):
// the turn is recorded as interrupted; the client is gone, so nothing is sent.
func (t *thread) abandonTurn() {
	tr := t.turn
	if tr == nil {
		return
	}
	tr.cancel()
	t.turn = nil
	if t.persistent() {
		if db, err := t.m.store(); err == nil {
			now := t.m.clock.Now()
			_ = db.FinishTurn(context.Background(), store.Turn{ThreadID: t.id, ID: tr.id, Seq: tr.seq, Status: store.StatusInterrupted,
				StartedAt: tr.started.UnixMilli(), CompletedAt: now.UnixMilli(), DurationMs: now.Sub(tr.started).Milliseconds()})
		}
	}
}

// userInput is a client's input for a turn and the id the client gave
// its message (clientUserMessageId), which the userMessage item carries
// as clientId so that the client can match it to what it showed.
type userInput struct {
	content  []protocol.UserInput
	clientID *string
}

// userMessage records user input as a userMessage item.
func (t *thread) userMessage(tr *turn, u userInput) error {
	t.compactStreak = 0 // real user input; full auto's hidden input is not (compact.go)
	in := u.content
	item := protocol.UserMessageItem{ID: t.uniqueItemID(""), ClientID: u.clientID, Content: in}
	now := t.m.clock.Now()
	t.notify(protocol.NotifyItemStarted, protocol.ItemStartedNotification{Item: item, ThreadID: t.id, TurnID: tr.id, StartedAtMs: now.UnixMilli()})
	images, err := imageinput.Load(in)
	if err != nil {
		return err
	}
	var hist []model.Entry
	text := protocol.InputText(in)
	if text != "" || len(images) > 0 {
		hist = []model.Entry{{Kind: model.EntryUser, Text: text, Images: images}}
	}
	tooBig := t.messageTooBig(tr, len(text)) // compact.go
	if tooBig != nil {
		// The item is the user's and is kept; the model never gets it,
		// so the thread stays usable for a smaller message.
		hist = nil
	}
	if err := t.commitItem(tr, item, hist); err != nil {
		return err
	}
	return tooBig
}

// uniqueItemID returns candidate if it is unused in this thread, else a fresh id.
func (t *thread) uniqueItemID(candidate string) string {
	if candidate == "" || t.itemIDs[candidate] || t.storedItemID(candidate) {
		candidate = uuid.NewV7()
	}
	t.itemIDs[candidate] = true
	return candidate
}

// storedItemID reports whether a persistent thread's store already holds
// an item with this id (the thread keeps in memory only the ids since its
// latest compaction; see readHistory). A store error counts as taken.
func (t *thread) storedItemID(id string) bool {
	if !t.persistent() {
		return false
	}
	db, err := t.m.store()
	if err != nil {
		return true
	}
	ok, err := db.ItemExists(t.ctx, t.id, id)
	return ok || err != nil
}

// commitItem stores a completed item (committed before it is announced),
// extends the model history and sends item/completed.
func (t *thread) commitItem(tr *turn, item protocol.ThreadItem, hist []model.Entry) error {
	now := t.m.clock.Now()
	hist = t.budgetOutputs(tr, item, hist) // tooloutput.go
	if t.persistent() {
		raw, enc, err := turnwire.Encode(item)
		if err != nil {
			return fmt.Errorf("encoding item %s: %w", item.ItemID(), err)
		}
		var h json.RawMessage
		if len(hist) > 0 {
			h, _ = protocol.Marshal(hist) // one allocation of its size (largejson.go)
		}
		db, err := t.m.store()
		if err == nil {
			_, err = db.AppendItem(tr.ctx, store.Item{ThreadID: t.id, TurnID: tr.id, ID: item.ItemID(), Type: item.ItemType(), Item: raw, Encoding: enc, History: h, CompletedAt: now.UnixMilli()})
		}
		if err != nil {
			return fmt.Errorf("storing item %s: %w", item.ItemID(), err)
		}
	}
	t.history = append(t.history, hist...)
	tr.items = append(tr.items, item)
	if am, ok := item.(protocol.AgentMessageItem); ok {
		tr.lastAgent = &am
	}
	t.notify(protocol.NotifyItemCompleted, protocol.ItemCompletedNotification{Item: item, ThreadID: t.id, TurnID: tr.id, CompletedAtMs: now.UnixMilli()})
	return nil
}

// postEvent queues an event from a child goroutine; it is dropped if the
// child's context ended first (its events would be stale anyway).
func (t *thread) postEvent(ctx context.Context, f func()) {
	select {
	case t.inbox <- f:
	case <-ctx.Done():
	case <-t.done:
	}
}

// sample starts one model request for the turn.
func (t *thread) sample(tr *turn) {
	if t.mcpStartup(tr, func() { t.sample(tr) }) { // MCP servers start first (mcptools.go)
		return
	}
	tr.gen++
	gen := tr.gen
	tr.inStep = false
	ctx, cancel := context.WithCancel(tr.ctx)
	tr.streamCancel = cancel
	tr.sampling = true
	req := model.Request{
		Model:             tr.modelName,
		Instructions:      tr.prompt,
		Input:             append([]model.Entry(nil), t.history...),
		Tools:             t.agentTools(),
		ReasoningEffort:   t.settings.Effort,
		ReasoningSummary:  t.settings.Summary,
		ServiceTier:       turnwire.RequestTier(t.settings.ServiceTier),
		ParallelToolCalls: true,
		OutputSchema:      tr.schema,
	}
	client := tr.client
	go func() {
		defer t.childRecover(ctx, tr) // a panic fails the turn (panics.go)
		panicPoint("sampling", t.id)
		err := t.m.sched.Stream(ctx, client, req, func(ev model.Event) { // capped across threads (internal/modelsched)
			t.events.Push(ctx, modelEvent{Turn: tr, Gen: gen, Ev: ev})
		})
		t.events.Push(ctx, modelEvent{Turn: tr, Gen: gen, Done: true, Err: err})
	}()
}

func (t *thread) current(tr *turn, gen int) bool {
	return t.turn == tr && tr.gen == gen && tr.sampling
}

func (t *thread) onModelEvent(tr *turn, gen int, ev model.Event) {
	if !t.current(tr, gen) {
		return
	}
	if !t.countOutput(tr, ev) {
		return
	}
	switch ev.Kind {
	case model.EvTextDelta:
		if tr.reasoning != nil {
			if !t.completeReasoning(tr) {
				return
			}
		}
		if tr.msg != nil && ev.ItemID != "" && tr.msgModelID != "" && ev.ItemID != tr.msgModelID {
			if !t.completeMessage(tr, "") {
				return
			}
		}
		if tr.msg == nil {
			t.startMessage(tr, ev.ItemID)
		}
		tr.msgText.WriteString(ev.Text)
		t.notify(protocol.NotifyAgentMessageDelta, protocol.DeltaNotification{ThreadID: t.id, TurnID: tr.id, ItemID: tr.msg.ID, Delta: ev.Text})
	case model.EvMessageDone:
		if tr.msg == nil {
			if ev.Text == "" {
				return
			}
			t.startMessage(tr, ev.ItemID)
		}
		t.completeMessage(tr, ev.Text)
	case model.EvReasoningPartAdded:
		t.startReasoning(tr, ev.ItemID)
		for len(tr.reasoning.Summary) <= ev.Index {
			tr.reasoning.Summary = append(tr.reasoning.Summary, "")
		}
		t.notify(protocol.NotifyReasoningSummaryPart, protocol.ReasoningSummaryPartAddedNotification{ThreadID: t.id, TurnID: tr.id, ItemID: tr.reasoning.ID, SummaryIndex: ev.Index})
	case model.EvReasoningSummaryDelta:
		t.startReasoning(tr, ev.ItemID)
		for len(tr.reasoning.Summary) <= ev.Index {
			tr.reasoning.Summary = append(tr.reasoning.Summary, "")
		}
		tr.reasonParts.Part(0, ev.Index).WriteString(ev.Text)
		t.notify(protocol.NotifyReasoningSummaryDelta, protocol.ReasoningSummaryDeltaNotification{ThreadID: t.id, TurnID: tr.id, ItemID: tr.reasoning.ID, Delta: ev.Text, SummaryIndex: ev.Index})
	case model.EvReasoningTextDelta:
		t.startReasoning(tr, ev.ItemID)
		for len(tr.reasoning.Content) <= ev.Index {
			tr.reasoning.Content = append(tr.reasoning.Content, "")
		}
		tr.reasonParts.Part(1, ev.Index).WriteString(ev.Text)
		t.notify(protocol.NotifyReasoningTextDelta, protocol.ReasoningTextDeltaNotification{ThreadID: t.id, TurnID: tr.id, ItemID: tr.reasoning.ID, Delta: ev.Text, ContentIndex: ev.Index})
	case model.EvReasoningDone:
		if tr.reasoning == nil && len(ev.Summary) == 0 && len(ev.Content) == 0 {
			return
		}
		t.startReasoning(tr, ev.ItemID)
		if len(ev.Summary) > 0 { // the final event's parts are the whole text
			tr.reasoning.Summary = ev.Summary
			tr.reasonParts.Drop(0)
		}
		if len(ev.Content) > 0 {
			tr.reasoning.Content = ev.Content
			tr.reasonParts.Drop(1)
		}
		t.completeReasoning(tr)
	case model.EvToolCall:
		if !t.flushInFlight(tr) {
			return
		}
		tr.calls = append(tr.calls, ev.Call)
	case model.EvRetry:
		msg := fmt.Sprintf("Reconnecting... attempt %d", ev.Attempt)
		if ev.Err != nil {
			msg = fmt.Sprintf("Reconnecting... attempt %d: %v", ev.Attempt, ev.Err)
		}
		t.notify(protocol.NotifyError, protocol.ErrorNotification{Error: turnwire.ErrorFrom(ev.Err, msg), WillRetry: true, ThreadID: t.id, TurnID: tr.id})
	case model.EvCompleted:
		if !t.flushInFlight(tr) {
			return
		}
		last := turnwire.Usage(ev.Usage)
		t.usage.Add(last)
		t.lastUsage = usageMark{valid: true, tokens: last.InputTokens + last.OutputTokens, histLen: len(t.history)}
		t.notify(protocol.NotifyThreadTokenUsage, protocol.ThreadTokenUsageUpdatedNotification{
			ThreadID: t.id, TurnID: tr.id,
			TokenUsage: protocol.ThreadTokenUsage{Total: t.usage, Last: last, ModelContextWindow: t.contextWindow(tr)},
		})
		// The port's streams hear the usage with the model that answered
		// (a run counts its tokens and cost: the manager's budgets).
		t.m.watchers.publish(port.UsageReported{ThreadID: t.id, TurnID: tr.id, Model: tr.modelName, Usage: last})
		t.responseUsage(tr, last) // full auto: spent tokens, goal progress (fullauto_turn.go)
		tr.sampling = false
		t.afterResponse(tr)
	}
}

func (t *thread) contextWindow(tr *turn) *int64 {
	if w, _ := t.turnLimits(tr); w > 0 { // configured, built in, or learned from a refusal
		return ptr(w)
	}
	return nil
}

// flushInFlight completes a reasoning item or agent message still open.
func (t *thread) flushInFlight(tr *turn) bool {
	if tr.reasoning != nil && !t.completeReasoning(tr) {
		return false
	}
	if tr.msg != nil && !t.completeMessage(tr, "") {
		return false
	}
	return true
}

func (t *thread) startMessage(tr *turn, modelID string) {
	tr.msgModelID = modelID
	tr.msg = &protocol.AgentMessageItem{ID: t.uniqueItemID(modelID)}
	tr.msgText.Reset()
	tr.msgStarted = t.m.clock.Now()
	t.notify(protocol.NotifyItemStarted, protocol.ItemStartedNotification{Item: *tr.msg, ThreadID: t.id, TurnID: tr.id, StartedAtMs: tr.msgStarted.UnixMilli()})
}

// completeMessage commits the agent message in flight; text, when given, is
// the authoritative full text.
func (t *thread) completeMessage(tr *turn, text string) bool {
	item := *tr.msg
	item.Text = tr.msgText.Take()
	if text != "" {
		item.Text = text
	}
	tr.msg = nil
	if err := t.commitItem(tr, item, []model.Entry{{Kind: model.EntryAssistant, Text: item.Text}}); err != nil {
		t.failTurn(tr, err)
		return false
	}
	return true
}

func (t *thread) startReasoning(tr *turn, modelID string) {
	if tr.reasoning != nil {
		return
	}
	tr.reasonModel = modelID
	tr.reasoning = &protocol.ReasoningItem{ID: t.uniqueItemID(modelID), Summary: []string{}, Content: []string{}}
	tr.reasonParts.Reset()
	t.notify(protocol.NotifyItemStarted, protocol.ItemStartedNotification{Item: *tr.reasoning, ThreadID: t.id, TurnID: tr.id, StartedAtMs: t.nowMs()})
}

func (t *thread) completeReasoning(tr *turn) bool {
	item := tr.reasonParts.Item(*tr.reasoning)
	tr.reasoning = nil
	if err := t.commitItem(tr, item, nil); err != nil {
		t.failTurn(tr, err)
		return false
	}
	return true
}

func (t *thread) onModelDone(tr *turn, gen int, err error) {
	if !t.current(tr, gen) {
		return
	}
	if err == nil {
		// The stream ended without a completion event: treat what we have
		// as the response.
		if !t.flushInFlight(tr) {
			return
		}
		tr.sampling = false
		t.afterResponse(tr)
		return
	}
	if errors.Is(err, context.Canceled) && tr.ctx.Err() != nil {
		return
	}
	if t.compactOnOverflow(tr, err) {
		return
	}
	t.failTurn(tr, err)
}

// afterResponse decides what follows a model response: run its tool calls,
// feed steered input, or finish the turn.
func (t *thread) afterResponse(tr *turn) {
	tr.overflowCompacted = false
	if len(tr.calls) > 0 {
		tr.stepStart, tr.inStep = len(t.history), true
		t.runNextCall(tr)
		return
	}
	if len(tr.pendingInput) > 0 {
		if err := t.consumePendingInput(tr); err != nil {
			t.failTurn(tr, err)
			return
		}
		t.sampleNext(tr)
		return
	}
	t.sendTurnDiff(tr, true, func() {
		if len(tr.pendingInput) > 0 {
			// Steered while the final diff was computed: go on instead.
			t.afterCalls(tr)
			return
		}
		tr.endRecorded = true
		t.completeTurn(tr, protocol.TurnCompleted, nil)
	})
}

// afterCalls runs once every tool call of a response has its result: the
// model is asked again, with any steered input.
func (t *thread) afterCalls(tr *turn) {
	if err := t.consumePendingInput(tr); err != nil {
		t.failTurn(tr, err)
		return
	}
	t.sampleNext(tr) // mid-turn compaction check (compact.go)
}

// failTurn ends the turn as failed: systemError, error, turn/completed.
func (t *thread) failTurn(tr *turn, err error) {
	if t.turn != tr {
		return
	}
	t.m.log.Error("turn failed", "thread", t.id, "turn", tr.id, "err", err)
	te := turnwire.ErrorFrom(err, "")
	t.completeTurn(tr, protocol.TurnFailed, &te)
}

// completeTurn ends the turn with the given status, in Codex's order.
func (t *thread) completeTurn(tr *turn, status protocol.TurnStatus, te *protocol.TurnError) {
	if status == protocol.TurnCompleted && !t.finishModeTurn(tr) { // planmode.go
		return
	}
	if status == protocol.TurnFailed {
		t.closeOpenItems(tr)
	}
	for _, tm := range []Timer{tr.limit, tr.deadline} {
		if tm != nil {
			tm.Stop()
		}
	}
	t.endCheckpointAsync(tr)
	tr.cancel()
	t.turn = nil
	if len(tr.plan) > 0 {
		t.lastPlan = tr.plan // pinned by the next compaction (compact.go)
	}
	now := t.m.clock.Now()
	dur := now.Sub(tr.started).Milliseconds()
	if t.persistent() {
		if db, err := t.m.store(); err == nil {
			var errJSON json.RawMessage
			if te != nil {
				errJSON, _ = json.Marshal(te)
			}
			if err := db.FinishTurn(context.Background(), store.Turn{ThreadID: t.id, ID: tr.id, Seq: tr.seq, Status: string(status), Error: errJSON,
				StartedAt: tr.started.UnixMilli(), CompletedAt: now.UnixMilli(), DurationMs: dur}); err != nil {
				t.m.log.Error("recording turn end", "thread", t.id, "turn", tr.id, "err", err)
			}
		}
	} else {
		done := tr.wire(protocol.ItemsFull)
		done.Status = status
		t.turns = append(t.turns, done)
	}
	w := protocol.Turn{ID: tr.id, Items: []protocol.ThreadItem{}, Status: status, Error: te,
		StartedAt: ptr(tr.started.Unix()), CompletedAt: ptr(now.Unix()), DurationMs: ptr(dur)}
	switch status {
	case protocol.TurnCompleted:
		w.ItemsView = protocol.ItemsSummary
		if tr.lastAgent != nil {
			w.Items = append(w.Items, *tr.lastAgent)
		}
		t.setStatus(protocol.ThreadStatus{Type: protocol.StatusIdle})
	case protocol.TurnFailed:
		w.ItemsView = protocol.ItemsSummary
		t.setStatus(protocol.ThreadStatus{Type: protocol.StatusSystemError})
		t.notify(protocol.NotifyError, protocol.ErrorNotification{Error: *te, WillRetry: false, ThreadID: t.id, TurnID: tr.id})
	default:
		w.ItemsView = protocol.ItemsNotLoaded
		t.setStatus(protocol.ThreadStatus{Type: protocol.StatusIdle})
	}
	t.notify(protocol.NotifyTurnCompleted, protocol.TurnNotification{ThreadID: t.id, Turn: w})
	for _, id := range tr.requests {
		t.notify(protocol.NotifyServerRequestResolved, protocol.ServerRequestResolvedNotification{ThreadID: t.id, RequestID: id})
	}
	tr.requests = nil
	t.turnEnded(tr, string(status), te) // full auto takes the plain string
	t.summarizeIdle()                   // the project's summary of the thread (brainhook.go)
}

// execLimits bound commands.
const (
	defaultCommandTimeout = 2 * time.Minute
	maxCommandTimeout     = 30 * time.Minute
)

// countOutput adds a model event's output to the turn's total and fails
// the turn once it passes Config.TurnMaxOutputBytes; false means the turn
// ended.
func (t *thread) countOutput(tr *turn, ev model.Event) bool {
	switch ev.Kind {
	case model.EvTextDelta, model.EvReasoningSummaryDelta, model.EvReasoningTextDelta:
		tr.outBytes += int64(len(ev.Text))
	case model.EvToolCall:
		tr.outBytes += int64(len(ev.Call.Arguments))
	default:
		return true
	}
	limit := t.m.opts.Config.TurnMaxOutputBytes
	if limit <= 0 || tr.outBytes <= limit {
		return true
	}
	tr.streamCancel()
	t.failTurn(tr, &turnwire.LimitError{What: fmt.Sprintf("the turn's model output passed %d bytes", limit), Key: "turn_max_output_bytes"})
	return false
}

func (tr *turn) dropOpen(id string) {
	for i, it := range tr.open {
		if it.ItemID() == id {
			tr.open = append(tr.open[:i], tr.open[i+1:]...)
			return
		}
	}
}

// closeOpenItems completes, before a failed turn's turn/completed, every
// item it started and did not complete: an agent message or reasoning
// with what was received so far, a tool item as failed. Partial model
// output is kept out of the model's history: the next turn must not
// inherit a runaway response.
func (t *thread) closeOpenItems(tr *turn) {
	open := tr.open
	tr.open = nil
	for _, it := range open {
		switch item := it.(type) {
		case protocol.AgentMessageItem:
			if tr.msg != nil && tr.msg.ID == item.ID {
				item.Text = tr.msgText.Take()
				tr.msg = nil
			}
			it = item
		case protocol.ReasoningItem:
			if tr.reasoning != nil && tr.reasoning.ID == item.ID {
				item = tr.reasonParts.Item(*tr.reasoning)
				tr.reasoning = nil
			}
			it = item
		default:
			var ok bool
			if it, ok = turnwire.Failed(it); !ok {
				continue // nothing was compacted: the item stays open
			}
		}
		if err := t.commitItem(tr, it, nil); err != nil {
			// The client still learns the item is over.
			t.m.log.Error("closing an item of a failed turn", "thread", t.id, "turn", tr.id, "item", it.ItemID(), "err", err)
			t.notify(protocol.NotifyItemCompleted, protocol.ItemCompletedNotification{Item: it, ThreadID: t.id, TurnID: tr.id, CompletedAtMs: t.nowMs()})
		}
	}
}
