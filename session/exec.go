package session

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/apserver/apserver/agenttools"
	"github.com/apserver/apserver/commandpolicy"
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
	plan    commandPlan
	// verdict is the project brain's, when it stopped the command.
	verdict *protocol.AlignmentVerdict
}

// runCommandCall runs an exec_command call: parse, judge (rules, sandbox,
// approval policy), maybe ask, then execute.
func (t *thread) runCommandCall(tr *turn, call model.ToolCall) {
	var args agenttools.ExecArgs
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
		t.toolError(tr, call, fmt.Sprintf("invalid arguments for %s: %v", call.Name, err))
		return
	}
	cmd := args.CommandLine()
	if cmd == "" {
		t.toolError(tr, call, "invalid arguments: cmd must be a non-empty string")
		return
	}
	if text, ok := agenttools.PatchCommand(cmd); ok && args.Workdir == "" && !t.readOnlyTurn() {
		t.applyPatchText(tr, call, text)
		return
	}
	dir := args.Dir(t.settings.Cwd)
	run := &commandRun{call: call, command: cmd, dir: dir, timeout: args.Timeout(defaultCommandTimeout, maxCommandTimeout)}
	run.item = protocol.CommandExecutionItem{
		ID:             t.uniqueItemID(call.CallID),
		Command:        tools.DisplayCommand(cmd),
		Cwd:            dir,
		Source:         "agent",
		Status:         protocol.ItemInProgress,
		CommandActions: commandpolicy.CommandActions(cmd),
	}
	run.plan = t.planCommand(cmd, args.SandboxPermissions == "require_escalated")
	if run.plan.refuse == "" && t.alignCommand(tr, run, args.Justification) {
		return // judged first; proceedCommand goes on (brainhook.go)
	}
	t.proceedCommand(tr, run, args.Justification)
}

// proceedCommand refuses, asks about or runs a planned command.
func (t *thread) proceedCommand(tr *turn, run *commandRun, justification string) {
	switch {
	case run.plan.refuse != "":
		t.notifyItemStarted(tr, run.item)
		t.finishCommand(tr, run, protocol.ItemDeclined, "Not run: "+run.plan.refuse)
	case run.plan.ask:
		t.askApproval(tr, run, justification)
	default:
		t.notifyItemStarted(tr, run.item)
		t.startExec(tr, run)
	}
}

func (t *thread) notifyItemStarted(tr *turn, item protocol.ThreadItem) {
	t.notify(protocol.NotifyItemStarted, protocol.ItemStartedNotification{Item: item, ThreadID: t.id, TurnID: tr.id, StartedAtMs: t.nowMs()})
}

// askApproval sends item/commandExecution/requestApproval. Codex's order for
// commands: the waitingOnApproval status first, then item/started, then the
// request.
func (t *thread) askApproval(tr *turn, run *commandRun, reason string) {
	req := t.commandRequest(tr.id, run, reason)
	if raw, ok := t.autoAnswer(tr, req); ok {
		t.notifyItemStarted(tr, run.item)
		t.onApproval(tr, run, -1, raw, nil)
		return
	}
	t.setStatus(protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{protocol.FlagWaitingOnApproval}})
	t.notifyItemStarted(tr, run.item)
	t.sendRequest(tr, req, func(id int64, raw json.RawMessage, err error) { t.onApproval(tr, run, id, raw, err) })
}

// commandRequest is the approval request for a planned command; full
// auto's rules judge it by its Rule, Sandboxed, Escalated and Opaque.
func (t *thread) commandRequest(turnID string, run *commandRun, reason string) serverRequest {
	params := protocol.CommandApprovalParams{
		ThreadID: t.id, TurnID: turnID, ItemID: run.item.ID, StartedAtMs: t.nowMs(),
		Kind: "command", Command: ptr(run.item.Command), Cwd: ptr(run.dir),
		CommandActions: run.item.CommandActions,
	}
	run.plan.policy().Request(&params, run.command, reason)
	return serverRequest{Method: protocol.RequestCommandApproval, Params: params, Kind: "command", Command: run.command,
		Rule: run.plan.ruleDecision(), RuleName: run.plan.ruleName(), Sandboxed: run.plan.sandboxed(),
		Escalated: run.plan.escalated, Opaque: run.plan.opaque(), Privileged: run.plan.privileged()}
}

func (tr *turn) dropRequest(id int64) {
	for i, r := range tr.requests {
		if r == id {
			tr.requests = append(tr.requests[:i], tr.requests[i+1:]...)
			return
		}
	}
}

// onApproval acts on the client's answer (protocol/codex/CORE.md §8).
func (t *thread) onApproval(tr *turn, run *commandRun, reqID int64, raw json.RawMessage, callErr error) {
	t.resolved(reqID)
	dec, err := approvalAnswer(raw, callErr)
	if err != nil {
		t.m.log.Warn("approval answer unusable; command not run", "thread", t.id, "item", run.item.ID, "err", err)
		t.finishCommand(tr, run, protocol.ItemFailed, "The approval request failed, so the command was not run: "+err.Error())
		return
	}
	if v := run.verdict; v != nil && dec.Kind != protocol.DecisionDecline && dec.Kind != protocol.DecisionCancel {
		run.verdict = nil // recorded first, then on as approved (brainhook.go)
		t.alignmentApproved(tr, protocol.AlignmentAction{Kind: protocol.ActionCommand, Command: run.command}, *v,
			func() { t.onApproval(tr, run, -1, raw, nil) })
		return
	}
	switch dec.Kind {
	case protocol.DecisionAccept, protocol.DecisionAcceptWithExecpolicyAmendment, protocol.DecisionApplyNetworkPolicyAmendment:
		t.startExec(tr, run)
	case protocol.DecisionAcceptForSession:
		// Only where the request offered it: a forbidden, privileged or
		// opaque command is approved once, never for the session.
		if run.plan.sessionApprovable() {
			t.approved[approvalKey(run.command, run.plan.escalated)] = true
		}
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
func (t *thread) finishCommand(tr *turn, run *commandRun, status protocol.ItemStatus, modelMsg string) {
	if t.finishCommandOnly(tr, run, status, modelMsg) {
		t.runNextCall(tr)
	}
}

func (t *thread) finishCommandOnly(tr *turn, run *commandRun, status protocol.ItemStatus, modelMsg string) bool {
	run.item.Status = status
	if err := t.commitItem(tr, run.item, agenttools.CallHistory(run.call, modelMsg)); err != nil {
		t.failTurn(tr, err)
		return false
	}
	return true
}

// startExec runs the command in a child goroutine that streams its output
// back as events.
func (t *thread) startExec(tr *turn, run *commandRun) {
	run.started = t.m.clock.Now()
	ctx := tr.ctx
	req := tools.ExecRequest{Command: run.command, Dir: run.dir, Timeout: run.timeout}
	run.plan.confine(&req)
	// tools.Exec refuses a missing or non-directory workdir with an error,
	// which onCommandDone reports to the model as a failed command.
	go func() {
		defer t.childRecover(ctx, tr) // a panic fails the turn (panics.go)
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
	t.restamp(tr)
	if err != nil {
		run.item.ExitCode = ptr(-1)
		run.item.AggregatedOutput = ptr(err.Error())
		run.item.DurationMs = ptr(t.m.clock.Now().Sub(run.started).Milliseconds())
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
