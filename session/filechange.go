package session

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apserver/apserver/agenttools"
	"github.com/apserver/apserver/commandpolicy"
	"github.com/apserver/apserver/filechange"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tools/files"
)

// fileRun is one file-changing tool call (apply_patch, edit_file,
// write_file) on its way through approval and commit; owned by the thread
// goroutine.
type fileRun struct {
	call    model.ToolCall
	ws      *files.Workspace
	changes []files.Change
	item    protocol.FileChangeItem
	inside  bool // every path is inside the writable roots
	// verdict is the project brain's, when it stopped the change.
	verdict *protocol.AlignmentVerdict
	action  protocol.AlignmentAction
}

// workspace is the thread's file-tool view of its cwd: writes confined to
// the cwd and the configured writable roots.
func (t *thread) workspace() (*files.Workspace, error) { return t.judge().workspace() }

// runPatchCall handles apply_patch: the free-form call carries the patch
// itself; the function form carries {"input": patch}.
func (t *thread) runPatchCall(tr *turn, call model.ToolCall) {
	text := call.Arguments
	if !call.Custom {
		var a struct {
			Input string `json:"input"`
			Patch string `json:"patch"`
		}
		if err := json.Unmarshal([]byte(call.Arguments), &a); err != nil {
			t.toolError(tr, call, "apply_patch: invalid arguments: "+err.Error()+`; pass {"input": "*** Begin Patch\n…\n*** End Patch"}`)
			return
		}
		text = a.Input
		if text == "" {
			text = a.Patch
		}
	}
	t.applyPatchText(tr, call, text)
}

// applyPatchText parses and applies a patch in memory, then proposes the
// changes (fileChange item, approval, commit).
func (t *thread) applyPatchText(tr *turn, call model.ToolCall, text string) {
	ws, err := t.workspace()
	if err != nil {
		t.toolError(tr, call, "apply_patch: "+err.Error())
		return
	}
	changes, err := filechange.FromPatch(ws, text)
	if err != nil {
		t.toolError(tr, call, "apply_patch: "+err.Error())
		return
	}
	t.proposeChanges(tr, call, ws, changes)
}

// runEditCall handles edit_file and write_file.
func (t *thread) runEditCall(tr *turn, call model.ToolCall) {
	ws, err := t.workspace()
	if err != nil {
		t.toolError(tr, call, call.Name+": "+err.Error())
		return
	}
	var changes []files.Change
	switch call.Name {
	case "edit_file":
		var p files.EditParams
		if err = json.Unmarshal([]byte(call.Arguments), &p); err == nil {
			changes, err = ws.Edit(p)
		}
	default:
		var p files.WriteParams
		if err = json.Unmarshal([]byte(call.Arguments), &p); err == nil {
			changes, err = ws.Write(p)
		}
	}
	if err != nil {
		t.toolError(tr, call, call.Name+": nothing was changed: "+err.Error())
		return
	}
	if len(changes) == 0 {
		t.toolError(tr, call, call.Name+": the file already has that content; nothing to change")
		return
	}
	t.proposeChanges(tr, call, ws, changes)
}

// proposeChanges refuses changes to files edited outside apserver since the
// agent last saw them, then announces the fileChange item and asks for
// approval when the policy says so.
func (t *thread) proposeChanges(tr *turn, call model.ToolCall, ws *files.Workspace, changes []files.Change) {
	if stale := filechange.Stamps(tr.stamps).Stale(ws, changes); len(stale) > 0 {
		t.toolError(tr, call, fmt.Sprintf("%s: refused, nothing was changed: %s changed outside this session since you last read or wrote it (the user may be editing it). Read it again with read_file and redo your edit on its current contents.", call.Name, strings.Join(stale, ", ")))
		return
	}
	paths := filechange.Paths(changes)
	plan := t.fileChangePlan(paths, true)
	if plan == fileRefuse {
		t.toolError(tr, call, call.Name+": refused, nothing was changed: this thread's sandbox is read-only and it never asks for approval, so no file can be changed.")
		return
	}
	run := &fileRun{call: call, ws: ws, changes: changes, inside: true}
	run.item = protocol.FileChangeItem{ID: t.uniqueItemID(call.CallID), Status: protocol.ItemInProgress, Changes: filechange.Item(changes)}
	t.notifyItemStarted(tr, run.item)
	if t.alignChanges(tr, run, plan, paths) {
		return // judged first; proceedChanges goes on (brainhook.go)
	}
	t.proceedChanges(tr, run, plan, paths)
}

