package fullauto

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/protocol"
)

// Options are what a thread's machine knows of its surroundings. They are
// fixed for the machine's life.
type Options struct {
	ThreadID string `json:"threadId"`
	// Ephemeral: the thread has no store and no goals; the machine numbers
	// its receipts (Drive.Seq) and emits no SaveDrive.
	Ephemeral bool `json:"ephemeral,omitempty"`
	// DecisionModel: a decision model is configured.
	DecisionModel bool `json:"decisionModel,omitempty"`
	// QuestionMinConfidence: the decision model's answers to approvals and
	// questions count only at this confidence or above.
	QuestionMinConfidence float64 `json:"questionMinConfidence,omitempty"`
	// ErrorBackoffMs is the cooldown before retrying a failed turn
	// (Backoff).
	ErrorBackoffMs int64 `json:"errorBackoffMs,omitempty"`
	// ApprovalTimeoutMs is fullAuto/start's default approvalTimeoutMs.
	ApprovalTimeoutMs int64 `json:"approvalTimeoutMs,omitempty"`
	// OnRestartPaused: a drive that was going when apserver stopped waits
	// paused instead of going on.
	OnRestartPaused bool `json:"onRestartPaused,omitempty"`
}

// Machine is one thread's full-auto state machine. It is not safe for
// concurrent use: the thread goroutine owns it. Every method takes the
// time (unix ms) and returns the effects its driver must apply in order.
type Machine struct {
	opts  Options
	drive *Drive
	// since is when the drive last became running or waiting (accruing);
	// Spent.TimeMs grows by the time since.
	since    int64
	accruing bool
	// epoch changes whenever the drive changes state, so that answers to
	// delayed work (a backoff timer, a fingerprint, a decision model
	// question) can tell they are stale.
	epoch int
	// turnID is the running turn ("" when idle); cur is what the drive
	// collects about it.
	turnID string
	cur    *turnAcc
	// deciding is the input of the decision under way (between TurnEnded
	// and ReceiptStored); delayed is the turn a StartTurn timer will start.
	deciding *controller.Input
	delayed  *TurnInput
	await    *awaitReceipt
	// pending are requests forwarded to a human, by id.
	pending map[int64]pending
	// forwarded is the request RequestAsked last passed on, and modelAsked
	// the requests the decision model was asked about: the driver consults
	// the machine again for a request it already let through.
	forwarded  string
	modelAsked map[string]bool

	// log is the drive's events (Apply); installed says the event being
	// applied installed a new drive.
	log       Log
	installed bool

	out []Effect
}

type turnAcc struct {
	id, kind string
	usage    controller.Usage
	// ratio is the context's share of the window after the turn's last
	// compaction (Compacted).
	ratio    float64
	timeouts int
}

type pending struct {
	turnID, kind, prefix string
}

type awaitReceipt struct {
	rec      controller.Receipt
	action   controller.Action
	executed bool
}

// New makes a thread's machine, with no drive.
func New(opts Options) *Machine {
	return &Machine{opts: opts, pending: map[int64]pending{}}
}

// Drive is the current drive, or nil. The caller must not change it.
func (m *Machine) Drive() *Drive { return m.drive }

// Token identifies the drive's current state for delayed work (see Carry).
func (m *Machine) Token() int { return m.epoch }

// Wire renders the drive for the client (nil drive: the zero value).
func (m *Machine) Wire(now int64) protocol.FullAutoRun {
	if m.drive == nil {
		return protocol.FullAutoRun{}
	}
	return WireDrive(m.opts.ThreadID, m.drive, m.extra(now))
}

// Goal renders the drive as a Codex goal.
func (m *Machine) Goal(now int64) protocol.ThreadGoal {
	return WireGoal(m.opts.ThreadID, m.drive, m.extra(now))
}

func (m *Machine) extra(now int64) int64 {
	if !m.accruing {
		return 0
	}
	return now - m.since
}

func (m *Machine) emit(e ...Effect) { m.out = append(m.out, e...) }

func (m *Machine) take() []Effect {
	out := m.out
	m.out = nil
	return out
}

// ---- drive lifecycle ----

// errors of the fullAuto/* and thread/goal/* methods.
func errDriveActive(id string) error {
	return protocol.Errorf(protocol.ErrInvalidRequest, "full auto is already running on thread %s; stop it first", id)
}

func errNoDrive(id string) error {
	return protocol.Errorf(protocol.ErrInvalidRequest, "no full-auto run on thread %s", id)
}

func errStopped(id string) error {
	return protocol.Errorf(protocol.ErrInvalidRequest, "the full-auto run on thread %s has stopped; start a new one", id)
}

func goalErr(format string, args ...any) error {
	return protocol.Errorf(protocol.ErrInvalidRequest, format, args...)
}

