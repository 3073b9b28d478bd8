package session

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/apserver/apserver/agenttools"
	"github.com/apserver/apserver/brain"
	"github.com/apserver/apserver/compaction"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/contextwindow"
	"github.com/apserver/apserver/internal/uuid"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
	"github.com/apserver/apserver/store"
)

// The hooks of the layers above (port/hooks.go): the brain's alignment
// check, a plain thread's project context and its rolling summary.
type (
	Aligner          = port.Aligner
	ProjectContexter = port.ProjectContexter
	Summarizer       = port.Summarizer
)

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
	ctx, persist := tr.ctx, t.persistent()
	go func() {
		v, rec, ok := t.m.opts.Align.AlignThread(ctx, t.id, a)
		if ok {
			t.storeAlignment(persist, tr.id, v, rec)
		}
		t.postEvent(ctx, func() {
			if t.turn != tr {
				return
			}
			if ok {
				run.item.Alignment = &v // the item's record keeps the verdict
			}
			if !ok || !v.Status.Stops() {
				t.proceedCommand(tr, run, justification)
				return
			}
			run.verdict = &v
			req := t.commandRequest(tr.id, run, "")
			p := req.Params.(protocol.CommandApprovalParams)
			p.Reason = ptr(brain.AlignmentReason(v))
			p.ProposedExecpolicyAmendment = nil
			p.AvailableDecisions = []protocol.Decision{protocol.DecisionAccept, protocol.DecisionDecline, protocol.DecisionCancel}
			p.Alignment = &v
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
	ctx, persist := tr.ctx, t.persistent()
	go func() {
		var worst, first *protocol.AlignmentVerdict
		var stopped protocol.AlignmentAction
		for _, a := range actions {
			v, rec, ok := t.m.opts.Align.AlignThread(ctx, t.id, a)
			if !ok {
				continue
			}
			t.storeAlignment(persist, tr.id, v, rec)
			if first == nil {
				first = &v
			}
			if v.Status.Stops() && (worst == nil || v.Status == protocol.AlignmentConflicting && worst.Status != protocol.AlignmentConflicting) {
				worst, stopped = &v, a
			}
		}
		t.postEvent(ctx, func() {
			if t.turn != tr {
				return
			}
			if worst != nil {
				run.item.Alignment = worst // the item's record keeps the verdict
			} else if first != nil {
				run.item.Alignment = first
			}
			if worst == nil {
				t.proceedChanges(tr, run, plan, paths)
				return
			}
			run.verdict, run.action = worst, stopped
			params := protocol.FileChangeApprovalParams{ThreadID: t.id, TurnID: tr.id, ItemID: run.item.ID, StartedAtMs: t.nowMs(), Reason: ptr(brain.AlignmentReason(*worst)), Alignment: worst}
			req := serverRequest{Method: protocol.RequestFileChangeApproval, Params: params, Kind: "fileChange", Paths: paths, InsideWorkspace: run.inside, Alignment: worst}
			t.setStatus(protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{protocol.FlagWaitingOnApproval}})
			t.sendRequest(tr, req, func(id int64, raw json.RawMessage, err error) { t.onFileApproval(tr, run, id, raw, err) })
		})
	}()
	return true
}

// storeAlignment stores a verdict and what it was judged from as the
// thread's alignment receipt (apserver replay re-judges it), on the
// calling goroutine; an ephemeral thread keeps none.
func (t *thread) storeAlignment(persist bool, turnID string, v protocol.AlignmentVerdict, rec json.RawMessage) {
	if !persist || len(rec) == 0 {
		return
	}
	out, _ := json.Marshal(v)
	db, err := t.m.store()
	if err == nil {
		_, err = db.AppendReceipt(context.WithoutCancel(t.ctx), store.Receipt{ThreadID: t.id, ID: uuid.NewV7(), Kind: brain.ReceiptKind, TurnID: turnID,
			Input: rec, Output: out, Executed: !v.Status.Stops()})
	}
	if err != nil {
		t.m.log.Error("storing an alignment receipt", "thread", t.id, "err", err)
	}
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

// toolRecordDecision is the model's way to record a decision
// (agenttools.RecordDecision).
const toolRecordDecision = agenttools.RecordDecision

var recordDecisionTool = agenttools.RecordDecisionTool

// runDecisionCall records the model's decision as proposed (on a child
// goroutine: the store), then gives the model the decision's id.
func (t *thread) runDecisionCall(tr *turn, call model.ToolCall) {
	p, err := agenttools.ParseDecision(call.Arguments)
	if err != nil {
		t.toolError(tr, call, err.Error())
		return
	}
	ctx, al := tr.ctx, t.m.opts.Align
	go func() {
		d, err := al.RecordDecision(context.WithoutCancel(ctx), t.id, p)
		out := fmt.Sprintf("Recorded decision %s %q as proposed; a human, or the run's trust, confirms it.", d.ID, d.Title)
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

// projectContextWait bounds the store reads of a turn's context block.
const projectContextWait = 2 * time.Second

// projectContext is the context block a turn of a plain thread gets
// appended to its instructions under project_context = true ("" when
// off, or without a brain). It runs on the thread goroutine, as the
// reading of AGENTS.md does: store reads only, bounded.
func (t *thread) projectContext() string {
	if !t.m.opts.Config.Brain.ProjectContext {
		return ""
	}
	pc, ok := t.m.opts.Align.(ProjectContexter)
	if !ok {
		return ""
	}
	ctx, cancel := context.WithTimeout(t.ctx, projectContextWait)
	defer cancel()
	block := pc.ThreadContext(ctx, t.id, t.settings.Cwd)
	if block == "" {
		return ""
	}
	return "\n\n" + block
}

// summarizeIdle refreshes the thread's rolling summary when it goes idle
// after new turns (docs/brain.md), under project_context = true: the
// compaction summarizer (its role's model, or the thread's) over the
// thread's history, on a child goroutine; the brain decides whether it is
// due. A full-auto run's thread waits for the run's end.
func (t *thread) summarizeIdle() {
	sm, ok := t.m.opts.Align.(Summarizer)
	if !ok || !t.m.opts.Config.Brain.ProjectContext || !t.persistent() || t.turn != nil || t.autoDrive().Active() {
		return
	}
	modelName, provider, err := t.m.opts.Config.ResolveThreadModel(t.settings.Model, t.settings.Provider)
	if err != nil {
		return
	}
	client := t.m.modelClient(provider)
	if t.m.opts.Config.HasRole(config.CompactionRole) {
		if name, prov, err := t.m.opts.Config.ResolveModel(config.CompactionRole, ""); err == nil {
			modelName, client = name, t.m.modelClient(prov)
		}
	}
	window, _ := t.compactLimits(client.Provider().Name, modelName)
	input := compaction.FitSummaryInput(compaction.Summarizable(contextwindow.Entries(t.history)), window)
	if len(input) == 0 {
		return
	}
	ctx, id, cwd := t.ctx, t.id, t.settings.Cwd
	t.m.wg.Add(1)
	go func() {
		defer t.m.wg.Done()
		turns, due := sm.SummaryDue(ctx, id, cwd)
		if !due {
			return
		}
		text, err := t.summarizeContext(ctx, client, modelName, input)
		if err == nil {
			err = sm.SaveSummary(context.WithoutCancel(ctx), id, cwd, text, turns)
		}
		if err != nil && ctx.Err() == nil {
			t.m.log.Warn("summarizing a thread for its project", "thread", id, "err", err)
		}
	}()
}

// SetDecisionAttention puts a project's proposed decisions that wait on a
// human (the brain's item) in the attention summary, or takes them out
// (nil). Any goroutine may call it.
func (m *Manager) SetDecisionAttention(cwd string, it *protocol.AttentionItem) {
	k := attnKey{thread: "decisions:" + cwd}
	if it == nil {
		m.fa.attn.clear(k)
		return
	}
	m.fa.attn.set(k, *it)
}

// SetAligner sets Options.Align, for a Manager made before the brain
// (which reads the Manager's store). Call it before serving.
func (m *Manager) SetAligner(a Aligner) { m.opts.Align = a }
