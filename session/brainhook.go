package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apserver/apserver/brain"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
)

// Aligner is the project brain's alignment check as the session sees it
// (brains.Service implements it; cmd wires it into Options.Align).
type Aligner interface {
	// AlignThread judges an action of the thread in its project; ok is
	// false when the project has no brain to judge by (no active
	// decisions). It may ask a model: it is never called on a thread
	// goroutine.
	AlignThread(ctx context.Context, threadID string, a protocol.AlignmentAction) (v protocol.AlignmentVerdict, ok bool)
	// AlignmentApproved records that a human approved an action the check
	// stopped: a decision superseding the one it went against.
	AlignmentApproved(ctx context.Context, threadID string, a protocol.AlignmentAction, v protocol.AlignmentVerdict)
	// RecordDecision records a decision in the thread's project (the
	// model's record_decision tool; p.Cwd is filled in).
	RecordDecision(ctx context.Context, threadID string, p protocol.ProjectDecisionAddParams) (protocol.ProjectDecision, error)
}

// The alignment hook (docs/brain.md). Under full auto, a command the
// rules do not mark plainly safe (not read-only) and every file change
// are judged before they go on: on a child goroutine (the validator may
// be asked), the verdict posted back. An aligned one goes on as before
// (proceedCommand, proceedChanges: full auto's ladder, the policy). A
// risky or conflicting one goes to a human, even under full auto, with
// the verdict's reasons — the decision named — as the request's reason;
// approving it records a superseding decision.

// aligning reports whether the thread's actions are judged now.
func (t *thread) aligning() bool {
	return t.m.opts.Align != nil && t.autoDrive().Active()
}

// alignCommand starts the check of a command; it reports whether it did
// (the command then waits for the verdict).
func (t *thread) alignCommand(tr *turn, run *commandRun, justification string) bool {
	if !t.aligning() || brain.ReadOnly(run.command) {
		return false
	}
	a := protocol.AlignmentAction{Kind: protocol.ActionCommand, Command: run.command}
	ctx := tr.ctx
	go func() {
		v, ok := t.m.opts.Align.AlignThread(ctx, t.id, a)
		t.postEvent(ctx, func() {
			if t.turn != tr {
				return
			}
			if !ok || !v.Status.Stops() {
				t.proceedCommand(tr, run, justification)
				return
			}
			run.verdict = &v
			req := t.commandRequest(tr.id, run, "")
			p := req.Params.(protocol.CommandApprovalParams)
			p.Reason = ptr(alignmentReason(v))
			p.ProposedExecpolicyAmendment = nil
			p.AvailableDecisions = []protocol.Decision{protocol.DecisionAccept, protocol.DecisionDecline, protocol.DecisionCancel}
			req.Params, req.Alignment = p, &v
			t.setStatus(protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{protocol.FlagWaitingOnApproval}})
			t.notifyItemStarted(tr, run.item)
			t.sendRequest(tr, req, func(id int64, raw json.RawMessage, err error) { t.onApproval(tr, run, id, raw, err) })
		})
	}()
	return true
}

// alignChanges starts the check of announced file changes (each file
// judged; the worst verdict stands); it reports whether it did.
func (t *thread) alignChanges(tr *turn, run *fileRun, plan string, paths []string) bool {
	if !t.aligning() || plan == fileRefuse {
		return false
	}
	var actions []protocol.AlignmentAction
	for _, c := range run.changes {
		a := protocol.AlignmentAction{Kind: protocol.ActionWrite, Path: c.Path, Before: string(c.Old), After: string(c.New)}
		if c.Kind == "delete" {
			a = protocol.AlignmentAction{Kind: protocol.ActionDelete, Path: c.Path, Before: string(c.Old)}
		}
		actions = append(actions, a)
	}
	ctx := tr.ctx
	go func() {
		var worst *protocol.AlignmentVerdict
		var stopped protocol.AlignmentAction
		for _, a := range actions {
			v, ok := t.m.opts.Align.AlignThread(ctx, t.id, a)
			if ok && v.Status.Stops() && (worst == nil || v.Status == protocol.AlignmentConflicting && worst.Status != protocol.AlignmentConflicting) {
				worst, stopped = &v, a
			}
		}
		t.postEvent(ctx, func() {
			if t.turn != tr {
				return
			}
			if worst == nil {
				t.proceedChanges(tr, run, plan, paths)
				return
			}
			run.verdict, run.action = worst, stopped
			params := protocol.FileChangeApprovalParams{ThreadID: t.id, TurnID: tr.id, ItemID: run.item.ID, StartedAtMs: t.nowMs(), Reason: ptr(alignmentReason(*worst))}
			req := serverRequest{Method: protocol.RequestFileChangeApproval, Params: params, Kind: "fileChange", Paths: paths, InsideWorkspace: run.inside, Alignment: worst}
			t.setStatus(protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{protocol.FlagWaitingOnApproval}})
			t.sendRequest(tr, req, func(id int64, raw json.RawMessage, err error) { t.onFileApproval(tr, run, id, raw, err) })
		})
	}()
	return true
}

