package protocol

import (
	"encoding/json"
	"fmt"
)

// ApprovalPolicy is AskForApproval's string form (kebab-case on the wire).
type ApprovalPolicy string

// Approval policies.
const (
	ApprovalUntrusted ApprovalPolicy = "untrusted"
	ApprovalOnRequest ApprovalPolicy = "on-request"
	ApprovalNever     ApprovalPolicy = "never"
)

// Valid reports whether p is one of the approval policies.
func (p ApprovalPolicy) Valid() bool {
	return p == ApprovalUntrusted || p == ApprovalOnRequest || p == ApprovalNever
}

// SandboxMode is a thread-level sandbox mode (kebab-case on the wire).
type SandboxMode string

// Sandbox modes.
const (
	SandboxReadOnly         SandboxMode = "read-only"
	SandboxWorkspaceWrite   SandboxMode = "workspace-write"
	SandboxDangerFullAccess SandboxMode = "danger-full-access"
)

// Valid reports whether m is one of the sandbox modes.
func (m SandboxMode) Valid() bool {
	return m == SandboxReadOnly || m == SandboxWorkspaceWrite || m == SandboxDangerFullAccess
}

// AskForApproval is a policy string ("untrusted", "on-request", "never") or
// the experimental {"granular":{…}} object, kept raw.
type AskForApproval struct {
	Mode     ApprovalPolicy
	Granular json.RawMessage
}

func (a AskForApproval) MarshalJSON() ([]byte, error) {
	if a.Granular != nil {
		return json.Marshal(struct {
			Granular json.RawMessage `json:"granular"`
		}{a.Granular})
	}
	return json.Marshal(a.Mode)
}

func (a *AskForApproval) UnmarshalJSON(b []byte) error {
	var s ApprovalPolicy
	if err := json.Unmarshal(b, &s); err == nil {
		if s.Valid() {
			a.Mode = s
			return nil
		}
		return fmt.Errorf("unknown approvalPolicy `%s`, expected one of untrusted, on-request, never", s)
	}
	var g struct {
		Granular json.RawMessage `json:"granular"`
	}
	if err := json.Unmarshal(b, &g); err != nil || g.Granular == nil {
		return fmt.Errorf("approvalPolicy must be a string or {\"granular\":{…}}")
	}
	a.Granular = g.Granular
	return nil
}

// SandboxPolicy is the tagged object form used by turn/start's sandboxPolicy
// and reported in responses as `sandbox`.
type SandboxPolicy struct {
	Type                string   `json:"type"` // dangerFullAccess | readOnly | workspaceWrite | externalSandbox
	WritableRoots       []string `json:"writableRoots,omitempty"`
	NetworkAccess       any      `json:"networkAccess,omitempty"` // bool, or "restricted"|"enabled" for externalSandbox
	ExcludeTmpdirEnvVar bool     `json:"excludeTmpdirEnvVar,omitempty"`
	ExcludeSlashTmp     bool     `json:"excludeSlashTmp,omitempty"`
}

// SandboxPolicyFor maps a thread-level SandboxMode to the policy object
// that describes it: whether sandboxed commands reach the network, and
// the directories they may write besides the workspace (workspaceWrite
// only; nil is sent as []).
func SandboxPolicyFor(mode SandboxMode, network bool, writableRoots []string) SandboxPolicy {
	switch mode {
	case SandboxReadOnly:
		return SandboxPolicy{Type: "readOnly", NetworkAccess: network}
	case SandboxDangerFullAccess:
		return SandboxPolicy{Type: "dangerFullAccess"}
	default:
		if writableRoots == nil {
			writableRoots = []string{}
		}
		return SandboxPolicy{Type: "workspaceWrite", WritableRoots: writableRoots, NetworkAccess: network}
	}
}

// SandboxModeFor maps a policy object back to the thread-level mode.
func SandboxModeFor(p SandboxPolicy) SandboxMode {
	switch p.Type {
	case "readOnly":
		return SandboxReadOnly
	case "dangerFullAccess", "externalSandbox":
		return SandboxDangerFullAccess
	default:
		return SandboxWorkspaceWrite
	}
}
