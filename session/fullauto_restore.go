package session

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/apserver/apserver/autodrive"
	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/tools"
)

// Full auto across a restart. A drive that was running or waiting when
// apserver stopped (even by kill -9) comes back when the client has
// initialized: a request it was waiting on is sent again with the same id,
// and answering it carries the drive on in a new turn (the interrupted one
// cannot resume); a drive that was between or inside turns goes on with a new
// turn, or waits paused, as full_auto.on_restart says.

// callerWithID is a Client that can re-send a request under an old id
// (server's client does).
type callerWithID interface {
	CallWithID(id int64, method string, params any) ClientCall
}

// RestoreFullAuto brings back the drives that were going when apserver last
// stopped. The server calls it once the client has initialized; later
// calls do nothing.
func (m *Manager) RestoreFullAuto() {
	m.fa.restoreOnce.Do(func() { go m.restoreDrives() })
}

func (m *Manager) restoreDrives() {
	db, err := m.store()
	if err != nil {
		return
	}
	runs, err := db.Drives(m.ctx, string(protocol.FullAutoRunning), string(protocol.FullAutoWaiting))
	if err != nil {
		m.log.Error("full auto: listing runs to restore", "err", err)
		return
	}
	for _, sr := range runs {
		t, err := m.load(m.ctx, sr.ThreadID)
		if err != nil {
			m.log.Error("full auto: loading a thread to restore its run", "thread", sr.ThreadID, "err", err)
			continue
		}
		t.post(t.restoreDrive)
	}
}

// restoreDrive runs on the thread goroutine after a restart.
func (t *thread) restoreDrive() { t.autod().Restore(t.turn != nil) }

// resend sends a stored pending request again, under its old id when the
// client allows it.
func (t *thread) resend(p store.PendingRequest, timeoutMs int64) {
	var rd autodrive.ResumeData
	if len(p.Resume) > 0 {
		_ = json.Unmarshal(p.Resume, &rd)
	}
	var call ClientCall
	if c, ok := t.m.client.(callerWithID); ok {
		call = c.CallWithID(p.RequestID, p.Method, p.Params)
	} else {
		call = t.m.client.Call(p.Method, p.Params)
	}
	id := call.ID()
	if id != p.RequestID {
		// Store it under the id the client now knows.
		t.autod().DropPending(p.RequestID)
		t.drive(fullauto.RequestMoved{Old: p.RequestID, ID: id}, nil)
		p.RequestID = id
		if db, err := t.m.store(); err == nil {
			_ = db.PutPendingRequest(context.WithoutCancel(t.ctx), p)
		}
	}
	key := attnKey{t.id, autodrive.AttentionKind(rd.Kind), id}
	t.m.fa.attn.set(key, protocol.AttentionItem{ThreadID: t.id, Kind: key.kind, Reason: "answer the request sent before the restart", SinceMs: t.nowMs()})
	timeout := time.Duration(timeoutMs) * time.Millisecond
	ctx := t.ctx
	// The thread port may answer it too (threads.go).
	pctx, pcancel := context.WithCancel(ctx)
	pa := portAnswer{answer: make(chan json.RawMessage, 1), cancel: pcancel, done: pctx.Done()}
	t.portAnswers[id] = pa
	t.m.watchers.publish(port.RequestAsked{ThreadID: t.id, RequestID: id, Method: p.Method, Params: p.Params})
	go func() {
		defer pcancel()
		wctx, cancel := context.WithCancelCause(pctx)
		if timeout > 0 {
			timer := t.m.clock.AfterFunc(timeout, func() { cancel(errRequestTimeout) })
			defer timer.Stop()
		}
		raw, err := call.Wait(wctx)
		select {
		case a := <-pa.answer:
			raw, err = a, nil
		default:
		}
		timedOut := err != nil && ctx.Err() == nil && errors.Is(context.Cause(wctx), errRequestTimeout)
		cancel(context.Canceled)
		t.m.fa.attn.clear(key)
		if ctx.Err() != nil {
			return // shutting down: the request stays stored for the next start
		}
		t.postEvent(ctx, func() { t.resentAnswered(p, rd, id, raw, err, timedOut) })
	}()
}

// resentAnswered acts on the answer to a request re-sent after a restart:
// the drive goes on in a new turn that starts with the outcome of the
// request (the approved command's run, the declined command, the answer to
// the question).
func (t *thread) resentAnswered(p store.PendingRequest, rd autodrive.ResumeData, id int64, raw json.RawMessage, err error, timedOut bool) {
	delete(t.portAnswers, id)
	t.notify(protocol.NotifyServerRequestResolved, protocol.ServerRequestResolvedNotification{ThreadID: t.id, RequestID: id})
	fsm := t.fsm()
	var c fullauto.CarryOn
	var carry bool
	t.drive(fullauto.ResentAnswered{ID: id, Settled: fullauto.Settled{TimedOut: timedOut, Declined: !timedOut && autodrive.Declined(raw, err)}}, func(effs []fullauto.Effect) {
		c, carry = autodrive.Answer[fullauto.CarryOn](effs)
	})
	if !carry {
		return
	}
	kind := c.Kind
	switch p.Method {
	case protocol.RequestCommandApproval:
		var params protocol.CommandApprovalParams
		_ = json.Unmarshal(p.Params, &params)
		t.resumeCommand(params, rd, raw, err, kind)
	case protocol.RequestUserInput:
		var params protocol.ToolRequestUserInputParams
		_ = json.Unmarshal(p.Params, &params)
		out := string(raw)
		if err != nil {
			out = "request_user_input: the user did not answer: " + err.Error()
		}
		args, _ := json.Marshal(map[string]any{"questions": params.Questions})
		call := model.ToolCall{CallID: params.ItemID, Name: toolRequestUserInput, Arguments: string(args)}
		t.carry(fsm.Token(), fullauto.TurnInput{Kind: kind, Resume: &resumedCall{hist: callHistory(call, out)}})
	default:
		answer := "no usable answer"
		if d, perr := protocol.ParseApprovalResponse(raw); err == nil && perr == nil {
			answer = string(d.Kind)
		}
		t.carry(fsm.Token(), fullauto.TurnInput{Kind: kind, Hidden: fullauto.FileChangeRestartText(answer, fsm.Drive().Objective)})
	}
}