// onStart is fullAuto/start. preview is the thread's first message, the
// objective when none is given.
func (m *Machine) onStart(now int64, p protocol.FullAutoStartParams, preview string) ([]Effect, error) {
	if m.drive.Active() {
		return nil, errDriveActive(m.opts.ThreadID)
	}
	objective := ""
	if p.Objective != nil {
		objective = strings.TrimSpace(*p.Objective)
	}
	idle := m.turnID == ""
	firstTurn := objective != "" && idle
	if objective == "" {
		objective = preview
	}
	if objective == "" && idle {
		return nil, protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: objective is required on a thread with no messages")
	}
	r := newDrive(objective, now)
	r.Config.Budgets = BudgetsFrom(p.Budgets)
	if p.Approvals != nil {
		r.Approvals = controller.ApprovalStrategy(*p.Approvals)
	}
	if p.Review != nil {
		r.Config.ReviewOnDone = *p.Review
	}
	r.ApprovalTimeoutMs = m.opts.ApprovalTimeoutMs
	if p.ApprovalTimeoutMs != nil {
		r.ApprovalTimeoutMs = *p.ApprovalTimeoutMs
	}
	if p.OnApprovalTimeout != nil {
		r.OnTimeout = *p.OnApprovalTimeout
	}
	m.install(now, r)
	m.announce(now)
	switch {
	case firstTurn:
		m.startTurn(TurnInput{Kind: controller.KindNormal, Text: objective})
	case idle:
		m.startTurn(TurnInput{Kind: controller.KindNormal, Hidden: ContinueText(objective)})
	}
	// A turn already running is decided on when it ends.
	return m.take(), nil
}

// install makes r the drive, replacing any earlier one.
func (m *Machine) install(now int64, r *Drive) {
	m.drive = r
	m.installed = true
	m.epoch++
	m.since, m.accruing = now, true
	m.emit(ClearAttention{})
	m.save()
}

func (m *Machine) announce(now int64) {
	run := m.Wire(now)
	m.emit(Notify{protocol.NotifyFullAutoStatusChanged, protocol.FullAutoStatusChangedNotification{
		ThreadID: m.opts.ThreadID, State: run.State, Reason: run.Reason, Run: run,
	}})
	m.goalChanged(now, nil)
}

// onPause is fullAuto/pause: no new turn starts; a running turn finishes and
// its decision is dropped.
func (m *Machine) onPause(now int64) []Effect {
	if m.drive.Active() {
		m.setState(now, protocol.FullAutoPaused, "paused by the user", controller.StopNone)
	}
	return m.take()
}

// onResume is fullAuto/resume: a paused drive goes on; on an idle thread a
// turn starts.
func (m *Machine) onResume(now int64) ([]Effect, error) {
	r := m.drive
	if r.State == protocol.FullAutoStopped {
		return nil, errStopped(m.opts.ThreadID)
	}
	m.resume(now, "resumed by the user")
	m.startTurn(TurnInput{Kind: controller.KindNormal, Hidden: ContinueText(r.Objective)})
	return m.take(), nil
}

func (m *Machine) resume(now int64, reason string) {
	if r := m.drive; r.State != protocol.FullAutoRunning {
		r.Retries = 0
		m.setState(now, protocol.FullAutoRunning, reason, controller.StopNone)
	}
}

// onStop is fullAuto/stop: the drive ends with userStop at once (a decision
// receipt records it) and a running turn is interrupted.
func (m *Machine) onStop(now int64) []Effect {
	if r := m.drive; r.State != protocol.FullAutoStopped {
		in := controller.Input{
			Objective: r.Objective, Config: r.Config, Spent: r.Spent, RunElapsedMs: now - r.StartedAtMs,
			History: slices.Clone(r.History), Recent: slices.Clone(r.Recent),
			UserStop: true,
		}
		if n := len(in.History); n > 0 {
			in.Turn, in.History = in.History[n-1], in.History[:n-1]
		}
		m.execute(now, in, controller.Decide(in))
	}
	if m.turnID != "" {
		m.emit(Interrupt{})
	}
	return m.take()
}

// setState changes the drive's state, stores it and tells the client
// (fullAuto/statusChanged, the goal view, attention).
func (m *Machine) setState(now int64, st protocol.FullAutoState, reason string, cond controller.StopCondition) {
	r := m.drive
	if r == nil {
		return
	}
	m.accrue(now)
	was := r.State
	r.State, r.Reason, r.Stop = st, reason, cond
	if r.Active() && !m.accruing {
		m.since, m.accruing = now, true
	}
	if !r.Active() {
		m.accruing = false
	}
	m.epoch++
	m.save()
	if st == protocol.FullAutoPaused {
		m.emit(SetAttention{Reason: reason, SinceMs: now})
	} else if was == protocol.FullAutoPaused {
		m.emit(ClearAttention{})
	}
	run := m.Wire(now)
	m.emit(Notify{protocol.NotifyFullAutoStatusChanged, protocol.FullAutoStatusChangedNotification{
		ThreadID: m.opts.ThreadID, State: st, Reason: run.Reason, Run: run,
	}})
	m.goalChanged(now, nil)
}

// accrue adds the time the drive was active since m.since to Spent.
func (m *Machine) accrue(now int64) {
	r := m.drive
	if r == nil || !m.accruing {
		return
	}
	r.Spent.TimeMs += now - m.since
	if r.Active() {
		m.since = now
	} else {
		m.accruing = false
	}
}

func (m *Machine) save() {
	if m.drive == nil || m.opts.Ephemeral {
		return
	}
	b, err := json.Marshal(m.drive)
	if err != nil {
		return // a Run always encodes (no NaN reaches it)
	}
	m.emit(SaveDrive{State: string(m.drive.State), Data: b})
}

