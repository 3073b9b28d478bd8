// Package port is the typed port through which the layers above session
// drive threads: runner (runs) today, and next blueprints, the project
// brain, the manager and cluster workers. session implements it
// (session.Manager.Threads); a layer above imports this package, never
// session itself, and never poses as a wire client: no reply callbacks,
// no JSON round trips, no listening in on client notifications.
//
// A caller starts a thread with typed settings, starts turns and full
// auto on it, answers its pending requests, and reads what happens on it
// from a typed Stream of outcomes (Threads.Watch): a turn ended (with its
// status and error), an item completed, full auto changed state (stopped
// with its condition and reason, paused, waiting), a request asked. The
// editors still see every notification; the stream is a separate, typed
// copy of the outcomes, published by the thread's goroutine after the
// notification is queued.
//
// It also holds the plain types session offers the services beside it
// (package services, mcpservers): Defaults, PolicyJudgment,
// ErrSearchCancelled; a service names them without importing session.
//
// port must import nothing but protocol and the standard library.
package port

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/apserver/apserver/protocol"
)

// Reply answers one client request (server dispatches every method to a
// function taking one). It is called exactly once, by the goroutine that
// owns the state the request touched. A non-nil err becomes a JSON-RPC
// error whose code the server picks from the protocol sentinels it wraps.
type Reply func(result any, err error)

// Threads is session's port for the layers above it. Every method may be
// called from any goroutine of those layers (never from a thread's own:
// the calls that do work on a thread wait for that thread's goroutine to
// do it, or for ctx to end).
type Threads interface {
	// StartThread starts a thread and returns its id. thread/started goes
	// to the clients as for thread/start.
	StartThread(ctx context.Context, s ThreadSpec) (string, error)
	// Resume loads a stored thread that is not loaded (after a restart),
	// applying the settings given, as thread/resume does; a loaded thread
	// with no settings given is left as it is.
	Resume(ctx context.Context, threadID string, s protocol.ThreadSettings) error
	// StartTurn starts a turn (on a busy thread: steers the running one,
	// as turn/start does) and returns the turn.
	StartTurn(ctx context.Context, p protocol.TurnStartParams) (protocol.Turn, error)
	// InterruptTurn interrupts the running turn turnID.
	InterruptTurn(ctx context.Context, threadID, turnID string) error
	// StartFullAuto starts full auto on a thread (fullAuto/start).
	StartFullAuto(ctx context.Context, p protocol.FullAutoStartParams) (protocol.FullAutoRun, error)
	// StopFullAuto stops it (fullAuto/stop: userStop, the turn interrupted).
	StopFullAuto(ctx context.Context, threadID string) (protocol.FullAutoRun, error)
	// RestoreFullAuto brings back the thread's full auto after a restart,
	// as a server does for every thread once its client initialized; a
	// headless front end (apserver run --resume) has no such client.
	// Bringing a run back twice does nothing the second time.
	RestoreFullAuto(ctx context.Context, threadID string) error
	// FullAuto is the thread's full-auto run, if it has one, and the kind
	// of its own attention item while it waits on a human.
	FullAuto(ctx context.Context, threadID string) (FullAutoState, error)
	// Answer answers a pending server→client request of the thread (an
	// approval or a question, announced on the stream as RequestAsked)
	// instead of a client: result is the request's JSON-RPC result, e.g.
	// {"decision":"accept"}. The clients are told it is resolved.
	Answer(ctx context.Context, threadID string, requestID int64, result json.RawMessage) error
	// Items lists every item of the thread, oldest first, with its turn
	// (thread/items/list without paging).
	Items(ctx context.Context, threadID string) ([]protocol.ThreadItemEntry, error)
	// Release unloads an ephemeral thread nobody needs any more.
	Release(threadID string)
	// Watch starts a stream of the thread's outcomes, from now on.
	Watch(threadID string) Stream

	// Notify sends a notification to the clients (run/* and the like,
	// about no thread).
	Notify(method string, params any)
	// SetRunAttention puts (or replaces) a run's item in the attention
	// summary; ClearRunAttention takes it out.
	SetRunAttention(runID string, it protocol.AttentionItem)
	ClearRunAttention(runID string)
}

// ThreadSpec is what a thread is started with.
type ThreadSpec struct {
	// Settings are thread/start's: cwd, model, provider, sandbox, approval
	// policy, instructions.
	Settings protocol.ThreadSettings
	// ReadOnly turns off the tools that write files (apply_patch,
	// edit_file, write_file), as Codex's default_permissions ":read-only".
	ReadOnly bool
	// Ephemeral: the thread is never stored.
	Ephemeral bool
}

// FullAutoState is a thread's full auto as FullAuto reports it.
type FullAutoState struct {
	// Run is the thread's run; nil when it never had one.
	Run *protocol.FullAutoRun
	// Waiting is the kind of the thread's own attention item (an approval,
	// a question, paused) when there is one, else "".
	Waiting protocol.AttentionKind
}

// Stream is one caller's view of a thread's outcomes. Outcomes queue
// without bound, so the thread goroutine that publishes them never waits
// for a slow reader.
type Stream interface {
	// Next returns the next outcome, waiting for one; it returns ctx's
	// error when ctx ends first, and ErrClosed after Close.
	Next(ctx context.Context) (Outcome, error)
	// Close ends the stream.
	Close()
}

// ErrClosed is returned by Stream.Next after Close.
var ErrClosed = errClosed{}

type errClosed struct{}

