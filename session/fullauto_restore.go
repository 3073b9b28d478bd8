package session

import (
	"context"
	"encoding/json"

	"github.com/apserver/apserver/autodrive"
	"github.com/apserver/apserver/commandpolicy"
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

// restoreDrive runs on the thread goroutine after a restart
// (autodrive.Drive.Restore).
func (t *thread) restoreDrive() { t.autod().Restore(t.turn != nil) }

// Ask sends a stored request again, under its old id when the client
// allows it (autodrive.Thread).
func (a autoThread) Ask(p store.PendingRequest) autodrive.Call {
	if c, ok := a.t.m.client.(callerWithID); ok {
		return c.CallWithID(p.RequestID, p.Method, p.Params)
	}
	return a.t.m.client.Call(p.Method, p.Params)
}

// Await lets the thread port answer a resent request too (threads.go).
func (a autoThread) Await(id int64, method string, params json.RawMessage) (context.Context, <-chan json.RawMessage, func()) {
	t := a.t
	pctx, pcancel := context.WithCancel(t.ctx)
	pa := portAnswer{answer: make(chan json.RawMessage, 1), cancel: pcancel, done: pctx.Done()}
	t.portAnswers[id] = pa
	t.m.watchers.publish(port.RequestAsked{ThreadID: t.id, RequestID: id, Method: method, Params: params})
	return pctx, pa.answer, pcancel
}

// Answered: a resent request has its answer.
func (a autoThread) Answered(id int64) {
	delete(a.t.portAnswers, id)
	a.t.notify(protocol.NotifyServerRequestResolved, protocol.ServerRequestResolvedNotification{ThreadID: a.t.id, RequestID: id})
}

// CommandActions is what a command does, as its item shows it.
func (a autoThread) CommandActions(command string) []protocol.CommandAction {
	return commandpolicy.CommandActions(command)
}

// RunApproved runs an approved command, resent after a restart, under the
// thread's command policy (as it would have run), and calls done with its
// result on the thread goroutine.
func (a autoThread) RunApproved(command, dir string, forSession bool, done func(tools.ExecResult, error)) {
	t := a.t
	plan := t.planCommand(command, false)
	if forSession && plan.sessionApprovable() {
		t.approved[approvalKey(command, false)] = true
	}
	req := tools.ExecRequest{Command: command, Dir: dir, Timeout: defaultCommandTimeout}
	plan.confine(&req)
	ctx := t.ctx
	go func() {
		res, err := tools.Exec(ctx, req, nil)
		t.postEvent(ctx, func() { done(res, err) })
	}()
}

// resumedCall is a call carried over a restart (autodrive.ResumedCall).
type resumedCall = autodrive.ResumedCall

// resumeCallItems adds a resumed call to the turn that carries on after a
// restart.
func (t *thread) resumeCallItems(tr *turn, rc *resumedCall) error {
	if rc.Item == nil {
		t.history = append(t.history, rc.Hist...)
		return nil
	}
	started := rc.Item
	if ci, ok := started.(protocol.CommandExecutionItem); ok {
		ci.Status, ci.ExitCode, ci.AggregatedOutput, ci.DurationMs = protocol.ItemInProgress, nil, nil, nil
		started = ci
	}
	t.notifyItemStarted(tr, started)
	return t.commitItem(tr, rc.Item, rc.Hist)
}
