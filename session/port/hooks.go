package port

import (
	"context"
	"encoding/json"

	"github.com/apserver/apserver/protocol"
)

// The hooks session calls into the layers above it: the project brain
// (brains.Service) and the manager's intent from chat (projects.Service).
// cmd wires them into session's Options; session names them as aliases.

// Aligner is the project brain's alignment check as the session sees it
// (brains.Service implements it; cmd wires it into Options.Align).
type Aligner interface {
	// AlignThread judges an action of the thread in its project; ok is
	// false when the project has no brain to judge by (no active
	// decisions). record is what the verdict was judged from (JSON of a
	// brain.Record), stored in the thread's alignment receipt. It may ask
	// a model: it is never called on a thread goroutine.
	AlignThread(ctx context.Context, threadID string, a protocol.AlignmentAction) (v protocol.AlignmentVerdict, record json.RawMessage, ok bool)
	// AlignmentApproved records that a human approved an action the check
	// stopped: a decision superseding the one it went against.
	AlignmentApproved(ctx context.Context, threadID string, a protocol.AlignmentAction, v protocol.AlignmentVerdict)
	// RecordDecision records a decision in the thread's project (the
	// model's record_decision tool; p.Cwd is filled in).
	RecordDecision(ctx context.Context, threadID string, p protocol.ProjectDecisionAddParams) (protocol.ProjectDecision, error)
}

// ProjectContexter is implemented by an Aligner that also gives a plain
// thread its project's context block (brains.Service).
type ProjectContexter interface {
	// ThreadContext is the context block of the thread in its project
	// cwd (docs/brain.md), "" when the workspace is not a project or the
	// thread already gets one (a run's stage). It reads the store only.
	ThreadContext(ctx context.Context, threadID, cwd string) string
}

// Summarizer is implemented by an Aligner that keeps the conversation
// summaries of a project's threads (brains.Service).
type Summarizer interface {
	// SummaryDue reports whether the thread (a plain thread of a project)
	// has turns its summary does not cover; turns is how many it has.
	SummaryDue(ctx context.Context, threadID, cwd string) (turns int, due bool)
	// SaveSummary stores the thread's summary of its first turns turns.
	SaveSummary(ctx context.Context, threadID, cwd, summary string, turns int) error
}

// IntentRouter is the manager's intent from chat as the session sees it
// (docs/manager.md#intent-from-chat; projects.Service implements it, cmd
// wires it into Options.Intents).
type IntentRouter interface {
	// RouteIntent classifies a user message of a thread whose workspace is
	// cwd and acts on it (starts building a phase, pauses the autopilot…).
	// It may ask a model: it is never called on a thread goroutine.
	RouteIntent(ctx context.Context, r IntentRequest) IntentOutcome
}
