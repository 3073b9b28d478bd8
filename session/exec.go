package session

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tools"
)

// commandRun is one exec_command call on its way through approval and
// execution; owned by the thread goroutine.
type commandRun struct {
	call    model.ToolCall
	command string
	dir     string
	timeout time.Duration
	item    protocol.CommandExecutionItem
	started time.Time
}

// runNextCall takes the next tool call of the response and runs it.
func (t *thread) runNextCall(tr *turn) {
	if len(tr.calls) == 0 {
		t.afterCalls(tr)
		return
	}
	call := tr.calls[0]
	tr.calls = tr.calls[1:]
	if call.Name != toolExecCommand && call.Name != "shell" && call.Name != "shell_command" && call.Name != "bash" {
		t.toolError(tr, call, fmt.Sprintf("unknown tool %q; the available tool is %s", call.Name, toolExecCommand))
		return
	}
	var args execArgs
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
		t.toolError(tr, call, fmt.Sprintf("invalid arguments for %s: %v", call.Name, err))
		return
	}
	cmd := args.command()
	if cmd == "" {
		t.toolError(tr, call, "invalid arguments: cmd must be a non-empty string")
		return
	}
	dir := t.settings.Cwd
	if args.Workdir != "" {
		if filepath.IsAbs(args.Workdir) {
			dir = filepath.Clean(args.Workdir)
		} else {
			dir = filepath.Join(t.settings.Cwd, args.Workdir)
		}
	}
	timeout := defaultCommandTimeout
	if args.TimeoutMs > 0 {
		timeout = min(time.Duration(args.TimeoutMs)*time.Millisecond, maxCommandTimeout)
	}
	run := &commandRun{call: call, command: cmd, dir: dir, timeout: timeout}
	run.item = protocol.CommandExecutionItem{
		ID:             t.uniqueItemID(call.CallID),
		Command:        tools.DisplayCommand(cmd),
		Cwd:            dir,
		Source:         "agent",
		Status:         protocol.ItemInProgress,
		CommandActions: commandActions(cmd),
	}
	if t.needsApproval(cmd, args) {
		t.askApproval(tr, run, args.Justification)
		return
	}
	t.notifyItemStarted(tr, run.item)
	t.startExec(tr, run)
}

func (t *thread) notifyItemStarted(tr *turn, item protocol.ThreadItem) {
	t.notify(protocol.NotifyItemStarted, protocol.ItemStartedNotification{Item: item, ThreadID: t.id, TurnID: tr.id, StartedAtMs: time.Now().UnixMilli()})
}

// toolError answers a tool call the agent got wrong; the model sees the
// message and the turn goes on.
func (t *thread) toolError(tr *turn, call model.ToolCall, msg string) {
	t.history = append(t.history,
		model.Entry{Kind: model.EntryToolCall, CallID: call.CallID, Name: call.Name, Arguments: call.Arguments},
		model.Entry{Kind: model.EntryToolOutput, CallID: call.CallID, Output: msg})
	t.runNextCall(tr)
}

func commandActions(cmd string) []protocol.CommandAction {
	acts := tools.ParseCommandActions(cmd)
	out := make([]protocol.CommandAction, 0, len(acts))
	for _, a := range acts {
		pa := protocol.CommandAction{Type: a.Type, Command: a.Command, Name: a.Name}
		switch a.Type {
		case "read":
			pa.Path = ptr(a.Path)
		case "listFiles":
			if a.Path != "" {
				pa.Path = ptr(a.Path)
			}
		case "search":
			if a.Path != "" {
				pa.Path = ptr(a.Path)
			}
			if a.Query != "" {
				pa.Query = ptr(a.Query)
			}
		}
		out = append(out, pa)
	}
	return out
}

// needsApproval applies the thread's approval policy to a command.
//
//   - never: run everything without asking.
//   - untrusted: ask for anything that is not a known read-only command.
//   - on-request: ask when the model requests escalation, and, since this
//     build does not yet confine commands with a kernel sandbox, for any
//     command that is not known read-only unless the thread runs with
//     danger-full-access.
//
// A command accepted "for session" runs without asking again.
func (t *thread) needsApproval(cmd string, args execArgs) bool {
	if t.approved[cmd] {
		return false
	}
	switch t.settings.ApprovalPolicy {
	case protocol.ApprovalNever:
		return false
	case protocol.ApprovalUntrusted:
		return !tools.IsKnownSafe(cmd)
	default:
		if args.SandboxPermissions == "require_escalated" {
			return true
		}
		if t.settings.Sandbox == protocol.SandboxDangerFullAccess {
			return false
		}
		return !tools.IsKnownSafe(cmd)
	}
}

// askApproval sends item/commandExecution/requestApproval. Codex's order for
// commands: the waitingOnApproval status first, then item/started, then the
// request.
func (t *thread) askApproval(tr *turn, run *commandRun, reason string) {
	t.setStatus(protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{protocol.FlagWaitingOnApproval}})
	t.notifyItemStarted(tr, run.item)
	params := protocol.CommandApprovalParams{
		ThreadID: t.id, TurnID: tr.id, ItemID: run.item.ID, StartedAtMs: time.Now().UnixMilli(),
		Kind: "command", Command: ptr(run.item.Command), Cwd: ptr(run.dir),
		CommandActions: run.item.CommandActions, ProposedExecpolicyAmendment: proposedPrefix(run.command),
	}
	if reason != "" {
		params.Reason = ptr(reason)
	}
	call := t.m.client.Call(protocol.RequestCommandApproval, params)
	id := call.ID()
	tr.requests = append(tr.requests, id)
	ctx := tr.ctx
	go func() {
		raw, err := call.Wait(ctx)
		t.postEvent(ctx, func() { t.onApproval(tr, run, id, raw, err) })
	}()
}

