package fullauto

import (
	"encoding/json"
	"fmt"

	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/protocol"
)

// Event is what happened to a thread, as its machine learns it: a method
// of the fullAuto/* or thread/goal/* family, a turn's progress, the answer
// to an effect (ReceiptStored, Fingerprinted, ModelAnswered, TimerFired,
// ResentAnswered, …). Apply takes one with the time. Every event encodes
// to JSON (EncodeEvent): the log of a drive's events replays it (Replay).
type Event interface{ kind() string }

// Requests of the fullAuto/* and thread/goal/* methods.
type (
	// Start is fullAuto/start. Preview is the thread's first message, the
	// objective when none is given. Refused when a drive is going.
	Start struct {
		Params  protocol.FullAutoStartParams `json:"params"`
		Preview string                       `json:"preview,omitempty"`
	}
	// Pause is fullAuto/pause: no new turn starts; a running turn
	// finishes and its decision is dropped.
	Pause struct{}
	// Resume is fullAuto/resume: a paused drive goes on; on an idle thread a
	// turn starts. Refused for a stopped drive.
	Resume struct{}
	// Stop is fullAuto/stop: the drive ends with userStop at once (a
	// decision receipt records it) and a running turn is interrupted.
	Stop struct{}
	// SetGoal is thread/goal/set, with Codex's semantics and error
	// messages; answered by GoalAnswer or Refused.
	SetGoal struct {
		Params protocol.ThreadGoalSetParams `json:"params"`
	}
	// ClearGoal is thread/goal/clear: the drive ends and is forgotten;
	// answered by GoalCleared.
	ClearGoal struct{}
	// GoalOnResume syncs a resuming client with the thread's goal, as
	// Codex 0.169 does: thread/goal/updated when there is one,
	// thread/goal/cleared when there is none.
	GoalOnResume struct{}
)

// A turn's progress, and the answers to the machine's effects.
type (
	// TimerFired: the delay of a StartTurn with Token is over.
	TimerFired struct {
		Token int `json:"token"`
	}
	// TurnStartFailed: the driver could not start the turn of a StartTurn.
	TurnStartFailed struct {
		Message string `json:"message"`
	}
	// Carry starts a turn with Input if the drive is still in the state
	// Token names (a turn that carries a drive on after a restart).
	Carry struct {
		Token int       `json:"token"`
		Input TurnInput `json:"input"`
	}
	// TurnStarted: a turn began (any turn: a client's or the drive's); Kind
	// is its TurnInput's, "" for a client's.
	TurnStarted struct {
		TurnID string `json:"turnId"`
		Kind   string `json:"kind,omitempty"`
	}
	// DeadlineReached: the TurnDeadline of TurnID is over.
	DeadlineReached struct {
		TurnID string `json:"turnId"`
	}
	// Compacted: the turn compacted its context; Ratio is the prompt's
	// share of the model's context window after it (0: unknown).
	Compacted struct {
		TurnID string  `json:"turnId"`
		Ratio  float64 `json:"ratio"`
	}
	// HandedOff: the driver carried out a Handoff; the drive continues in
	// thread ThreadID and stops here.
	HandedOff struct {
		ThreadID string `json:"threadId"`
	}
	// Adopt starts, on a fresh thread, the drive thread FromThread handed
	// off: the same objective, strategy, budgets and spending, and a first
	// turn whose hidden input is Handoff.
	Adopt struct {
		From       Drive  `json:"from"`
		FromThread string `json:"fromThread"`
		Handoff    string `json:"handoff"`
	}
	// ResponseDone: a model response of the turn completed.
	ResponseDone struct {
		TurnID string   `json:"turnId"`
		Usage  Response `json:"usage"`
	}
	// TurnEnded: turn/completed was sent. The drive sums the turn up and
	// asks for the workspace fingerprint (Fingerprint), then decides.
	TurnEnded struct {
		End TurnEnd `json:"end"`
	}
	// Fingerprinted: the workspace fingerprint Fingerprint asked for.
	Fingerprinted struct {
		Token       int    `json:"token"`
		Fingerprint string `json:"fingerprint"`
	}
	// ModelAnswered: the decision model's answer to AskModel (nil when it
	// failed: the policy decides).
	ModelAnswered struct {
		Token  int                     `json:"token"`
		Answer *controller.ModelAnswer `json:"answer,omitempty"`
	}
	// ReceiptStored: the decision receipt of the last StoreReceipt was
	// stored as ID, Seq. The decision is announced and carried out.
	ReceiptStored struct {
		ID  string `json:"id"`
		Seq int    `json:"seq"`
	}
	// Loaded installs a drive read from the store as a snapshot (a drive saved
	// before drives had a log), with no effect but the log's first entry.
	Loaded struct {
		Run Drive `json:"run"`
	}
	// Reloaded: the machine was rebuilt from its log in a new process. No
	// turn survives a restart: what the machine knew of the running turn,
	// its requests and the decision under way is gone.
	Reloaded struct{}
	// Restore brings a drive back after a restart (the thread is idle):
	// requests it waited on are sent again (Resend); otherwise it goes on
	// with a new turn, or waits paused (Options.OnRestartPaused).
	Restore struct {
		Pending []Pending `json:"pending,omitempty"`
	}
)

