package protocol

import "strings"

// Thread operations beyond start/resume/fork: delete, metadata, the
// user's own shell command.
// Their method names are constants in methods_gen.go, generated from the
// schema (see internal/protogen).

// ThreadMetadataUpdateParams are thread/metadata/update's params. Each
// field of GitInfo is absent (keep), null (clear) or a value (replace).
type ThreadMetadataUpdateParams struct {
	ThreadID        string                        `json:"threadId"`
	GitInfo         Optional[GitInfoUpdateParams] `json:"gitInfo"`
	ProjectID       *string                       `json:"projectId"`
	DaybreakEnabled *bool                         `json:"daybreakEnabled"`
}

// GitInfoUpdateParams patch a thread's stored git metadata.
type GitInfoUpdateParams struct {
	SHA       Optional[string] `json:"sha"`
	Branch    Optional[string] `json:"branch"`
	OriginURL Optional[string] `json:"originUrl"`
}

func (p *ThreadMetadataUpdateParams) Validate() error {
	if p.ThreadID == "" {
		return MissingField("threadId")
	}
	if g := p.GitInfo.Value; g != nil {
		for name, f := range map[string]Optional[string]{"sha": g.SHA, "branch": g.Branch, "originUrl": g.OriginURL} {
			if f.Value != nil && strings.TrimSpace(*f.Value) == "" {
				return Errorf(ErrInvalidParams, "Invalid params: gitInfo.%s must not be empty (null clears it)", name)
			}
		}
	}
	if p.ProjectID != nil && *p.ProjectID != "" {
		// apserver keeps no projects, so no id names one.
		return Errorf(ErrInvalidRequest, "project not found: %s", *p.ProjectID)
	}
	return nil
}

// ThreadShellCommandParams are thread/shellCommand's params: a command the
// user typed (the TUI's `!cmd`), run in the thread's workspace.
type ThreadShellCommandParams struct {
	ThreadID  string `json:"threadId"`
	Command   string `json:"command"`
	TimeoutMs *int64 `json:"timeoutMs"`
}

func (p *ThreadShellCommandParams) Validate() error {
	if p.ThreadID == "" {
		return MissingField("threadId")
	}
	if strings.TrimSpace(p.Command) == "" {
		return Errorf(ErrInvalidParams, "Invalid params: command must not be empty")
	}
	if p.TimeoutMs != nil && *p.TimeoutMs < 0 {
		return Errorf(ErrInvalidParams, "Invalid params: timeoutMs must not be negative")
	}
	return nil
}

// ThreadSettingsUpdateParams are thread/settings/update's params: settings
// for the thread's next turns (Codex's TUI sends its Shift+Tab mode switch
// this way). Absent or null keeps a setting.
type ThreadSettingsUpdateParams struct {
	ThreadID          string             `json:"threadId"`
	Cwd               *string            `json:"cwd"`
	Model             *string            `json:"model"`
	Effort            *string            `json:"effort"`
	Summary           *string            `json:"summary"`
	ApprovalPolicy    *AskForApproval    `json:"approvalPolicy"`
	SandboxPolicy     *SandboxPolicy     `json:"sandboxPolicy"`
	CollaborationMode *CollaborationMode `json:"collaborationMode"`
}

func (p *ThreadSettingsUpdateParams) Validate() error {
	if p.ThreadID == "" {
		return MissingField("threadId")
	}
	if err := p.CollaborationMode.validate(); err != nil {
		return err
	}
	// The rest as turn/start checks them.
	ts := TurnStartParams{ThreadID: p.ThreadID, Input: []UserInput{}, SandboxPolicy: p.SandboxPolicy}
	return ts.Validate()
}

// TurnStart is p as the turn/start overrides it carries, for the checks
// and settings turn/start shares.
func (p *ThreadSettingsUpdateParams) TurnStart() TurnStartParams {
	return TurnStartParams{ThreadID: p.ThreadID, Input: []UserInput{}, Cwd: p.Cwd, Model: p.Model, Effort: p.Effort,
		Summary: p.Summary, ApprovalPolicy: p.ApprovalPolicy, SandboxPolicy: p.SandboxPolicy, CollaborationMode: p.CollaborationMode}
}