// carry starts the turn that carries a drive on, if the drive is still as it
// was at token.
func (t *thread) carry(token int, in fullauto.TurnInput) {
	t.drive(fullauto.Carry{Token: token, Input: in}, nil)
}

// resumedCall is a tool call that was waiting for approval when apserver
// stopped, with its outcome: the item to show (nil for none) and the
// history it adds.
type resumedCall struct {
	item protocol.ThreadItem
	hist []model.Entry
}

// resumeCommand runs an approved command (or records it declined) and
// starts the turn that carries on with its result.
func (t *thread) resumeCommand(params protocol.CommandApprovalParams, rd autodrive.ResumeData, raw json.RawMessage, err error, kind string) {
	cmd := rd.Command
	dir := t.settings.Cwd
	if params.Cwd != nil && *params.Cwd != "" {
		dir = *params.Cwd
	}
	args, _ := json.Marshal(map[string]string{"cmd": cmd, "workdir": dir})
	call := model.ToolCall{CallID: params.ItemID, Name: toolExecCommand, Arguments: string(args)}
	item := protocol.CommandExecutionItem{ID: params.ItemID, Command: tools.DisplayCommand(cmd), Cwd: dir, Source: "agent",
		Status: protocol.ItemInProgress, CommandActions: params.CommandActions}
	if item.CommandActions == nil {
		item.CommandActions = commandActions(cmd)
	}
	dec, perr := protocol.ParseApprovalResponse(raw)
	if err == nil {
		err = perr
	}
	switch {
	case err != nil:
		item.Status = protocol.ItemFailed
		t.carry(t.fsm().Token(), fullauto.TurnInput{Kind: kind, Resume: &resumedCall{item: item,
			hist: callHistory(call, "The approval request failed, so the command was not run: "+err.Error())}})
		return
	case dec.Kind == protocol.DecisionDecline || dec.Kind == protocol.DecisionCancel:
		item.Status = protocol.ItemDeclined
		t.carry(t.fsm().Token(), fullauto.TurnInput{Kind: kind, Resume: &resumedCall{item: item,
			hist: callHistory(call, "The user declined to run this command. Do not retry it; continue without it or explain what you needed.")}})
		return
	}
	plan := t.planCommand(cmd, false)
	if dec.Kind == protocol.DecisionAcceptForSession && plan.sessionApprovable() {
		t.approved[approvalKey(cmd, false)] = true
	}
	req := tools.ExecRequest{Command: cmd, Dir: dir, Timeout: defaultCommandTimeout}
	plan.confine(&req)
	ctx, token := t.ctx, t.fsm().Token()
	go func() {
		res, xerr := tools.Exec(ctx, req, nil)
		t.postEvent(ctx, func() {
			out := ""
			if xerr != nil {
				item.Status, item.ExitCode, item.AggregatedOutput = protocol.ItemFailed, ptr(-1), ptr(xerr.Error())
				out = "The command could not be started: " + xerr.Error()
			} else {
				item.Status = protocol.ItemCompleted
				if res.ExitCode != 0 {
					item.Status = protocol.ItemFailed
				}
				item.ExitCode, item.AggregatedOutput, item.DurationMs = ptr(res.ExitCode), ptr(res.Output), ptr(res.Duration.Milliseconds())
				out = tools.FormatForModel(res)
			}
			t.carry(token, fullauto.TurnInput{Kind: kind, Resume: &resumedCall{item: item, hist: callHistory(call, out)}})
		})
	}()
}

// resumeCallItems adds a resumed call to the turn that carries on after a
// restart.
func (t *thread) resumeCallItems(tr *turn, rc *resumedCall) error {
	if rc.item == nil {
		t.history = append(t.history, rc.hist...)
		return nil
	}
	started := rc.item
	if ci, ok := started.(protocol.CommandExecutionItem); ok {
		ci.Status, ci.ExitCode, ci.AggregatedOutput, ci.DurationMs = protocol.ItemInProgress, nil, nil, nil
		started = ci
	}
	t.notifyItemStarted(tr, started)
	return t.commitItem(tr, rc.item, rc.hist)
}

// hiddenEntry is the model history entry of hidden input.
func hiddenEntry(text string) model.Entry { return autodrive.HiddenEntry(text) }
