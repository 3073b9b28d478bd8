package autodrive

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/apserver/apserver/agenttools"
	"github.com/apserver/apserver/commandpolicy"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/tools"
)

// Full auto across a restart. A drive that was running or waiting when
// apserver stopped (even by kill -9) comes back when the client has
// initialized: a request it was waiting on is sent again with the same id,
// and answering it carries the drive on in a new turn (the interrupted one
// cannot resume); a drive that was between or inside turns goes on with a
// new turn, or waits paused, as full_auto.on_restart says.

// Call is a request sent to the client.
type Call interface {
	// ID is the request's JSON-RPC id.
	ID() int64
	// Wait blocks until the client answers, ctx ends, or the connection
	// closes.
	Wait(ctx context.Context) (json.RawMessage, error)
}

// ResumedCall is a tool call that was waiting for approval when apserver
// stopped, with its outcome: the item to show (nil for none) and the
// history it adds. It is a TurnInput's Resume.
type ResumedCall struct {
	Item protocol.ThreadItem
	Hist []model.Entry
}

// CallHistory is the model history of a tool call and its output.
func CallHistory(call model.ToolCall, output string) []model.Entry {
	return []model.Entry{
		{Kind: model.EntryToolCall, CallID: call.CallID, Name: call.Name, Arguments: call.Arguments, Custom: call.Custom},
		{Kind: model.EntryToolOutput, CallID: call.CallID, Output: output, Custom: call.Custom},
	}
}

// Restore brings the drive back after a restart, once: the requests it
// waited on are resent, or it goes on, or waits paused, as
// full_auto.on_restart says. busy: a turn runs (then it does nothing).
func (d *Drive) Restore(busy bool) {
	if d.restored {
		return
	}
	d.restored = true
	fsm := d.Machine()
	if !fsm.Drive().Active() || busy {
		return
	}
	db, err := d.env.Store()
	if err != nil {
		return
	}
	stored, err := db.PendingRequests(d.th.Context(), d.th.ID())
	if err != nil {
		d.env.Log.Error("full auto: reading pending requests", "thread", d.th.ID(), "err", err)
	}
	var pend []fullauto.Pending
	d.resend = map[int64]store.PendingRequest{}
	for _, p := range stored {
		var rd ResumeData
		if len(p.Resume) > 0 {
			_ = json.Unmarshal(p.Resume, &rd)
		}
		pend = append(pend, fullauto.Pending{ID: p.RequestID, TurnID: rd.TurnID, Kind: rd.Kind, Command: rd.Command})
		d.resend[p.RequestID] = p
	}
	if len(pend) > 0 {
		d.env.Log.Info("full auto: re-sending the requests the run waits on", "thread", d.th.ID(), "requests", len(pend))
	} else if d.env.Config.OnRestart != config.OnRestartPaused {
		d.env.Log.Info("full auto: run goes on after a restart", "thread", d.th.ID())
	}
	d.Do(fullauto.Restore{Pending: pend}, nil)
}

// resendStored sends a stored pending request again, under its old id
// when the client allows it (Thread.Ask), and waits for its answer, the
// client's or the thread port's, at most the drive's approval timeout.
func (d *Drive) resendStored(e fullauto.Resend) {
	p, ok := d.resend[e.Request]
	if !ok {
		return
	}
	delete(d.resend, e.Request)
	var rd ResumeData
	if len(p.Resume) > 0 {
		_ = json.Unmarshal(p.Resume, &rd)
	}
	call := d.th.Ask(p)
	id := call.ID()
	if id != p.RequestID {
		// Store it under the id the client now knows.
		d.DropPending(p.RequestID)
		d.Do(fullauto.RequestMoved{Old: p.RequestID, ID: id}, nil)
		p.RequestID = id
		if db, err := d.env.Store(); err == nil {
			_ = db.PutPendingRequest(context.WithoutCancel(d.th.Context()), p)
		}
	}
	key := AttnKey{d.th.ID(), AttentionKind(rd.Kind), id}
	d.env.Attention.Set(key, protocol.AttentionItem{ThreadID: d.th.ID(), Kind: key.Kind, Reason: "answer the request sent before the restart", SinceMs: d.Now()})
	timeout := time.Duration(e.TimeoutMs) * time.Millisecond
	ctx := d.th.Context()
	// The thread port may answer it too.
	pctx, portAnswer, release := d.th.Await(id, p.Method, p.Params)
	go func() {
		defer release()
		wctx, cancel := context.WithCancelCause(pctx)
		if timeout > 0 {
			timer := d.env.Clock.AfterFunc(timeout, func() { cancel(ErrRequestTimeout) })
			defer timer.Stop()
		}
		raw, err := call.Wait(wctx)
		select {
		case a := <-portAnswer:
			raw, err = a, nil
		default:
		}
		timedOut := err != nil && ctx.Err() == nil && errors.Is(context.Cause(wctx), ErrRequestTimeout)
		cancel(context.Canceled)
		d.env.Attention.Clear(key)
		if ctx.Err() != nil {
			return // shutting down: the request stays stored for the next start
		}
		d.th.Post(ctx, func() { d.resentAnswered(p, rd, id, raw, err, timedOut) })
	}()
}

