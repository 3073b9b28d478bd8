package autodrive

import (
	"encoding/json"
	"strings"

	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tooloutput"
)

// Request is a server request the agent needs answered (an approval or a
// question), as the session asks it (session's serverRequest is this
// type).
type Request struct {
	Method string
	Params any
	// Kind is "command", "fileChange" or "question".
	Kind string
	// Command is the raw command of a command approval.
	Command string
	// Paths are the workspace-relative paths of a file-change approval.
	Paths []string
	// Rule is the command-rules verdict ("allow", "prompt", "forbidden")
	// and RuleName the rule that decided, when the rules were consulted.
	Rule, RuleName string
	// Sandboxed: the command would run confined by the kernel sandbox.
	Sandboxed bool
	// Escalated: the command asks to run outside the sandbox. Opaque says
	// why the rules cannot read it fully; Privileged why it runs a command
	// as another user.
	Escalated  bool
	Opaque     string
	Privileged string
	// HumanOnly says why only a human approves the request, whatever the
	// strategy (controller.ApprovalRequest.HumanOnly).
	HumanOnly string
	// InsideWorkspace: every path of a file change is inside the writable
	// roots.
	InsideWorkspace bool
	// Alignment, when set, stopped the action: the request goes to a
	// human, never to full auto's rules or decision model.
	Alignment *protocol.AlignmentVerdict
}

// ItemID is the item a request is about.
func (req Request) ItemID() string {
	switch p := req.Params.(type) {
	case protocol.CommandApprovalParams:
		return p.ItemID
	case protocol.FileChangeApprovalParams:
		return p.ItemID
	case protocol.ToolRequestUserInputParams:
		return p.ItemID
	case protocol.McpServerElicitationParams: // an MCP tool approval
		return p.ItemID
	}
	return ""
}

// Key names the request for the machine: its method and item.
func (req Request) Key() string { return req.Method + "\x00" + req.ItemID() }

// Approval is the request as the rules (controller.Approve) read it.
func (req Request) Approval() controller.ApprovalRequest {
	return controller.ApprovalRequest{
		Kind: req.Kind, Command: req.Command,
		RuleDecision: req.Rule, Rule: req.RuleName, Paths: append([]string{}, req.Paths...),
		InsideWritableRoots: req.InsideWorkspace, Sandboxed: req.Sandboxed,
		Escalated: req.Escalated, Opaque: req.Opaque, Privileged: req.Privileged, HumanOnly: req.HumanOnly,
	}
}

// Reason says in a line what a request waits for; a request the project
// brain stopped says which decision (alignReason).
func (req Request) Reason(alignReason func(protocol.AlignmentVerdict) string) string {
	if req.Alignment != nil { // stopped by the project brain: say which decision
		return alignReason(*req.Alignment)
	}
	switch p := req.Params.(type) {
	case protocol.CommandApprovalParams:
		return "approve command: " + tooloutput.CutBytes(req.Command, 200)
	case protocol.FileChangeApprovalParams:
		return "approve changes to " + tooloutput.CutBytes(strings.Join(req.Paths, ", "), 200)
	case protocol.ToolRequestUserInputParams:
		if len(p.Questions) > 0 {
			return "answer: " + tooloutput.CutBytes(p.Questions[0].Question, 200)
		}
	case protocol.McpServerElicitationParams:
		return tooloutput.CutBytes(p.Message, 200)
	}
	return "answer " + req.Method
}

// DecisionJSON is an approval's answer as a client gives it.
func DecisionJSON(d protocol.Decision) json.RawMessage {
	b, _ := json.Marshal(map[string]protocol.Decision{"decision": d})
	return b
}

// RawJSON is the decision model's raw answer as JSON for the log and the
// receipt: an answer that is not JSON (the model's mistake) is kept as a
// JSON string, so the event and its receipt still encode.
func RawJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	if json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b))
	return s
}

// AttentionKind is the attention item's kind of a request of kind.
func AttentionKind(kind string) protocol.AttentionKind {
	if kind == "question" {
		return protocol.AttentionQuestion
	}
	return protocol.AttentionApproval
}

// Declined: the answer to an approval declines (or cancels) it.
func Declined(raw json.RawMessage, err error) bool {
	if err != nil {
		return false
	}
	d, perr := protocol.ParseApprovalResponse(raw)
	return perr == nil && (d.Kind == protocol.DecisionDecline || d.Kind == protocol.DecisionCancel)
}

// ResumeData is stored with a pending request: what the session needs to
// act on its answer after a restart.
type ResumeData struct {
	TurnID  string `json:"turnId"`
	Kind    string `json:"kind"`
	Command string `json:"command,omitempty"`
}

// HiddenEntry is the model history entry of hidden input.
func HiddenEntry(text string) model.Entry { return model.Entry{Kind: model.EntryUser, Text: text} }