// alignmentReason is a stopped action's approval reason: the verdict,
// the decisions it goes against, the reasons.
func alignmentReason(v protocol.AlignmentVerdict) string {
	var names []string
	for _, d := range v.Decisions {
		names = append(names, fmt.Sprintf("%s %q", d.ID, d.Title))
	}
	s := "The project brain judged this " + string(v.Status)
	if len(names) > 0 {
		s += " against decision " + strings.Join(names, ", ")
	}
	return truncate(s+": "+strings.Join(v.Reasons, "; ")+". Approving records a decision that supersedes it.", 600)
}

// alignmentApproved tells the brain a human approved a stopped action
// (on a child goroutine: it writes the store), then goes on with then on
// the thread goroutine.
func (t *thread) alignmentApproved(tr *turn, a protocol.AlignmentAction, v protocol.AlignmentVerdict, then func()) {
	al := t.m.opts.Align
	ctx := tr.ctx
	go func() {
		al.AlignmentApproved(context.WithoutCancel(ctx), t.id, a, v)
		t.postEvent(ctx, func() {
			if t.turn == tr {
				then()
			}
		})
	}()
}

// toolRecordDecision is the model's way to record a decision: a proposed
// one, which a human (project/decision/update) confirms.
const toolRecordDecision = "record_decision"

var recordDecisionTool = model.Tool{Name: toolRecordDecision,
	Description: "Record a decision about this project (a technology, a convention, a design choice) so that later work follows it. It is recorded as proposed; a human confirms it. Name the alternatives you rejected.",
	Parameters: json.RawMessage(`{"type":"object","properties":{
  "title":{"type":"string","description":"The decision in a few words, e.g. Use PostgreSQL."},
  "text":{"type":"string","description":"What was decided."},
  "why":{"type":"string"},
  "alternatives":{"type":"array","items":{"type":"string"},"description":"Options rejected."},
  "files":{"type":"array","items":{"type":"string"},"description":"Globs of the files it concerns."},
  "tags":{"type":"array","items":{"type":"string"}}},
 "required":["title","text"],"additionalProperties":false}`)}

// runDecisionCall records the model's decision as proposed (on a child
// goroutine: the store), then gives the model the decision's id.
func (t *thread) runDecisionCall(tr *turn, call model.ToolCall) {
	var a struct {
		Title, Text, Why    string
		Alternatives, Files []string
		Tags                []string
	}
	if err := json.Unmarshal([]byte(call.Arguments), &a); err != nil {
		t.toolError(tr, call, "record_decision: invalid arguments: "+err.Error())
		return
	}
	if strings.TrimSpace(a.Title) == "" || strings.TrimSpace(a.Text) == "" {
		t.toolError(tr, call, "record_decision: title and text are required")
		return
	}
	proposed := protocol.DecisionProposed
	p := protocol.ProjectDecisionAddParams{Title: a.Title, Text: a.Text, Why: a.Why, Alternatives: a.Alternatives, Source: "model", Status: &proposed,
		Scope: &protocol.DecisionScope{Files: a.Files, Tags: a.Tags}}
	ctx, al := tr.ctx, t.m.opts.Align
	go func() {
		d, err := al.RecordDecision(context.WithoutCancel(ctx), t.id, p)
		out := fmt.Sprintf("Recorded decision %s %q as proposed; a human confirms it.", d.ID, d.Title)
		if err != nil {
			out = "record_decision: not recorded: " + err.Error()
		}
		t.postEvent(ctx, func() {
			if t.turn == tr {
				t.toolError(tr, call, out) // a tool output, then the next call
			}
		})
	}()
}

// SetAligner sets Options.Align, for a Manager made before the brain
// (which reads the Manager's store). Call it before serving.
func (m *Manager) SetAligner(a Aligner) { m.opts.Align = a }