// goalChanged sends thread/goal/updated (turnID: the turn it happened in).
func (m *Machine) goalChanged(now int64, turnID *string) {
	r := m.drive
	if r == nil || m.opts.Ephemeral {
		return
	}
	r.GoalUpdatedAt = now / 1000
	m.emit(Notify{protocol.NotifyThreadGoalUpdated, protocol.ThreadGoalUpdatedNotification{
		ThreadID: m.opts.ThreadID, TurnID: turnID, Goal: m.Goal(now),
	}})
}

// startTurn starts a turn for the drive when the thread is idle.
func (m *Machine) startTurn(in TurnInput) {
	r := m.drive
	if m.turnID != "" || !r.Active() {
		return
	}
	r.LastKind = in.Kind
	if in.Hidden != "" {
		in.Hidden = WrapHidden(r, in.Hidden)
	}
	m.emit(StartTurn{Input: in})
}

// startTurnAfter starts a turn after delayMs (a cooldown after a failure),
// unless the drive changed meanwhile (TimerFired).
func (m *Machine) startTurnAfter(in TurnInput, delayMs int64) {
	if delayMs <= 0 {
		m.startTurn(in)
		return
	}
	m.delayed = &in
	m.emit(StartTurn{DelayMs: delayMs, Token: m.epoch})
}

// onTimerFired: the delay of a StartTurn with Token is over.
func (m *Machine) onTimerFired(now int64, token int) []Effect {
	if token == m.epoch && m.delayed != nil {
		in := *m.delayed
		m.delayed = nil
		m.startTurn(in)
	}
	return m.take()
}

// onTurnStartFailed: the driver could not start the turn of a StartTurn.
func (m *Machine) onTurnStartFailed(now int64, msg string) []Effect {
	m.setState(now, protocol.FullAutoPaused, "could not start a turn: "+msg, controller.StopWaitingOnHuman)
	return m.take()
}

// onCarry starts a turn with in if the drive is still in the state Token
// returned (a turn that carries a drive on after a restart).
func (m *Machine) onCarry(now int64, token int, in TurnInput) []Effect {
	if token == m.epoch {
		m.startTurn(in)
	}
	return m.take()
}

// ---- turns ----

// onTurnStarted: a turn began (any turn: a client's or the drive's); kind is
// its TurnInput's, "" for a client's. Under a time budget the turn gets a
// deadline (TurnDeadline): the budget is enforced during the turn, not
// only after it. A wrap-up turn (the soft landing the controller grants as
// a budget runs out) gets none: it is left to finish its handoff, bounded
// by the session's turn caps (turn_max_time_ms).
func (m *Machine) onTurnStarted(now int64, turnID, kind string) []Effect {
	if kind == "" {
		kind = controller.KindNormal
	}
	m.turnID = turnID
	m.cur = &turnAcc{id: turnID, kind: kind}
	r := m.drive
	if !r.Active() || r.Config.Budgets.TimeMs <= 0 || kind == controller.KindWrapUp {
		return nil
	}
	spent := r.Spent.TimeMs + m.extra(now)
	// +1: the deadline falls just past the budget, so the decision after
	// the interrupt finds it spent.
	return []Effect{TurnDeadline{TurnID: turnID, DelayMs: max(0, r.Config.Budgets.TimeMs-spent) + 1}}
}

// onDeadlineReached: the TurnDeadline of turnID is over. If the turn still
// runs under an active drive it is interrupted; the decision after it finds
// the time budget spent (budgets come before everything but a user stop)
// and stops the drive, as after any turn.
func (m *Machine) onDeadlineReached(now int64, turnID string) []Effect {
	if m.turnID != turnID || !m.drive.Active() {
		return nil
	}
	return []Effect{Interrupt{}}
}

// onCompacted: the turn compacted its context (an automatic compaction or a
// thread/compact/start turn); ratio is the prompt's share of the model's
// context window after it (0 when the window is unknown). The turn's
// summary carries the latest ratio into the decision and its receipt.
func (m *Machine) onCompacted(now int64, turnID string, ratio float64) []Effect {
	cur := m.cur
	if cur == nil || cur.id != turnID {
		return nil
	}
	cur.ratio = ratio
	r := m.drive
	if !r.Active() {
		return nil
	}
	if ratio >= HandoffRatio {
		r.ContextHigh++
	} else {
		r.ContextHigh = 0
	}
	m.save()
	return m.take()
}

// onHandedOff: the driver carried out a Handoff; the drive continues in
// thread id and stops here.
func (m *Machine) onHandedOff(now int64, id string) []Effect {
	if m.drive == nil {
		return nil
	}
	m.setState(now, protocol.FullAutoStopped, fmt.Sprintf("continued in thread %s: compaction left the context above %.0f%% of the window %d times in a row", id, HandoffRatio*100, HandoffAfter), controller.StopHandoff)
	return m.take()
}

// onAdopt starts, on a fresh thread, the drive that thread from handed off:
// the same objective, strategy, budgets and spending, and a first turn
// whose hidden input is handoff.
func (m *Machine) onAdopt(now int64, from Drive, fromThread, handoff string) []Effect {
	r := newDrive(from.Objective, now)
	r.Approvals, r.Config, r.Spent = from.Approvals, from.Config, from.Spent
	r.ApprovalTimeoutMs, r.OnTimeout = from.ApprovalTimeoutMs, from.OnTimeout
	r.HandedOffFrom = fromThread
	m.install(now, r)
	m.announce(now)
	m.startTurn(TurnInput{Kind: controller.KindNormal, Hidden: handoff})
	return m.take()
}

