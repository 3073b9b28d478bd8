package commandpolicy

import (
	"strings"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tools"
)

// CommandActions are what a command does as the client shows it (read a
// file, list files, search, or unknown).
func CommandActions(cmd string) []protocol.CommandAction {
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

func ptr[T any](v T) *T { return &v }

// ProposedPrefix suggests an allow-rule prefix for a command: its program
// and first argument, when the command is a single simple one.
func ProposedPrefix(cmd string) []string {
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

// Request fills in what the plan decides of the approval request for cmd: the
// reason shown (the agent's, unless the command is forbidden, privileged
// or opaque: then why it needs a human, with the agent's after it), the
// rule prefix proposed, and the decisions offered — never acceptance for
// the session, nor a rule, for a command that always needs a human.
func (p Plan) Request(params *protocol.CommandApprovalParams, cmd, agentReason string) {
	params.ProposedExecpolicyAmendment = ProposedPrefix(cmd)
	params.AvailableDecisions = []protocol.Decision{protocol.DecisionAccept, protocol.DecisionAcceptForSession, protocol.DecisionCancel}
	if agentReason != "" {
		params.Reason = ptr(agentReason)
	}
	var why string
	switch {
	case p.Forbidden():
		why = p.Reason()
	case p.Privileged() != "":
		why = "This command runs something as another user: " + p.Privileged()
	case p.Opaque() != "":
		why = "The rules cannot read this command fully: " + p.Opaque()
	}
	if why != "" {
		if agentReason != "" {
			why += ". The agent says: " + agentReason
		}
		params.Reason = ptr(why)
		params.ProposedExecpolicyAmendment = nil
		params.AvailableDecisions = []protocol.Decision{protocol.DecisionAccept, protocol.DecisionCancel}
	}
}
