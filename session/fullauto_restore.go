package session

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/tools"
)

// Full auto across a restart. A run that was running or waiting when
// apserver stopped (even by kill -9) comes back when the client has
// initialized: a request it was waiting on is sent again with the same id,
// and answering it carries the run on in a new turn (the interrupted one
// cannot resume); a run that was between or inside turns goes on with a new
// turn, or waits paused, as full_auto.on_restart says.

// callerWithID is a Client that can re-send a request under an old id
// (server's client does).
type callerWithID interface {
	CallWithID(id int64, method string, params any) ClientCall
}

// RestoreFullAuto brings back the runs that were going when apserver last
// stopped. The server calls it once the client has initialized; later
// calls do nothing.
func (m *Manager) RestoreFullAuto() {
	m.fa.restoreOnce.Do(func() { go m.restoreRuns() })
}

func (m *Manager) restoreRuns() {
	db, err := m.store()
	if err != nil {
		return
	}
	runs, err := db.Runs(m.ctx, string(protocol.FullAutoRunning), string(protocol.FullAutoWaiting))
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
		t.post(t.restoreRun)
	}
}

// restartText is the hidden input of the turn a restarted run goes on with.
func restartText(objective string) string {
	return "apserver restarted while this run was in progress; the last turn was interrupted. " +
		"Check the state of the workspace, then continue working toward the objective:\n" + objective + "\n\n" +
		"When the objective is fully achieved and verified (tests pass), say \"The task is complete.\""
}

// restoreRun runs on the thread goroutine after a restart.
func (t *thread) restoreRun() {
	r := t.ensureRun()
	if !r.active() || t.turn != nil {
		return
	}
	t.auto.runningSince = time.Now()
	db, err := t.m.store()
	if err != nil {
		return
	}
	pend, err := db.PendingRequests(t.ctx, t.id)
	if err != nil {
		t.m.log.Error("full auto: reading pending requests", "thread", t.id, "err", err)
	}
	if len(pend) > 0 {
		t.m.log.Info("full auto: re-sending the requests the run waits on", "thread", t.id, "requests", len(pend))
		if r.State != protocol.FullAutoWaiting {
			t.setRunState(protocol.FullAutoWaiting, "waiting on a request sent before the restart", controller.StopNone)
		} else {
			t.announceRun()
		}
		for _, p := range pend {
			t.resend(p)
		}
		return
	}
	if t.m.opts.Config.FullAuto.OnRestart == config.OnRestartPaused {
		t.setRunState(protocol.FullAutoPaused, "apserver restarted", controller.StopWaitingOnHuman)
		return
	}
	t.m.log.Info("full auto: run goes on after a restart", "thread", t.id)
	if r.State != protocol.FullAutoRunning {
		t.setRunState(protocol.FullAutoRunning, "apserver restarted", controller.StopNone)
	} else {
		t.announceRun()
	}
	t.startRunTurn(autoTurnInput{kind: controller.KindNormal, hidden: restartText(r.Objective)}, "")
}

// resend sends a stored pending request again, under its old id when the
// client allows it.
func (t *thread) resend(p store.PendingRequest) {
	var rd resumeData
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
		t.dropPending(p.RequestID)
		p.RequestID = id
		if db, err := t.m.store(); err == nil {
			_ = db.PutPendingRequest(context.WithoutCancel(t.ctx), p)
		}
	}
	if t.auto.pending == nil {
		t.auto.pending = map[int64]*pendingRequest{}
	}
	t.auto.pending[id] = &pendingRequest{turnID: rd.TurnID, kind: rd.Kind, prefix: commandPrefix(rd.Command)}
	key := attnKey{t.id, attentionKind(rd.Kind), id}
	t.m.fa.attn.set(key, protocol.AttentionItem{ThreadID: t.id, Kind: key.kind, Reason: "answer the request sent before the restart", SinceMs: nowMs()})
	timeout := time.Duration(t.auto.run.ApprovalTimeoutMs) * time.Millisecond
	ctx := t.ctx
	go func() {
		wctx, cancel := context.WithCancelCause(ctx)
		if timeout > 0 {
			timer := time.AfterFunc(timeout, func() { cancel(errRequestTimeout) })
			defer timer.Stop()
		}
		raw, err := call.Wait(wctx)
		timedOut := err != nil && ctx.Err() == nil && errors.Is(context.Cause(wctx), errRequestTimeout)
		cancel(context.Canceled)
		t.m.fa.attn.clear(key)
		t.postEvent(ctx, func() { t.resentAnswered(p, rd, id, raw, err, timedOut) })
	}()
}

