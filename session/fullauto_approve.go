package session

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// Approvals under full auto. The ladder for a request the agent needs:
//
//  1. the rules (controller.Approve under the run's strategy) accept or
//     decline it, or pass it on (autoAnswer);
//  2. when the config has a decision model and the strategy is not "ask",
//     the model answers it if it is confident enough (answerLater);
//  3. the editor: the run waits (state "waiting", an attention item); a
//     request no human answers within the run's timeout is declined, and
//     the decision after the turn pauses or stops the run
//     (requestWait, settleRequest).
//
// Every automatic answer is stored as a receipt. Human denials are counted
// per command prefix; controller.Approve declines a prefix denied 3 times.

// errRequestTimeout is the cause of a request wait that timed out.
var errRequestTimeout = errors.New("no answer within the approval timeout")

// ApprovalReceiptInput is the input stored with an approval receipt: what
// controller.Approve was given. apserver replay re-runs it.
type ApprovalReceiptInput struct {
	Strategy controller.ApprovalStrategy `json:"strategy"`
	Request  controller.ApprovalRequest  `json:"request"`
	Denials  map[string]int              `json:"denials"`
	// Model is the decision model's answer, when it answered.
	Model json.RawMessage `json:"model,omitempty"`
}

// ApprovalReceiptOutput is the output of an approval receipt.
type ApprovalReceiptOutput struct {
	controller.ApprovalVerdict
	Source string `json:"source"` // "policy" or "model"
}

// pendingRequest is a request a run forwarded to a human.
type pendingRequest struct {
	turnID string
	kind   string // command, fileChange, question
	prefix string // of a command
}

// resumeData is stored with a pending request: what the session needs to
// act on its answer after a restart.
type resumeData struct {
	TurnID  string `json:"turnId"`
	Kind    string `json:"kind"`
	Command string `json:"command,omitempty"`
}

// requestItemID is the item a request is about.
func requestItemID(req serverRequest) string {
	switch p := req.Params.(type) {
	case protocol.CommandApprovalParams:
		return p.ItemID
	case protocol.FileChangeApprovalParams:
		return p.ItemID
	case protocol.ToolRequestUserInputParams:
		return p.ItemID
	}
	return ""
}

func requestKey(req serverRequest) string { return req.Method + "\x00" + requestItemID(req) }

// commandPrefix is the first two words of a command, as the controller
// counts denials.
func commandPrefix(cmd string) string {
	f := strings.Fields(cmd)
	return strings.Join(f[:min(2, len(f))], " ")
}

func approvalRequest(req serverRequest) controller.ApprovalRequest {
	return controller.ApprovalRequest{
		Kind: req.Kind, Command: req.Command, Prefix: commandPrefix(req.Command),
		RuleDecision: req.Rule, Rule: req.RuleName, Paths: append([]string{}, req.Paths...),
		InsideWritableRoots: req.InsideWorkspace, Sandboxed: req.Sandboxed,
		Escalated: req.Escalated, Opaque: req.Opaque,
	}
}

func decisionJSON(d string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"decision": d})
	return b
}

// autoAnswerRun is autoAnswer under an active run: rule 1 of the ladder.
func (t *thread) autoAnswerRun(tr *turn, req serverRequest) (json.RawMessage, bool) {
	a := &t.auto
	r := a.run
	if !r.active() {
		return nil, false
	}
	key := requestKey(req)
	if key == a.forwarded {
		return nil, false // already passed on; sendRequest asks again
	}
	ar := approvalRequest(req)
	in := ApprovalReceiptInput{Strategy: r.Approvals, Request: ar, Denials: copyDenials(r.Denials)}
	v := controller.Approve(r.Approvals, ar, r.Denials)
	t.storeReceipt(store.ReceiptApproval, newID(), tr.id, in, ApprovalReceiptOutput{ApprovalVerdict: v, Source: "policy"}, "", v.Outcome != controller.OutcomeForward, "")
	switch v.Outcome {
	case controller.OutcomeAccept:
		return decisionJSON(protocol.DecisionAccept), true
	case controller.OutcomeDecline:
		return decisionJSON(protocol.DecisionDecline), true
	}
	a.forwarded = key
	return nil, false
}