func (tr *turn) dropRequest(id int64) {
	for i, r := range tr.requests {
		if r == id {
			tr.requests = append(tr.requests[:i], tr.requests[i+1:]...)
			return
		}
	}
}

// onApproval acts on the client's answer (CORE.md §8).
func (t *thread) onApproval(tr *turn, run *commandRun, reqID int64, raw json.RawMessage, callErr error) {
	if t.turn != tr {
		return
	}
	tr.dropRequest(reqID)
	t.notify(protocol.NotifyServerRequestResolved, protocol.ServerRequestResolvedNotification{ThreadID: t.id, RequestID: reqID})
	t.setStatus(protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{}})
	var dec protocol.ApprovalDecision
	err := callErr
	if err == nil {
		dec, err = protocol.ParseApprovalResponse(raw)
	}
	if err != nil {
		t.m.log.Warn("approval answer unusable; command not run", "thread", t.id, "item", run.item.ID, "err", err)
		t.finishCommand(tr, run, protocol.ItemFailed, "The approval request failed, so the command was not run: "+err.Error())
		return
	}
	switch dec.Kind {
	case protocol.DecisionAccept, "acceptWithExecpolicyAmendment", "applyNetworkPolicyAmendment":
		t.startExec(tr, run)
	case protocol.DecisionAcceptForSession:
		t.approved[run.command] = true
		t.startExec(tr, run)
	case protocol.DecisionDecline:
		t.finishCommand(tr, run, protocol.ItemDeclined, "The user declined to run this command. Do not retry it; continue without it or explain what you needed.")
	case protocol.DecisionCancel:
		if !t.finishCommandOnly(tr, run, protocol.ItemDeclined, "The user cancelled this command and stopped the turn.") {
			return
		}
		t.completeTurn(tr, protocol.TurnInterrupted, nil)
	}
}

// finishCommand completes a command item that did not run, then goes on.
func (t *thread) finishCommand(tr *turn, run *commandRun, status, modelMsg string) {
	if t.finishCommandOnly(tr, run, status, modelMsg) {
		t.runNextCall(tr)
	}
}

func (t *thread) finishCommandOnly(tr *turn, run *commandRun, status, modelMsg string) bool {
	run.item.Status = status
	hist := []model.Entry{
		{Kind: model.EntryToolCall, CallID: run.call.CallID, Name: run.call.Name, Arguments: run.call.Arguments},
		{Kind: model.EntryToolOutput, CallID: run.call.CallID, Output: modelMsg},
	}
	if err := t.commitItem(tr, run.item, hist); err != nil {
		t.failTurn(tr, err)
		return false
	}
	return true
}

// startExec runs the command in a child goroutine that streams its output
// back as events.
func (t *thread) startExec(tr *turn, run *commandRun) {
	run.started = time.Now()
	ctx := tr.ctx
	req := tools.ExecRequest{Command: run.command, Dir: run.dir, Timeout: run.timeout}
	// tools.Exec refuses a missing or non-directory workdir with an error,
	// which onCommandDone reports to the model as a failed command.
	go func() {
		res, err := tools.Exec(ctx, req, func(b []byte) {
			t.postEvent(ctx, func() { t.onCommandOutput(tr, run, b) })
		})
		t.postEvent(ctx, func() { t.onCommandDone(tr, run, res, err) })
	}()
}

func (t *thread) onCommandOutput(tr *turn, run *commandRun, b []byte) {
	if t.turn != tr {
		return
	}
	t.notify(protocol.NotifyCommandOutputDelta, protocol.DeltaNotification{ThreadID: t.id, TurnID: tr.id, ItemID: run.item.ID, Delta: string(b)})
}

func (t *thread) onCommandDone(tr *turn, run *commandRun, res tools.ExecResult, err error) {
	if t.turn != tr {
		return
	}
	if err != nil {
		run.item.ExitCode = ptr(-1)
		run.item.AggregatedOutput = ptr(err.Error())
		run.item.DurationMs = ptr(time.Since(run.started).Milliseconds())
		t.finishCommand(tr, run, protocol.ItemFailed, "The command could not be started: "+err.Error())
		return
	}
	run.item.ExitCode = ptr(res.ExitCode)
	run.item.AggregatedOutput = ptr(res.Output)
	run.item.DurationMs = ptr(res.Duration.Milliseconds())
	status := protocol.ItemCompleted
	if res.ExitCode != 0 {
		status = protocol.ItemFailed
	}
	t.finishCommand(tr, run, status, tools.FormatForModel(res))
}

// proposedPrefix suggests an allow-rule prefix for a command: its program
// and first argument, when the command is a single simple one.
func proposedPrefix(cmd string) []string {
	for _, c := range []string{"&&", "||", ";", "|", "$(", "`", ">", "<", "\n"} {
		if strings.Contains(cmd, c) {
			return nil
		}
	}
	f := strings.Fields(cmd)
	if len(f) > 2 {
		f = f[:2]
	}
	return f
}