// Price is a model's price per million tokens.
type Price struct {
	InputPerMTok, CachedInputPerMTok, OutputPerMTok float64
}

// Response is one model response's usage: input (of which cached) and
// output tokens.
type Response struct {
	Input, Cached, Output int64
	// ContextWindow of the model, 0 when unknown.
	ContextWindow int64
	Price         Price
}

// onResponseDone: a model response of the turn completed. The drive counts
// the tokens and cost, and a goal reports its progress.
func (m *Machine) onResponseDone(now int64, turnID string, u Response) []Effect {
	cur := m.cur
	if cur == nil || cur.id != turnID {
		return nil
	}
	cur.usage.Input += u.Input
	cur.usage.Cached += u.Cached
	cur.usage.Output += u.Output
	r := m.drive
	if !r.Active() {
		return nil
	}
	fresh := max(0, u.Input-u.Cached)
	r.Spent.Tokens += fresh + u.Output
	r.Spent.CostUSD += (float64(fresh)*u.Price.InputPerMTok + float64(u.Cached)*u.Price.CachedInputPerMTok + float64(u.Output)*u.Price.OutputPerMTok) / 1e6
	m.goalChanged(now, &turnID)
	return m.take()
}

// TurnEnd is a finished turn as the driver saw it.
type TurnEnd struct {
	// Summary is the turn summed up from its items and history; the
	// machine adds what it counted (kind, usage, context ratio, pending
	// requests, timeouts, the review verdict).
	Summary controller.TurnSummary
	// EndSnapshot is the id of the checkpoint taken at the turn's end
	// (it names the tree's content), "" for none.
	EndSnapshot string
	// NoTools: the turn ran no tool, so the tree is as the turn before
	// left it.
	NoTools bool
	// Replaced: the turn was interrupted to make way for a turn that
	// starts at once (a client's thread/compact/start). It is counted,
	// but not decided on: the decision comes after the turn that
	// replaced it, so a compaction does not pause the drive.
	Replaced bool
}

// onTurnEnded: turn/completed was sent. The drive sums the turn up and asks
// for the workspace fingerprint (Fingerprint), then decides.
func (m *Machine) onTurnEnded(now int64, te TurnEnd) []Effect {
	s := te.Summary
	cur := m.cur
	if cur == nil || cur.id != s.TurnID {
		cur = &turnAcc{id: s.TurnID, kind: controller.KindNormal}
	}
	m.cur, m.turnID = nil, ""
	m.forwarded, m.modelAsked = "", nil
	var approvals, questions int
	for _, id := range slices.Sorted(maps.Keys(m.pending)) {
		if p := m.pending[id]; p.turnID == s.TurnID {
			delete(m.pending, id)
			m.emit(DropPending{Request: id})
			if p.kind == "question" {
				questions++
			} else {
				approvals++
			}
		}
	}
	r := m.drive
	if !r.Active() {
		return m.take()
	}
	m.accrue(now)
	s.Kind = cur.kind
	s.Usage = cur.usage
	if cur.ratio > 0 {
		s.ContextRatio = cur.ratio
	}
	s.PendingApprovals += approvals
	s.PendingQuestions += questions
	s.ApprovalTimeouts += cur.timeouts
	if cur.kind == controller.KindReview && s.ReviewApproved == nil {
		s.ReviewApproved = controller.ReviewVerdict(s.AgentMessage)
	}
	r.Spent.Turns++
	if te.Replaced {
		m.save()
		return m.take()
	}
	retries := 0
	if s.Status == controller.StatusFailed && s.Error != nil && s.Error.Recoverable {
		retries = r.Retries + 1
	}
	in := controller.Input{
		Objective:    r.Objective,
		Config:       r.Config,
		Spent:        r.Spent,
		RunElapsedMs: now - r.StartedAtMs,
		Turn:         s,
		History:      slices.Clone(r.History),
		Recent:       slices.Clone(r.Recent),
		Retries:      retries,
	}
	if r.State == protocol.FullAutoWaiting && len(m.pending) == 0 {
		m.setState(now, protocol.FullAutoRunning, "", controller.StopNone)
	}
	// The tree is usually known already: a turn that ran tools ended with
	// a checkpoint snapshot, whose id names the tree's content, and a turn
	// that ran none left the tree as the previous turn did.
	known := ""
	switch {
	case te.EndSnapshot != "":
		known = "snapshot:" + te.EndSnapshot
	case te.NoTools && len(r.History) > 0:
		known = r.History[len(r.History)-1].WorkspaceFingerprint
	}
	m.deciding = &in
	m.emit(Fingerprint{Known: known, Token: m.epoch})
	return m.take()
}

// onFingerprinted: the workspace fingerprint asked for by Fingerprint. The
// decision model is asked when it has a say (AskModel); otherwise the
// policy decides at once.
func (m *Machine) onFingerprinted(now int64, token int, fp string) []Effect {
	in := m.deciding
	if in == nil || token != m.epoch || m.drive == nil {
		return nil // stopped, paused or replaced meanwhile
	}
	in.Turn.WorkspaceFingerprint = fp
	if m.opts.DecisionModel && ModelHasSay(*in) {
		m.emit(AskModel{Input: *in, Token: token})
		return m.take()
	}
	m.deciding = nil
	m.execute(now, *in, controller.Decide(*in))
	return m.take()
}