func copyDenials(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// answerLater is rule 2 of the ladder: the decision model answers a
// request the rules passed on, if it is confident enough; otherwise the
// request goes to the editor after all. It reports whether it took the
// request; onAnswer is then called later on the thread goroutine.
func (t *thread) answerLater(tr *turn, req serverRequest, onAnswer func(reqID int64, raw json.RawMessage, err error)) bool {
	a := &t.auto
	r := a.run
	if !r.active() || r.Approvals == controller.ApproveAsk || req.Rule == "forbidden" || req.Escalated || req.Opaque != "" {
		return false // forbidden, escalated and opaque commands are a human's call
	}
	dm := t.m.decisionModel()
	key := requestKey(req)
	if dm == nil || a.modelAsked[key] {
		return false
	}
	if a.modelAsked == nil {
		a.modelAsked = map[string]bool{}
	}
	a.modelAsked[key] = true
	objective, strategy, denials := r.Objective, r.Approvals, copyDenials(r.Denials)
	ctx := tr.ctx
	minConf := t.m.opts.Config.FullAuto.QuestionMinConfidence
	go func() {
		ans, err := dm.answer(ctx, objective, req)
		t.postEvent(ctx, func() {
			if t.turn != tr {
				return
			}
			in := ApprovalReceiptInput{Strategy: strategy, Request: approvalRequest(req), Denials: denials, Model: ans.raw}
			out := ApprovalReceiptOutput{Source: receiptSourceModel}
			if err == nil && ans.confidence >= minConf {
				out.ApprovalVerdict = controller.ApprovalVerdict{Outcome: ans.outcome, Rule: "model", Reason: ans.reason}
				t.storeReceipt(store.ReceiptApproval, newID(), tr.id, in, out, "", true, "")
				if len(t.status.ActiveFlags) > 0 {
					t.setStatus(protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{}})
				}
				onAnswer(-1, ans.answer, nil)
				return
			}
			reason := "decision model unsure: " + ans.reason
			if err != nil {
				reason = "decision model failed: " + err.Error()
			}
			out.ApprovalVerdict = controller.ApprovalVerdict{Outcome: controller.OutcomeForward, Rule: "model.lowConfidence", Reason: reason}
			t.storeReceipt(store.ReceiptApproval, newID(), tr.id, in, out, "", false, "")
			t.sendRequest(tr, req, onAnswer)
		})
	}()
	return true
}

// requestWait is rule 3: the request went to the client as id. It shows in
// attention; under a run it is tracked (and stored, for a restart), the
// run waits, and the wait times out after the run's approval timeout.
func (t *thread) requestWaitRun(tr *turn, req serverRequest, id int64) func(context.Context) (context.Context, context.CancelFunc) {
	key := attnKey{t.id, attentionKind(req.Kind), id}
	t.m.fa.attn.set(key, protocol.AttentionItem{ThreadID: t.id, Kind: key.kind, Reason: requestReason(req), SinceMs: nowMs()})
	var timeout time.Duration
	if r := t.auto.run; r.active() {
		timeout = time.Duration(r.ApprovalTimeoutMs) * time.Millisecond
		t.trackPending(tr, req, id)
	}
	return func(ctx context.Context) (context.Context, context.CancelFunc) {
		wctx, cancel := context.WithCancelCause(ctx)
		var timer *time.Timer
		if timeout > 0 {
			timer = time.AfterFunc(timeout, func() { cancel(errRequestTimeout) })
		}
		return wctx, func() {
			if timer != nil {
				timer.Stop()
			}
			cancel(context.Canceled)
			t.m.fa.attn.clear(key)
		}
	}
}

func attentionKind(kind string) string {
	if kind == "question" {
		return protocol.AttentionQuestion
	}
	return protocol.AttentionApproval
}

// requestReason says in a line what a request waits for.
func requestReason(req serverRequest) string {
	switch p := req.Params.(type) {
	case protocol.CommandApprovalParams:
		return "approve command: " + truncate(req.Command, 200)
	case protocol.FileChangeApprovalParams:
		return "approve changes to " + truncate(strings.Join(req.Paths, ", "), 200)
	case protocol.ToolRequestUserInputParams:
		if len(p.Questions) > 0 {
			return "answer: " + truncate(p.Questions[0].Question, 200)
		}
	}
	return "answer " + req.Method
}

// trackPending records a request a run waits on and moves the run to
// "waiting".
func (t *thread) trackPending(tr *turn, req serverRequest, id int64) {
	a := &t.auto
	if a.pending == nil {
		a.pending = map[int64]*pendingRequest{}
	}
	a.pending[id] = &pendingRequest{turnID: tr.id, kind: req.Kind, prefix: commandPrefix(req.Command)}
	if t.persistent() {
		params, err := json.Marshal(req.Params)
		resume, _ := json.Marshal(resumeData{TurnID: tr.id, Kind: req.Kind, Command: req.Command})
		if err == nil {
			var db *store.Store
			db, err = t.m.store()
			if err == nil {
				err = db.PutPendingRequest(context.WithoutCancel(t.ctx), store.PendingRequest{ThreadID: t.id, RequestID: id,
					Method: req.Method, Params: params, Resume: resume})
			}
		}
		if err != nil {
			t.m.log.Error("storing a pending request", "thread", t.id, "request", id, "err", err)
		}
	}
	if a.run.State == protocol.FullAutoRunning {
		t.setRunState(protocol.FullAutoWaiting, requestReason(req), controller.StopNone)
	}
}