// The approval ladder.
type (
	// RequestAsked is rung 1: a request the agent needs (Key names it) is
	// answered by controller.Approve under the drive's strategy. Answered by
	// Verdict unless full auto has no say (no active drive, or the request
	// was already passed on).
	RequestAsked struct {
		TurnID  string                     `json:"turnId"`
		Key     string                     `json:"key"`
		Request controller.ApprovalRequest `json:"request"`
	}
	// RequestPassedOn is rung 2: the rules passed the request (Key) on;
	// answered by AskAboutRequest when the decision model is to answer it
	// — not under strategy "ask", never for a forbidden command (a human's
	// call) and once per request.
	RequestPassedOn struct {
		Key     string                     `json:"key"`
		Request controller.ApprovalRequest `json:"request"`
	}
	// ModelAnsweredRequest: the decision model answered (failed: Err).
	// The answer counts at QuestionMinConfidence or above (Verdict
	// accept); otherwise the request goes to the editor after all
	// (Verdict forward).
	ModelAnsweredRequest struct {
		TurnID string        `json:"turnId"`
		Input  ApprovalInput `json:"input"`
		Answer RequestAnswer `json:"answer"`
		Err    string        `json:"err,omitempty"`
	}
	// RequestForwarded is rung 3: request ID went to the editor. Under an
	// active drive it is tracked (Tracked), the drive waits, and the wait
	// times out.
	RequestForwarded struct {
		TurnID  string `json:"turnId"`
		ID      int64  `json:"id"`
		Kind    string `json:"kind"`
		Command string `json:"command,omitempty"`
		Reason  string `json:"reason,omitempty"`
	}
	// RequestSettled: a forwarded request was answered or timed out.
	RequestSettled struct {
		TurnID  string  `json:"turnId"`
		ID      int64   `json:"id"`
		Settled Settled `json:"settled"`
	}
	// RequestMoved: a resent request got another id from the client.
	RequestMoved struct {
		Old int64 `json:"old"`
		ID  int64 `json:"id"`
	}
	// ResentAnswered: a request resent after a restart was answered;
	// answered by CarryOn when the drive goes on.
	ResentAnswered struct {
		ID      int64   `json:"id"`
		Settled Settled `json:"settled"`
	}
)