// onModelAnswered: the decision model's answer to AskModel (nil when it
// failed: the policy decides).
func (m *Machine) onModelAnswered(now int64, token int, ans *controller.ModelAnswer) []Effect {
	in := m.deciding
	if in == nil || token != m.epoch || m.drive == nil {
		return nil
	}
	m.deciding = nil
	in.Model = ans
	m.execute(now, *in, controller.Decide(*in))
	return m.take()
}

// ModelHasSay: the hard rules leave the decision to the model's answer,
// so the decision model is worth asking.
func ModelHasSay(in controller.Input) bool {
	in.Model = &controller.ModelAnswer{Action: controller.ActPause}
	return controller.Decide(in).Source == controller.SourceModel
}

// DriveContext is what, besides the controller's input, decides how a
// decision is carried out (Resolve). It is stored with the receipt so that
// replay checks the overrides too.
type DriveContext struct {
	Goal        bool               `json:"goal,omitempty"`
	OnTimeout   protocol.OnTimeout `json:"onApprovalTimeout"`
	TurnRunning bool               `json:"turnRunning,omitempty"`
	// ContextHigh is Drive.ContextHigh when the decision was made.
	ContextHigh int `json:"contextHigh,omitempty"`
}

// DecisionInput is the stored input of a decision receipt: the
// controller's input and the drive's context.
type DecisionInput struct {
	controller.Input
	Drive *DriveContext `json:"run,omitempty"`
}

// Resolve says how a decision is carried out: the action, and when it is
// not carried out as decided, the override.
//
//   - a stop on approvalTimeout under onApprovalTimeout "pause" pauses
//     (OverrideTimeoutMode);
//   - a goal's interrupted turn leaves the goal active without a
//     continuation (OverrideGoalInterrupted);
//   - a continue or review while a client's turn runs: that turn is the
//     next one (OverrideTurnStarted);
//   - a continue after HandoffAfter compactions in a row above
//     HandoffRatio goes on in a fresh thread (OverrideHandoff).
func Resolve(d controller.Decision, c DriveContext) (action controller.Action, executed bool, override string) {
	switch {
	case d.Action == controller.ActStop && d.StopCondition == controller.StopApprovalTimeout && c.OnTimeout != protocol.OnTimeoutStop:
		return controller.ActPause, false, OverrideTimeoutMode
	case c.Goal && d.Rule == controller.RuleInterrupted:
		return controller.ActContinue, false, OverrideGoalInterrupted
	case c.TurnRunning && (d.Action == controller.ActContinue || d.Action == controller.ActReview):
		return d.Action, false, OverrideTurnStarted
	case c.ContextHigh >= HandoffAfter && d.Action == controller.ActContinue:
		return d.Action, true, OverrideHandoff
	}
	return d.Action, true, ""
}

// execute records the decision (StoreReceipt); ReceiptStored carries it
// out.
func (m *Machine) execute(now int64, in controller.Input, d controller.Decision) {
	r := m.drive
	c := DriveContext{Goal: r.Goal, OnTimeout: r.OnTimeout, TurnRunning: m.turnID != "", ContextHigh: r.ContextHigh}
	action, executed, override := Resolve(d, c)
	rec := controller.Receipt{
		ThreadID: m.opts.ThreadID, TurnID: in.Turn.TurnID, Input: in, Output: d,
		PolicyHash: controller.PolicyHash(in.Config), CreatedAtMs: now, Executed: executed, Override: override,
	}
	if !in.UserStop || in.Turn.TurnID != lastTurnID(r.History) {
		r.History = appendCapped(r.History, in.Turn, HistoryTurns)
	}
	r.Recent = appendCapped(r.Recent, d, RecentDecisions)
	r.Retries = in.Retries
	m.await = &awaitReceipt{rec: rec, action: action, executed: executed}
	m.emit(StoreReceipt{
		Kind: ReceiptDecision, TurnID: rec.TurnID, Input: DecisionInput{Input: in, Drive: &c}, Output: d,
		PolicyHash: rec.PolicyHash, Executed: executed, Override: override, Seq: m.ephemeralSeq(), CreatedAtMs: now,
	})
}

func (m *Machine) ephemeralSeq() int {
	if !m.opts.Ephemeral || m.drive == nil {
		return 0
	}
	m.drive.Seq++
	return m.drive.Seq
}

func lastTurnID(h []controller.TurnSummary) string {
	if len(h) == 0 {
		return ""
	}
	return h[len(h)-1].TurnID
}