// dropPending forgets a pending request.
func (t *thread) dropPending(id int64) {
	delete(t.auto.pending, id)
	if !t.persistent() {
		return
	}
	if db, err := t.m.store(); err == nil {
		if err := db.DeletePendingRequest(context.WithoutCancel(t.ctx), t.id, id); err != nil {
			t.m.log.Error("deleting a pending request", "thread", t.id, "request", id, "err", err)
		}
	}
}

// settleRequest runs on the request's wait goroutine once the wait is
// over: a wait that timed out is answered here (an approval declined, a
// question unanswered), and the thread learns how the request ended.
func (t *thread) settleRequest(ctx, wctx context.Context, tr *turn, req serverRequest, id int64, raw json.RawMessage, err error) (json.RawMessage, error) {
	timedOut := err != nil && ctx.Err() == nil && errors.Is(context.Cause(wctx), errRequestTimeout)
	if timedOut {
		if req.Kind == "question" {
			raw, err = nil, errRequestTimeout
		} else {
			raw, err = decisionJSON(protocol.DecisionDecline), nil
		}
	}
	t.postEvent(ctx, func() { t.requestSettled(tr, id, raw, err, timedOut) })
	return raw, err
}

// requestSettled: a request the thread sent is answered (or timed out).
func (t *thread) requestSettled(tr *turn, id int64, raw json.RawMessage, err error, timedOut bool) {
	a := &t.auto
	p := a.pending[id]
	if p == nil {
		return
	}
	t.dropPending(id)
	if timedOut && a.cur != nil && a.cur.id == tr.id {
		a.cur.timeouts++
	}
	r := a.run
	if r == nil {
		return
	}
	if !timedOut && err == nil && p.kind == "command" && p.prefix != "" {
		if d, perr := protocol.ParseApprovalResponse(raw); perr == nil && (d.Kind == protocol.DecisionDecline || d.Kind == protocol.DecisionCancel) {
			if r.Denials == nil {
				r.Denials = map[string]int{}
			}
			r.Denials[p.prefix]++
			t.saveRun()
		}
	}
	if r.State == protocol.FullAutoWaiting && len(a.pending) == 0 {
		t.setRunState(protocol.FullAutoRunning, "", controller.StopNone)
	}
}

// attnKey names one attention item.
type attnKey struct {
	thread, kind string
	req          int64
}

// attention is the one summary of everything waiting on a human, across
// threads. Any goroutine may change it; each change that alters the
// summary sends it (under mu, so summaries go out in order).
type attention struct {
	m *Manager

	mu    sync.Mutex
	items map[attnKey]protocol.AttentionItem
	sent  string // JSON of the last summary sent; "" = the empty one
}

func (a *attention) set(k attnKey, it protocol.AttentionItem) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.items == nil {
		a.items = map[attnKey]protocol.AttentionItem{}
	}
	if old, ok := a.items[k]; ok {
		it.SinceMs = old.SinceMs
	}
	a.items[k] = it
	a.sendLocked()
}

func (a *attention) clear(k attnKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.items[k]; !ok {
		return
	}
	delete(a.items, k)
	a.sendLocked()
}

func (a *attention) snapshot() protocol.AttentionNotification {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.summaryLocked()
}

func (a *attention) summaryLocked() protocol.AttentionNotification {
	n := protocol.AttentionNotification{Items: make([]protocol.AttentionItem, 0, len(a.items))}
	for _, it := range a.items {
		n.Items = append(n.Items, it)
	}
	sort.Slice(n.Items, func(i, j int) bool {
		x, y := n.Items[i], n.Items[j]
		if x.SinceMs != y.SinceMs {
			return x.SinceMs < y.SinceMs
		}
		if x.ThreadID != y.ThreadID {
			return x.ThreadID < y.ThreadID
		}
		return x.Kind < y.Kind
	})
	n.Count = len(n.Items)
	if n.Count > 0 {
		n.OldestSinceMs = ptr(n.Items[0].SinceMs)
	}
	return n
}

func (a *attention) sendLocked() {
	n := a.summaryLocked()
	b, _ := json.Marshal(n)
	s := string(b)
	if n.Count == 0 {
		s = ""
	}
	if s == a.sent {
		return
	}
	a.sent = s
	a.m.notify(protocol.NotifyAttention, n)
}