// proceedChanges commits announced changes or asks about them.
func (t *thread) proceedChanges(tr *turn, run *fileRun, plan string, paths []string) {
	if plan == fileWrite {
		t.commitChanges(tr, run)
		return
	}
	params := protocol.FileChangeApprovalParams{ThreadID: t.id, TurnID: tr.id, ItemID: run.item.ID, StartedAtMs: t.nowMs()}
	req := serverRequest{Method: protocol.RequestFileChangeApproval, Params: params, Kind: "fileChange", Paths: paths, InsideWorkspace: run.inside}
	if raw, ok := t.autoAnswer(tr, req); ok {
		t.onFileApproval(tr, run, -1, raw, nil)
		return
	}
	// Codex's order for file changes: item/started, then the waiting flag.
	t.setStatus(protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{protocol.FlagWaitingOnApproval}})
	t.sendRequest(tr, req, func(id int64, raw json.RawMessage, err error) { t.onFileApproval(tr, run, id, raw, err) })
}

// What happens to a file change.
const (
	fileWrite  = commandpolicy.FileWrite
	fileAsk    = commandpolicy.FileAsk
	fileRefuse = commandpolicy.FileRefuse
)

// fileChangePlan: see judge.fileChangePlan (policy.go).
func (t *thread) fileChangePlan(paths []string, inside bool) string {
	return t.judge().fileChangePlan(paths, inside)
}

// onFileApproval acts on the answer (protocol/codex/CORE.md §8): accept commits, decline
// completes the item declined and the turn goes on, cancel ends the turn
// interrupted with no item/completed for the change.
func (t *thread) onFileApproval(tr *turn, run *fileRun, reqID int64, raw json.RawMessage, callErr error) {
	t.resolved(reqID)
	dec, err := approvalAnswer(raw, callErr)
	if err != nil {
		t.m.log.Warn("approval answer unusable; changes not applied", "thread", t.id, "item", run.item.ID, "err", err)
		t.finishFileChange(tr, run, protocol.ItemFailed, "The approval request failed, so nothing was changed: "+err.Error())
		return
	}
	if v := run.verdict; v != nil && (dec.Kind == protocol.DecisionAccept || dec.Kind == protocol.DecisionAcceptForSession) {
		run.verdict = nil // recorded first, then on as approved (brainhook.go)
		t.alignmentApproved(tr, run.action, *v, func() { t.onFileApproval(tr, run, -1, raw, nil) })
		return
	}
	switch dec.Kind {
	case protocol.DecisionAccept:
		t.commitChanges(tr, run)
	case protocol.DecisionAcceptForSession:
		for _, c := range run.changes {
			t.approvedPaths[c.Path] = true
			if c.MoveTo != "" {
				t.approvedPaths[c.MoveTo] = true
			}
		}
		t.commitChanges(tr, run)
	case protocol.DecisionCancel:
		t.history = append(t.history, agenttools.CallHistory(run.call, "The user cancelled these changes and stopped the turn; nothing was changed.")...)
		t.completeTurn(tr, protocol.TurnInterrupted, nil)
	default:
		t.finishFileChange(tr, run, protocol.ItemDeclined, "The user declined these changes; nothing was changed. Do not retry them as they are; continue without them or explain what you needed.")
	}
}

// commitChanges writes the changes (all or none), completes the item and
// sends the turn's diff.
func (t *thread) commitChanges(tr *turn, run *fileRun) {
	if err := run.ws.Commit(run.changes); err != nil {
		t.finishFileChange(tr, run, protocol.ItemFailed, "Nothing was changed: "+err.Error())
		return
	}
	filechange.Stamps(tr.stamps).Record(run.ws, run.changes)
	run.item.Status = protocol.ItemCompleted
	if err := t.commitItem(tr, run.item, agenttools.CallHistory(run.call, filechange.Summary(run.changes))); err != nil {
		t.failTurn(tr, err)
		return
	}
	t.sendTurnDiff(tr, false, func() { t.runNextCall(tr) })
}

// finishFileChange completes a change that was not applied, then goes on.
func (t *thread) finishFileChange(tr *turn, run *fileRun, status protocol.ItemStatus, modelMsg string) {
	run.item.Status = status
	if err := t.commitItem(tr, run.item, agenttools.CallHistory(run.call, run.call.Name+": "+modelMsg)); err != nil {
		t.failTurn(tr, err)
		return
	}
	t.runNextCall(tr)
}

// restamp refreshes every recorded stamp: the agent's own commands may
// have changed those files, which is not an outside edit.
func (t *thread) restamp(tr *turn) {
	if len(tr.stamps) == 0 {
		return
	}
	ws, err := t.workspace()
	if err != nil {
		return
	}
	filechange.Stamps(tr.stamps).Refresh(ws)
}