// onReceiptStored: the decision receipt of the last StoreReceipt was stored
// as id, seq. The decision is announced and carried out.
func (m *Machine) onReceiptStored(now int64, id string, seq int) []Effect {
	a := m.await
	if a == nil {
		return nil
	}
	m.await = nil
	r := m.drive
	rec := a.rec
	rec.ID, rec.Seq = id, seq
	w := WireReceipt(rec)
	r.Last = &w
	m.emit(Notify{protocol.NotifyFullAutoDecision, protocol.FullAutoDecisionNotification{ThreadID: m.opts.ThreadID, TurnID: rec.TurnID, Receipt: w}})
	d, in := rec.Output, rec.Input
	switch a.action {
	case controller.ActContinue, controller.ActReview:
		m.save()
		m.goalChanged(now, nil)
		if !a.executed {
			break
		}
		if rec.Override == OverrideHandoff {
			r.ContextHigh = 0
			m.save()
			m.emit(Handoff{Drive: *r})
			break
		}
		next := TurnInput{Kind: controller.KindNormal, Hidden: d.NextInput}
		switch {
		case a.action == controller.ActReview:
			next.Kind = controller.KindReview
		case d.WrapUp:
			next.Kind = controller.KindWrapUp
		case d.NextInput == "":
			// A retry: the same turn again, with no new input.
			next.Kind = r.LastKind
		}
		var delay int64
		if in.Turn.Status == controller.StatusFailed {
			delay = Backoff(m.opts.ErrorBackoffMs, in.Retries)
		}
		m.startTurnAfter(next, delay)
	case controller.ActPause:
		m.setState(now, protocol.FullAutoPaused, d.Reason, d.StopCondition)
	default:
		m.setState(now, protocol.FullAutoStopped, d.Reason, d.StopCondition)
	}
	return m.take()
}

// ---- goals ----

// onSetGoal is thread/goal/set, with Codex's semantics and error messages.
// The result is the goal to answer with.
func (m *Machine) onSetGoal(now int64, p protocol.ThreadGoalSetParams) (protocol.ThreadGoal, []Effect, error) {
	if m.opts.Ephemeral {
		return protocol.ThreadGoal{}, nil, goalErr("ephemeral thread does not support goals: %s", m.opts.ThreadID)
	}
	if p.Objective != nil && strings.TrimSpace(*p.Objective) == "" {
		return protocol.ThreadGoal{}, nil, goalErr("goal objective must not be empty")
	}
	if v := p.TokenBudget.Value; p.TokenBudget.Present && v != nil && *v <= 0 {
		return protocol.ThreadGoal{}, nil, goalErr("goal budgets must be positive when provided")
	}
	r := m.drive
	startTurn := false
	switch {
	case r == nil && p.Objective == nil:
		return protocol.ThreadGoal{}, nil, goalErr("cannot update goal for thread %s: no goal exists", m.opts.ThreadID)
	case p.Objective != nil && (r == nil || r.State == protocol.FullAutoStopped):
		// A new goal, or one replacing a finished one.
		r = newDrive(strings.TrimSpace(*p.Objective), now)
		r.Goal = true
		r.Approvals = controller.ApproveAsk
		r.GoalCreatedAt = now / 1000
		m.install(now, r)
		startTurn = true
	case p.Objective != nil:
		r.Objective = strings.TrimSpace(*p.Objective)
	}
	if p.TokenBudget.Present {
		r.Config.Budgets.Tokens = 0
		if v := p.TokenBudget.Value; v != nil {
			r.Config.Budgets.Tokens = *v
		}
	}
	if p.Status != nil {
		switch *p.Status {
		case protocol.GoalPaused:
			if r.Active() {
				m.setState(now, protocol.FullAutoPaused, "goal paused", controller.StopNone)
			} else if r.GoalStatus() != protocol.GoalBudgetLimited && r.State == protocol.FullAutoStopped {
				// Budget limits take precedence over a pause; other
				// finished goals just show paused.
				m.setState(now, protocol.FullAutoPaused, "goal paused", controller.StopNone)
			}
			startTurn = false
		case protocol.GoalActive:
			if !r.Active() {
				r.Retries = 0
				m.setState(now, protocol.FullAutoRunning, "goal resumed", controller.StopNone)
			}
			startTurn = true
		case protocol.GoalComplete:
			m.setState(now, protocol.FullAutoStopped, "goal marked complete", controller.StopCompleted)
			startTurn = false
		case protocol.GoalBlocked:
			m.setState(now, protocol.FullAutoStopped, "goal marked blocked", controller.StopWaitingOnHuman)
			startTurn = false
		case protocol.GoalBudgetLimited, protocol.GoalUsageLimited:
			m.setState(now, protocol.FullAutoStopped, "goal marked "+string(*p.Status), controller.StopBudgetTokens)
			startTurn = false
		}
	}
	m.save()
	g := m.Goal(now)
	// The one thread/goal/updated below says it all.
	m.out = slices.DeleteFunc(m.out, func(e Effect) bool {
		n, ok := e.(Notify)
		return ok && n.Method == protocol.NotifyThreadGoalUpdated
	})
	m.goalChanged(now, nil)
	if startTurn {
		m.startTurn(TurnInput{Kind: controller.KindNormal, Hidden: GoalText(r)})
	}
	return g, m.take(), nil
}

// onClearGoal is thread/goal/clear: the drive ends and is forgotten.
func (m *Machine) onClearGoal(now int64) (cleared bool, effects []Effect) {
	if m.drive == nil {
		return false, nil
	}
	m.epoch++
	m.accrue(now)
	m.drive, m.accruing, m.delayed, m.deciding = nil, false, nil, nil
	m.emit(ClearAttention{}, DeleteDrive{})
	m.emit(Notify{protocol.NotifyThreadGoalCleared, protocol.ThreadGoalClearedNotification{ThreadID: m.opts.ThreadID}})
	return true, m.take()
}

