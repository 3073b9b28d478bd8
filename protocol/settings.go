package protocol

import (
	"encoding/json"
	"fmt"
)

// Approval policies (AskForApproval's string form; kebab-case on the wire).
const (
	ApprovalUntrusted = "untrusted"
	ApprovalOnRequest = "on-request"
	ApprovalNever     = "never"
)

// Thread-level sandbox modes (SandboxMode; kebab-case on the wire).
const (
	SandboxReadOnly         = "read-only"
	SandboxWorkspaceWrite   = "workspace-write"
	SandboxDangerFullAccess = "danger-full-access"
)

// AskForApproval is a policy string ("untrusted", "on-request", "never") or
// the experimental {"granular":{…}} object, kept raw.
type AskForApproval struct {
	Mode     string
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
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		switch s {
		case ApprovalUntrusted, ApprovalOnRequest, ApprovalNever:
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

// SandboxPolicyFor maps a thread-level SandboxMode to its policy object.
func SandboxPolicyFor(mode string) SandboxPolicy {
	switch mode {
	case SandboxReadOnly:
		return SandboxPolicy{Type: "readOnly", NetworkAccess: false}
	case SandboxDangerFullAccess:
		return SandboxPolicy{Type: "dangerFullAccess"}
	default:
		return SandboxPolicy{Type: "workspaceWrite", WritableRoots: []string{}, NetworkAccess: false}
	}
}

// SandboxModeFor maps a policy object back to the thread-level mode.
func SandboxModeFor(p SandboxPolicy) string {
	switch p.Type {
	case "readOnly":
		return SandboxReadOnly
	case "dangerFullAccess", "externalSandbox":
		return SandboxDangerFullAccess
	default:
		return SandboxWorkspaceWrite
	}
}

// ValidSandboxMode reports whether s is a SandboxMode string.
func ValidSandboxMode(s string) bool {
	return s == SandboxReadOnly || s == SandboxWorkspaceWrite || s == SandboxDangerFullAccess
}