// resentAnswered acts on the answer to a request re-sent after a restart:
// the run goes on in a new turn that starts with the outcome of the
// request (the approved command's run, the declined command, the answer to
// the question).
func (t *thread) resentAnswered(p store.PendingRequest, rd resumeData, id int64, raw json.RawMessage, err error, timedOut bool) {
	t.notify(protocol.NotifyServerRequestResolved, protocol.ServerRequestResolvedNotification{ThreadID: t.id, RequestID: id})
	if t.auto.pending[id] == nil {
		return
	}
	t.dropPending(id)
	r := t.auto.run
	if !r.active() {
		return
	}
	if timedOut {
		cond := controller.StopApprovalTimeout
		if r.OnTimeout == protocol.OnTimeoutStop {
			t.setRunState(protocol.FullAutoStopped, "the request sent before the restart was not answered in time", cond)
		} else {
			t.setRunState(protocol.FullAutoPaused, "the request sent before the restart was not answered in time", cond)
		}
		return
	}
	if r.State == protocol.FullAutoWaiting && len(t.auto.pending) == 0 {
		t.setRunState(protocol.FullAutoRunning, "", controller.StopNone)
	}
	kind := r.LastKind
	if kind == "" {
		kind = controller.KindNormal
	}
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
		t.startRunTurn(autoTurnInput{kind: kind, resume: &resumedCall{hist: callHistory(call, out)}}, "")
	default:
		answer := "no usable answer"
		if d, perr := protocol.ParseApprovalResponse(raw); err == nil && perr == nil {
			answer = d.Kind
		}
		t.startRunTurn(autoTurnInput{kind: kind, hidden: "apserver restarted while your file change waited for approval, so it was not applied. " +
			"The user's answer to it: " + answer + ". If it was accepted and is still needed, make the change again; otherwise go on without it.\n\n" +
			"Objective:\n" + r.Objective}, "")
	}
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
func (t *thread) resumeCommand(params protocol.CommandApprovalParams, rd resumeData, raw json.RawMessage, err error, kind string) {
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
		t.startRunTurn(autoTurnInput{kind: kind, resume: &resumedCall{item: item,
			hist: callHistory(call, "The approval request failed, so the command was not run: "+err.Error())}}, "")
		return
	case dec.Kind == protocol.DecisionDecline || dec.Kind == protocol.DecisionCancel:
		if r := t.auto.run; r != nil {
			if r.Denials == nil {
				r.Denials = map[string]int{}
			}
			r.Denials[commandPrefix(cmd)]++
			t.saveRun()
		}
		item.Status = protocol.ItemDeclined
		t.startRunTurn(autoTurnInput{kind: kind, resume: &resumedCall{item: item,
			hist: callHistory(call, "The user declined to run this command. Do not retry it; continue without it or explain what you needed.")}}, "")
		return
	}
	if dec.Kind == protocol.DecisionAcceptForSession {
		t.approved[cmd] = true
	}
	req := tools.ExecRequest{Command: cmd, Dir: dir, Timeout: defaultCommandTimeout}
	t.planCommand(cmd, false).confine(&req)
	ctx, epoch := t.ctx, t.auto.epoch
	go func() {
		res, xerr := tools.Exec(ctx, req, nil)
		t.postEvent(ctx, func() {
			if t.auto.epoch != epoch {
				return
			}
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
			t.startRunTurn(autoTurnInput{kind: kind, resume: &resumedCall{item: item, hist: callHistory(call, out)}}, "")
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
func hiddenEntry(text string) model.Entry { return model.Entry{Kind: model.EntryUser, Text: text} }