// onGoalOnResume syncs a resuming client with the thread's goal, as Codex
// 0.169 does: thread/goal/updated when there is one, thread/goal/cleared
// when there is none.
func (m *Machine) onGoalOnResume(now int64) []Effect {
	if m.opts.Ephemeral {
		return nil
	}
	if m.drive == nil {
		return []Effect{Notify{protocol.NotifyThreadGoalCleared, protocol.ThreadGoalClearedNotification{ThreadID: m.opts.ThreadID}}}
	}
	return []Effect{Notify{protocol.NotifyThreadGoalUpdated, protocol.ThreadGoalUpdatedNotification{ThreadID: m.opts.ThreadID, Goal: m.Goal(now)}}}
}

// ---- approvals ----

// ApprovalInput is the input stored with an approval receipt: what
// controller.Approve was given. apserver replay re-runs it.
type ApprovalInput struct {
	Strategy controller.ApprovalStrategy `json:"strategy"`
	Request  controller.ApprovalRequest  `json:"request"`
	Denials  map[string]int              `json:"denials"`
	// Model is the decision model's answer, when it answered.
	Model json.RawMessage `json:"model,omitempty"`
}

// ApprovalOutput is the output of an approval receipt.
type ApprovalOutput struct {
	controller.ApprovalVerdict
	Source string `json:"source"` // "policy" or "model"
}

// onRequestAsked is rung 1 of the approval ladder: a request the agent needs
// (key names it) is answered by controller.Approve under the drive's
// strategy. outcome is "" when full auto has no say (no active drive, or the
// request was already passed on), else accept, decline or forward.
func (m *Machine) onRequestAsked(now int64, turnID, key string, req controller.ApprovalRequest) (outcome string, effects []Effect) {
	r := m.drive
	if !r.Active() || key == m.forwarded {
		return "", nil
	}
	if req.Prefix == "" {
		req.Prefix = controller.CommandPrefix(req.Command)
	}
	in := ApprovalInput{Strategy: r.Approvals, Request: req, Denials: copyDenials(r.Denials)}
	v := controller.Approve(r.Approvals, req, r.Denials)
	m.emit(StoreReceipt{Kind: ReceiptApproval, TurnID: turnID, Input: in, Output: ApprovalOutput{ApprovalVerdict: v, Source: controller.SourcePolicy},
		Executed: v.Outcome != controller.OutcomeForward, Seq: m.ephemeralSeq(), CreatedAtMs: now})
	if v.Outcome == controller.OutcomeForward {
		m.forwarded = key
	}
	return v.Outcome, m.take()
}

// onModelMayAnswer is rung 2: whether the decision model is asked to answer
// the request (key) the rules passed on. It is not under strategy "ask",
// never for a forbidden command (a human's call) and once per request.
// in is the receipt input to give ModelAnsweredRequest.
func (m *Machine) onModelMayAnswer(key string, req controller.ApprovalRequest) (ok bool, objective string, in ApprovalInput) {
	r := m.drive
	if !r.Active() || !ModelMayAnswerRequest(r.Approvals, req) || !m.opts.DecisionModel || m.modelAsked[key] {
		return false, "", in
	}
	if m.modelAsked == nil {
		m.modelAsked = map[string]bool{}
	}
	m.modelAsked[key] = true
	if req.Prefix == "" {
		req.Prefix = controller.CommandPrefix(req.Command)
	}
	return true, r.Objective, ApprovalInput{Strategy: r.Approvals, Request: req, Denials: copyDenials(r.Denials)}
}

// ModelMayAnswerRequest: under strategy, the decision model may answer req
// (rung 2): never under "ask", and never for a forbidden, privileged or
// escalated command, an opaque one outside the sandbox, or a request only
// a human may approve (HumanOnly), which are a human's call.
func ModelMayAnswerRequest(strategy controller.ApprovalStrategy, req controller.ApprovalRequest) bool {
	return strategy != controller.ApproveAsk && req.RuleDecision != "forbidden" && req.Privileged == "" &&
		req.HumanOnly == "" && !req.Escalated && (req.Opaque == "" || req.Sandboxed)
}

// RequestAnswer is the decision model's answer to an approval or question.
type RequestAnswer struct {
	Outcome    string // accept or decline
	Reason     string
	Confidence float64
	Raw        json.RawMessage // the model's answer, for the receipt
}

// onModelAnsweredRequest: the decision model answered (failed: errMsg). The
// answer counts at QuestionMinConfidence or above; otherwise the request
// goes to the editor after all.
func (m *Machine) onModelAnsweredRequest(now int64, turnID string, in ApprovalInput, ans RequestAnswer, errMsg string) (accepted bool, effects []Effect) {
	in.Model = ans.Raw
	out := ApprovalOutput{Source: controller.SourceModel}
	if errMsg == "" && ans.Confidence >= m.opts.QuestionMinConfidence {
		out.ApprovalVerdict = controller.ApprovalVerdict{Outcome: ans.Outcome, Rule: "model", Reason: ans.Reason}
		m.emit(StoreReceipt{Kind: ReceiptApproval, TurnID: turnID, Input: in, Output: out, Executed: true, Seq: m.ephemeralSeq(), CreatedAtMs: now})
		return true, m.take()
	}
	reason := "decision model unsure: " + ans.Reason
	if errMsg != "" {
		reason = "decision model failed: " + errMsg
	}
	out.ApprovalVerdict = controller.ApprovalVerdict{Outcome: controller.OutcomeForward, Rule: "model.lowConfidence", Reason: reason}
	m.emit(StoreReceipt{Kind: ReceiptApproval, TurnID: turnID, Input: in, Output: out, Seq: m.ephemeralSeq(), CreatedAtMs: now})
	return false, m.take()
}