func (errClosed) Error() string { return "the outcome stream is closed" }

// Outcome is one thing that happened on a thread: TurnEnded,
// ItemCompleted, FullAutoChanged, RequestAsked or UsageReported.
type Outcome interface {
	// Thread is the id of the thread it happened on.
	Thread() string
	outcome()
}

// TurnEnded: a turn ended (turn/completed).
type TurnEnded struct {
	ThreadID, TurnID string
	Status           protocol.TurnStatus
	// Error says why a failed turn failed; nil otherwise.
	Error *protocol.TurnError
}

// ItemCompleted: an item of a turn completed (item/completed).
type ItemCompleted struct {
	ThreadID, TurnID string
	Item             protocol.ThreadItem
}

// FullAutoChanged: the thread's full auto changed state
// (fullAuto/statusChanged). Run.State is the new state; a stopped run
// carries its StopCondition and Reason.
type FullAutoChanged struct {
	ThreadID string
	Run      protocol.FullAutoRun
}

// Stopped reports whether full auto stopped.
func (f FullAutoChanged) Stopped() bool { return f.Run.State == protocol.FullAutoStopped }

// RequestAsked: the thread asked the clients something (an approval, a
// question) and waits; Answer answers it. TurnID is "" for a request of
// full auto re-sent after a restart (its turn ended with the process).
type RequestAsked struct {
	ThreadID, TurnID string
	RequestID        int64
	Method           string
	// Params are the request's params (protocol.CommandApprovalParams, …).
	Params any
}

// UsageReported: a model response of a turn reported its token usage
// (thread/tokenUsage/updated), with the model that answered.
type UsageReported struct {
	ThreadID, TurnID string
	Model            string
	Usage            protocol.TokenUsageBreakdown
}

func (o UsageReported) Thread() string { return o.ThreadID }
func (UsageReported) outcome()         {}

func (o TurnEnded) Thread() string       { return o.ThreadID }
func (o ItemCompleted) Thread() string   { return o.ThreadID }
func (o FullAutoChanged) Thread() string { return o.ThreadID }
func (o RequestAsked) Thread() string    { return o.ThreadID }

func (TurnEnded) outcome()       {}
func (ItemCompleted) outcome()   {}
func (FullAutoChanged) outcome() {}
func (RequestAsked) outcome()    {}

// Defaults are the settings a thread started without overrides gets: what
// the services beside the threads (config/read, command/exec, skills/list,
// policy/explain without a thread) read of the session. The provider may
// change while the server runs (modelProvider/default/set), so a service
// asks for them at each request.
type Defaults struct {
	Cwd            string
	Model          string
	Provider       string
	ApprovalPolicy protocol.ApprovalPolicy
	Sandbox        protocol.SandboxMode
}

// PolicyJudgment is what session decides for a policy/explain question:
// the very plan a command or a file change of the thread (or of a thread
// with the server's defaults) would get. The policy/explain service
// reports it.
type PolicyJudgment struct {
	Sandbox  protocol.SandboxMode
	Approval protocol.ApprovalPolicy
	Command  *CommandJudgment // the question was a command
	File     *FileJudgment    // the question was a path
}

// CommandJudgment is the plan of a command.
type CommandJudgment struct {
	Escalated bool // run outside the sandbox was asked for
	// Decision and Reason are the rules' verdict; Effective what happens:
	// "run", "runSandboxed", "ask" or "refuse" (with Refusal, the model's
	// answer).
	Decision, Reason, Effective, Refusal string
	// Opaque and Privileged say what the rules could not read, or what
	// runs as another user; Part is the part of the command that decided.
	Opaque, Privileged, Part string
	// Rule is the deciding rule ("decision prefix"), "" the default; its
	// Source and Line (0 none).
	Rule, Source string
	Line         int
}

// FileJudgment is the plan of a change to a file.
type FileJudgment struct {
	// Resolved is the absolute path a change would write; "" when the file
	// tools refuse it, with Refused saying why.
	Resolved, Refused string
	WritableRoots     []string
	// Plan is "write", "ask" or "refuse".
	Plan string
}

// ErrSearchCancelled is the answer of a thread search stopped by
// thread/search/cancel, thread/search/stream/cancel or $/cancelRequest
// (session.ErrSearchCancelled is the same error).
var ErrSearchCancelled = errors.New("thread search cancelled")

// IntentRequest is a user message of a project's thread for the manager
// to route (docs/manager.md#intent-from-chat): its thread, workspace, the
// thread's model and provider (the classifier's unless [roles.intent]
// names one) and text. Session asks; projects answers.
type IntentRequest struct {
	ThreadID, Cwd, Model, Provider, Text string
}

// IntentOutcome is what the manager did with a message.
type IntentOutcome struct {
	// Message, when not empty, is the manager's word to the thread (what
	// it did, or why it did nothing): an agent message of the turn.
	Message string
	// Answer: the turn goes on and the model answers the message (a
	// question, anything the manager does not act on, a workspace that is
	// not a project). Otherwise the turn completes.
	Answer bool
	// Confirm, when set, is a change that waits for the user's
	// confirmation: asked in the thread (item/tool/requestUserInput with
	// the options Apply and Cancel), then applied or not.
	Confirm *IntentConfirm
}

// IntentConfirm is a change the user confirms first.
type IntentConfirm struct {
	Question string
	// Apply is called with the user's answer (true: Apply), never on a
	// thread goroutine; it returns the manager's message about it.
	Apply func(ctx context.Context, confirmed bool) string
}
