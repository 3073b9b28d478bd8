package fullauto

import (
	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/protocol"
)

// Effect is what the machine asks its driver to do. The driver applies a
// batch in order, after its reply to the request that caused it, and feeds
// results back as events (ReceiptStored, Fingerprinted, ModelAnswered,
// TimerFired, TurnStarted, …).
type Effect interface{ effect() }

// Receipt kinds (store.ReceiptDecision, store.ReceiptApproval).
const (
	ReceiptDecision = "decision"
	ReceiptApproval = "approval"
)

// Notify sends a notification to the client.
type Notify struct {
	Method string
	Params any
}

// SaveDrive stores the drive (its JSON and state).
type SaveDrive struct {
	State string
	Data  []byte
}

// DeleteDrive forgets the stored drive.
type DeleteDrive struct{}

// StoreReceipt stores a receipt. For a decision receipt the driver then
// reports the id and sequence number it got with ReceiptStored, which
// returns the rest of the decision's effects. Seq is set when the thread
// has no store (ephemeral): the machine numbers those receipts itself.
type StoreReceipt struct {
	Kind        string
	TurnID      string
	Input       any
	Output      any
	PolicyHash  string
	Executed    bool
	Override    string
	Seq         int
	CreatedAtMs int64
}

// TurnInput is how a turn the drive begins starts: a visible user message
// (Text), hidden input the model sees as the user's (Hidden, already
// wrapped), or items carried over from before a restart (Resume, the
// driver's own payload, passed through).
type TurnInput struct {
	Kind   string `json:"kind,omitempty"`
	Text   string `json:"text,omitempty"`
	Hidden string `json:"hidden,omitempty"`
	// Resume is not logged: the drive never looks at it.
	Resume any `json:"-"`
}

// StartTurn begins a turn with Input after DelayMs. A delayed start comes
// back as TimerFired(Token, Input), which starts it if the drive is still
// where it was.
type StartTurn struct {
	Input   TurnInput
	DelayMs int64
	Token   int
}

// Fingerprint asks the driver for the workspace fingerprint (Known when
// the machine already knows it); the answer is Fingerprinted(Token, fp).
type Fingerprint struct {
	Known string
	Token int
}

// AskModel asks the decision model about Input; the answer is
// ModelAnswered(Token, answer or nil).
type AskModel struct {
	Input controller.Input
	Token int
}

// SetAttention and ClearAttention change the thread's paused item in the
// attention summary.
type SetAttention struct {
	Reason  string
	SinceMs int64
}

// ClearAttention removes the thread's paused attention item.
type ClearAttention struct{}

// DropPending forgets a pending request (stored for a restart).
type DropPending struct{ Request int64 }

// Resend sends a request stored before a restart again, under its id; its
// answer comes back as ResentAnswered.
type Resend struct {
	Request   int64
	TimeoutMs int64
}

// Interrupt interrupts the running turn.
type Interrupt struct{}

// Handoff continues the drive in a fresh thread: the driver creates it
// (forked from this one, without its turns), feeds Adopt(Drive, handoff) to
// the new thread's machine, where handoff holds the objective, the plan
// and the latest compaction summary, then HandedOff(id) back here.
type Handoff struct {
	Drive Drive
}

// TurnDeadline asks for DeadlineReached(TurnID) after DelayMs, unless the
// turn ends first: the drive's time budget runs out then.
type TurnDeadline struct {
	TurnID  string
	DelayMs int64
}

func (Notify) effect()         {}
func (Handoff) effect()        {}
func (SaveDrive) effect()      {}
func (DeleteDrive) effect()    {}
func (StoreReceipt) effect()   {}
func (StartTurn) effect()      {}
func (Fingerprint) effect()    {}
func (AskModel) effect()       {}
func (SetAttention) effect()   {}
func (ClearAttention) effect() {}
func (DropPending) effect()    {}
func (Resend) effect()         {}
func (Interrupt) effect()      {}
func (TurnDeadline) effect()   {}

// LogEvent appends the event just applied to the thread's event log: the
// driver stores it before it carries out the event's other effects
// (store-before-apply). Fresh starts a new log (a drive was installed: the
// earlier drive's events are dropped); Base is then the thread's turn as the
// drive found it (Replay starts from it).
type LogEvent struct {
	Entry Entry
	Fresh bool
	Base  Base
}

// The answers. An event that asks something of the machine (a request's
// method, a question of the approval ladder) gets its answer as an effect
// among the others; the driver reads it and carries out the rest in order.

// Refused answers a request the machine refuses: nothing changed, and the
// request fails with Err (a protocol error).
type Refused struct{ Err error }

// GoalAnswer answers SetGoal: the goal to reply with.
type GoalAnswer struct{ Goal protocol.ThreadGoal }

// GoalCleared answers ClearGoal: whether there was a goal to clear.
type GoalCleared struct{ Cleared bool }

// Verdict answers RequestAsked (rung 1) and ModelAnsweredRequest (rung 2):
// accept or decline (the client never sees the request), or forward.
// RequestAsked gets none when full auto has no say.
type Verdict struct{ Outcome string }

// AskAboutRequest answers RequestPassedOn when the decision model is to
// answer the request (rung 2): Input is the receipt input to give back in
// ModelAnsweredRequest. No AskAboutRequest: the request goes to the editor.
type AskAboutRequest struct {
	Objective string
	Input     ApprovalInput
}

// Tracked answers RequestForwarded when the drive tracks the request (the
// driver stores it for a restart); its wait times out after TimeoutMs (0:
// never).
type Tracked struct{ TimeoutMs int64 }

// CarryOn answers ResentAnswered when the drive goes on: the driver starts
// (Carry with Token) a turn of Kind that begins with the request's outcome.
type CarryOn struct {
	Kind  string
	Token int
}

func (LogEvent) effect()        {}
func (Refused) effect()         {}
func (GoalAnswer) effect()      {}
func (GoalCleared) effect()     {}
func (Verdict) effect()         {}
func (AskAboutRequest) effect() {}
func (Tracked) effect()         {}
func (CarryOn) effect()         {}