// events decodes every event of the log, by its type.
var events = map[string]func([]byte) (Event, error){
	"start":                decode[Start],
	"pause":                decode[Pause],
	"resume":               decode[Resume],
	"stop":                 decode[Stop],
	"setGoal":              decode[SetGoal],
	"clearGoal":            decode[ClearGoal],
	"goalOnResume":         decode[GoalOnResume],
	"timerFired":           decode[TimerFired],
	"turnStartFailed":      decode[TurnStartFailed],
	"carry":                decode[Carry],
	"turnStarted":          decode[TurnStarted],
	"deadlineReached":      decode[DeadlineReached],
	"compacted":            decode[Compacted],
	"handedOff":            decode[HandedOff],
	"adopt":                decode[Adopt],
	"responseDone":         decode[ResponseDone],
	"turnEnded":            decode[TurnEnded],
	"fingerprinted":        decode[Fingerprinted],
	"modelAnswered":        decode[ModelAnswered],
	"receiptStored":        decode[ReceiptStored],
	"loaded":               decode[Loaded],
	"reloaded":             decode[Reloaded],
	"restore":              decode[Restore],
	"requestAsked":         decode[RequestAsked],
	"requestPassedOn":      decode[RequestPassedOn],
	"modelAnsweredRequest": decode[ModelAnsweredRequest],
	"requestForwarded":     decode[RequestForwarded],
	"requestSettled":       decode[RequestSettled],
	"requestMoved":         decode[RequestMoved],
	"resentAnswered":       decode[ResentAnswered],
}

func decode[E Event](b []byte) (Event, error) {
	var e E
	if len(b) > 0 {
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (Start) kind() string                { return "start" }
func (Pause) kind() string                { return "pause" }
func (Resume) kind() string               { return "resume" }
func (Stop) kind() string                 { return "stop" }
func (SetGoal) kind() string              { return "setGoal" }
func (ClearGoal) kind() string            { return "clearGoal" }
func (GoalOnResume) kind() string         { return "goalOnResume" }
func (TimerFired) kind() string           { return "timerFired" }
func (TurnStartFailed) kind() string      { return "turnStartFailed" }
func (Carry) kind() string                { return "carry" }
func (TurnStarted) kind() string          { return "turnStarted" }
func (DeadlineReached) kind() string      { return "deadlineReached" }
func (Compacted) kind() string            { return "compacted" }
func (HandedOff) kind() string            { return "handedOff" }
func (Adopt) kind() string                { return "adopt" }
func (ResponseDone) kind() string         { return "responseDone" }
func (TurnEnded) kind() string            { return "turnEnded" }
func (Fingerprinted) kind() string        { return "fingerprinted" }
func (ModelAnswered) kind() string        { return "modelAnswered" }
func (ReceiptStored) kind() string        { return "receiptStored" }
func (Loaded) kind() string               { return "loaded" }
func (Reloaded) kind() string             { return "reloaded" }
func (Restore) kind() string              { return "restore" }
func (RequestAsked) kind() string         { return "requestAsked" }
func (RequestPassedOn) kind() string      { return "requestPassedOn" }
func (ModelAnsweredRequest) kind() string { return "modelAnsweredRequest" }
func (RequestForwarded) kind() string     { return "requestForwarded" }
func (RequestSettled) kind() string       { return "requestSettled" }
func (RequestMoved) kind() string         { return "requestMoved" }
func (ResentAnswered) kind() string       { return "resentAnswered" }

// Entry is one event of the log, with the time it was applied at.
type Entry struct {
	AtMs  int64
	Event Event
}

type wireEntry struct {
	AtMs int64           `json:"atMs"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data,omitempty"`
}

// MarshalJSON encodes the entry as {atMs, type, data}.
func (e Entry) MarshalJSON() ([]byte, error) {
	if e.Event == nil {
		return nil, fmt.Errorf("fullauto: an entry with no event")
	}
	data, err := json.Marshal(e.Event)
	if err != nil {
		return nil, fmt.Errorf("encoding a %s event: %w", e.Event.kind(), err)
	}
	return json.Marshal(wireEntry{AtMs: e.AtMs, Type: e.Event.kind(), Data: data})
}

// UnmarshalJSON decodes what MarshalJSON encodes; an unknown type is an
// error.
func (e *Entry) UnmarshalJSON(b []byte) error {
	var w wireEntry
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	dec, ok := events[w.Type]
	if !ok {
		return fmt.Errorf("fullauto: unknown event type %q", w.Type)
	}
	ev, err := dec(w.Data)
	if err != nil {
		return fmt.Errorf("decoding a %s event: %w", w.Type, err)
	}
	e.AtMs, e.Event = w.AtMs, ev
	return nil
}