// onRequestForwarded is rung 3: request id went to the editor. Under an
// active drive it is tracked (the driver stores it for a restart), the drive
// waits, and the wait times out after timeoutMs (0: never).
func (m *Machine) onRequestForwarded(now int64, turnID string, id int64, kind, command, reason string) (tracked bool, timeoutMs int64, effects []Effect) {
	r := m.drive
	if !r.Active() {
		return false, 0, nil
	}
	m.pending[id] = pending{turnID: turnID, kind: kind, prefix: controller.CommandPrefix(command)}
	if r.State == protocol.FullAutoRunning {
		m.setState(now, protocol.FullAutoWaiting, reason, controller.StopNone)
	}
	return true, r.ApprovalTimeoutMs, m.take()
}

// Settled is how a forwarded request ended.
type Settled struct {
	TimedOut bool
	// Declined: a human declined (or cancelled) a command.
	Declined bool
}

// onRequestSettled: a forwarded request was answered or timed out. A human's
// denial counts against the command's prefix.
func (m *Machine) onRequestSettled(now int64, turnID string, id int64, s Settled) []Effect {
	p, ok := m.pending[id]
	if !ok {
		return nil
	}
	delete(m.pending, id)
	m.emit(DropPending{Request: id})
	if s.TimedOut && m.cur != nil && m.cur.id == turnID {
		m.cur.timeouts++
	}
	r := m.drive
	if r == nil {
		return m.take()
	}
	if !s.TimedOut && s.Declined && p.kind == "command" && p.prefix != "" {
		m.deny(p.prefix)
	}
	if r.State == protocol.FullAutoWaiting && len(m.pending) == 0 {
		m.setState(now, protocol.FullAutoRunning, "", controller.StopNone)
	}
	return m.take()
}

func (m *Machine) deny(prefix string) {
	r := m.drive
	if r.Denials == nil {
		r.Denials = map[string]int{}
	}
	r.Denials[prefix]++
	m.save()
}

// ---- restarts ----

// Pending is a request stored before a restart.
type Pending struct {
	ID      int64
	TurnID  string
	Kind    string
	Command string
}

// onRestore brings a drive back after a restart (the thread is idle): requests
// it waited on are sent again (Resend); otherwise it goes on with a new
// turn, or waits paused (Options.OnRestartPaused).
func (m *Machine) onRestore(now int64, pend []Pending) []Effect {
	r := m.drive
	if !r.Active() || m.turnID != "" {
		return nil
	}
	m.since, m.accruing = now, true
	if len(pend) > 0 {
		if r.State != protocol.FullAutoWaiting {
			m.setState(now, protocol.FullAutoWaiting, "waiting on a request sent before the restart", controller.StopNone)
		} else {
			m.announce(now)
		}
		for _, p := range pend {
			m.pending[p.ID] = pending{turnID: p.TurnID, kind: p.Kind, prefix: controller.CommandPrefix(p.Command)}
			m.emit(Resend{Request: p.ID, TimeoutMs: r.ApprovalTimeoutMs})
		}
		return m.take()
	}
	if m.opts.OnRestartPaused {
		m.setState(now, protocol.FullAutoPaused, "apserver restarted", controller.StopWaitingOnHuman)
		return m.take()
	}
	if r.State != protocol.FullAutoRunning {
		m.setState(now, protocol.FullAutoRunning, "apserver restarted", controller.StopNone)
	} else {
		m.announce(now)
	}
	m.startTurn(TurnInput{Kind: controller.KindNormal, Hidden: RestartText(r.Objective)})
	return m.take()
}

// onRequestMoved: a resent request got another id from the client.
func (m *Machine) onRequestMoved(old, id int64) {
	if p, ok := m.pending[old]; ok {
		delete(m.pending, old)
		m.pending[id] = p
	}
}

// onResentAnswered: a request resent after a restart was answered. When
// carry is true the driver carries the drive on in a new turn of kind (Carry
// with Token) that starts with the request's outcome.
func (m *Machine) onResentAnswered(now int64, id int64, s Settled) (carry bool, kind string, effects []Effect) {
	p, ok := m.pending[id]
	if !ok {
		return false, "", nil
	}
	delete(m.pending, id)
	m.emit(DropPending{Request: id})
	r := m.drive
	if !r.Active() {
		return false, "", m.take()
	}
	if s.TimedOut {
		why := "the request sent before the restart was not answered in time"
		if r.OnTimeout == protocol.OnTimeoutStop {
			m.setState(now, protocol.FullAutoStopped, why, controller.StopApprovalTimeout)
		} else {
			m.setState(now, protocol.FullAutoPaused, why, controller.StopApprovalTimeout)
		}
		return false, "", m.take()
	}
	if r.State == protocol.FullAutoWaiting && len(m.pending) == 0 {
		m.setState(now, protocol.FullAutoRunning, "", controller.StopNone)
	}
	if s.Declined && p.kind == "command" {
		m.deny(p.prefix)
	}
	kind = r.LastKind
	if kind == "" {
		kind = controller.KindNormal
	}
	return true, kind, m.take()
}
