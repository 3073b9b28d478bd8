package protocol

import (
	"encoding/json"
	"fmt"
)

// CommandApprovalParams: item/commandExecution/requestApproval.
type CommandApprovalParams struct {
	ThreadID                    string          `json:"threadId"`
	TurnID                      string          `json:"turnId"`
	ItemID                      string          `json:"itemId"`
	StartedAtMs                 int64           `json:"startedAtMs"`
	Kind                        string          `json:"kind"` // command
	Reason                      *string         `json:"reason"`
	Command                     *string         `json:"command"`
	Cwd                         *string         `json:"cwd"`
	CommandActions              []CommandAction `json:"commandActions"`
	ProposedExecpolicyAmendment []string        `json:"proposedExecpolicyAmendment"`
	// AvailableDecisions are the answers the client may offer, in order
	// (Codex's clients show exactly these).
	AvailableDecisions []Decision `json:"availableDecisions,omitempty"`
	// Alignment is apserver's extension: the project brain's verdict when
	// it stopped the command (docs/brain.md).
	Alignment *AlignmentVerdict `json:"alignment,omitempty"`
}

// FileChangeApprovalParams: item/fileChange/requestApproval.
type FileChangeApprovalParams struct {
	ThreadID    string  `json:"threadId"`
	TurnID      string  `json:"turnId"`
	ItemID      string  `json:"itemId"`
	StartedAtMs int64   `json:"startedAtMs"`
	Reason      *string `json:"reason"`
	GrantRoot   *string `json:"grantRoot"`
	// Alignment is apserver's extension: the project brain's verdict when
	// it stopped the change (docs/brain.md).
	Alignment *AlignmentVerdict `json:"alignment,omitempty"`
}

// Decision is the kind of a client's approval answer: a string decision,
// or the key of an object decision.
type Decision string

// Approval decisions. The last two only come as objects with a body.
const (
	DecisionAccept                        Decision = "accept"
	DecisionAcceptForSession              Decision = "acceptForSession"
	DecisionDecline                       Decision = "decline"
	DecisionCancel                        Decision = "cancel"
	DecisionAcceptWithExecpolicyAmendment Decision = "acceptWithExecpolicyAmendment"
	DecisionApplyNetworkPolicyAmendment   Decision = "applyNetworkPolicyAmendment"
)

// ApprovalDecision is the client's answer. String decisions land in Kind;
// the object forms ({"acceptWithExecpolicyAmendment":…}) set Kind to the key
// and keep the body in Detail.
type ApprovalDecision struct {
	Kind   Decision
	Detail json.RawMessage
}

// ParseApprovalResponse decodes {"decision": …}. An unknown decision is an
// error; the caller treats it like a JSON-RPC error answer (item failed).
func ParseApprovalResponse(raw json.RawMessage) (ApprovalDecision, error) {
	var v struct {
		Decision json.RawMessage `json:"decision"`
	}
	if err := json.Unmarshal(raw, &v); err != nil || v.Decision == nil {
		return ApprovalDecision{}, fmt.Errorf("approval answer has no decision")
	}
	var s Decision
	if err := json.Unmarshal(v.Decision, &s); err == nil {
		switch s {
		case DecisionAccept, DecisionAcceptForSession, DecisionDecline, DecisionCancel:
			return ApprovalDecision{Kind: s}, nil
		}
		return ApprovalDecision{}, fmt.Errorf("unknown approval decision %q", s)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(v.Decision, &obj); err != nil || len(obj) != 1 {
		return ApprovalDecision{}, fmt.Errorf("malformed approval decision")
	}
	for k, body := range obj {
		switch Decision(k) {
		case DecisionAcceptWithExecpolicyAmendment, DecisionApplyNetworkPolicyAmendment:
			return ApprovalDecision{Kind: Decision(k), Detail: body}, nil
		}
		return ApprovalDecision{}, fmt.Errorf("unknown approval decision %q", k)
	}
	return ApprovalDecision{}, fmt.Errorf("malformed approval decision")
}

// ToolRequestUserInputParams: item/tool/requestUserInput.
type ToolRequestUserInputParams struct {
	ThreadID         string              `json:"threadId"`
	TurnID           string              `json:"turnId"`
	ItemID           string              `json:"itemId"`
	Questions        []UserInputQuestion `json:"questions"`
	IsBlocking       bool                `json:"isBlocking"`
	AutoResolutionMs *int64              `json:"autoResolutionMs"`
}

// UserInputQuestion is one question put to the user.
type UserInputQuestion struct {
	ID       string            `json:"id"`
	Header   string            `json:"header"`
	Question string            `json:"question"`
	IsOther  bool              `json:"isOther"`
	IsSecret bool              `json:"isSecret"`
	Options  []UserInputOption `json:"options"`
}

// UserInputOption is one offered answer.
type UserInputOption struct {
	Label       string `json:"label"`
	Description string `json:"description"`
}