// resentAnswered acts on the answer to a request re-sent after a restart:
// the drive goes on in a new turn that starts with the outcome of the
// request (the approved command's run, the declined command, the answer to
// the question).
func (d *Drive) resentAnswered(p store.PendingRequest, rd ResumeData, id int64, raw json.RawMessage, err error, timedOut bool) {
	d.th.Answered(id)
	fsm := d.Machine()
	var c fullauto.CarryOn
	var carry bool
	d.Do(fullauto.ResentAnswered{ID: id, Settled: fullauto.Settled{TimedOut: timedOut, Declined: !timedOut && Declined(raw, err)}}, func(effs []fullauto.Effect) {
		c, carry = Answer[fullauto.CarryOn](effs)
	})
	if !carry {
		return
	}
	kind := c.Kind
	switch p.Method {
	case protocol.RequestCommandApproval:
		var params protocol.CommandApprovalParams
		_ = json.Unmarshal(p.Params, &params)
		d.resumeCommand(params, rd.Command, raw, err, kind)
	case protocol.RequestUserInput:
		var params protocol.ToolRequestUserInputParams
		_ = json.Unmarshal(p.Params, &params)
		out := string(raw)
		if err != nil {
			out = "request_user_input: the user did not answer: " + err.Error()
		}
		args, _ := json.Marshal(map[string]any{"questions": params.Questions})
		call := model.ToolCall{CallID: params.ItemID, Name: agenttools.RequestUserInput, Arguments: string(args)}
		d.Carry(fsm.Token(), fullauto.TurnInput{Kind: kind, Resume: &ResumedCall{Hist: CallHistory(call, out)}})
	default:
		answer := "no usable answer"
		if dec, perr := protocol.ParseApprovalResponse(raw); err == nil && perr == nil {
			answer = string(dec.Kind)
		}
		d.Carry(fsm.Token(), fullauto.TurnInput{Kind: kind, Hidden: fullauto.FileChangeRestartText(answer, fsm.Drive().Objective)})
	}
}

// Carry starts the turn that carries a drive on, if the drive is still as
// it was at token.
func (d *Drive) Carry(token int, in fullauto.TurnInput) {
	d.Do(fullauto.Carry{Token: token, Input: in}, nil)
}

// resumeCommand runs an approved command (or records it declined) and
// starts the turn that carries on with its result.
func (d *Drive) resumeCommand(params protocol.CommandApprovalParams, cmd string, raw json.RawMessage, err error, kind string) {
	dir := d.th.Cwd()
	if params.Cwd != nil && *params.Cwd != "" {
		dir = *params.Cwd
	}
	args, _ := json.Marshal(map[string]string{"cmd": cmd, "workdir": dir})
	call := model.ToolCall{CallID: params.ItemID, Name: agenttools.ExecCommand, Arguments: string(args)}
	item := protocol.CommandExecutionItem{ID: params.ItemID, Command: tools.DisplayCommand(cmd), Cwd: dir, Source: "agent",
		Status: protocol.ItemInProgress, CommandActions: params.CommandActions}
	if item.CommandActions == nil {
		item.CommandActions = commandpolicy.CommandActions(cmd)
	}
	dec, perr := protocol.ParseApprovalResponse(raw)
	if err == nil {
		err = perr
	}
	switch {
	case err != nil:
		item.Status = protocol.ItemFailed
		d.Carry(d.Machine().Token(), fullauto.TurnInput{Kind: kind, Resume: &ResumedCall{Item: item,
			Hist: CallHistory(call, "The approval request failed, so the command was not run: "+err.Error())}})
		return
	case dec.Kind == protocol.DecisionDecline || dec.Kind == protocol.DecisionCancel:
		item.Status = protocol.ItemDeclined
		d.Carry(d.Machine().Token(), fullauto.TurnInput{Kind: kind, Resume: &ResumedCall{Item: item,
			Hist: CallHistory(call, "The user declined to run this command. Do not retry it; continue without it or explain what you needed.")}})
		return
	}
	token := d.Machine().Token()
	d.th.RunApproved(cmd, dir, dec.Kind == protocol.DecisionAcceptForSession, func(res tools.ExecResult, xerr error) {
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
		d.Carry(token, fullauto.TurnInput{Kind: kind, Resume: &ResumedCall{Item: item, Hist: CallHistory(call, out)}})
	})
}

func ptr[T any](v T) *T { return &v }
