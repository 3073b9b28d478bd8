package protocol

// command/exec: a standalone process (an editor's terminal), no thread.
// Their method names are constants in methods_gen.go, generated from the
// schema (see internal/protogen).

// CommandExecParams are command/exec's params.
type CommandExecParams struct {
	Command            []string             `json:"command"`
	Cwd                *string              `json:"cwd"`
	Env                map[string]*string   `json:"env"`
	TimeoutMs          *int64               `json:"timeoutMs"`
	DisableTimeout     bool                 `json:"disableTimeout"`
	OutputBytesCap     *int64               `json:"outputBytesCap"`
	DisableOutputCap   bool                 `json:"disableOutputCap"`
	SandboxPolicy      *SandboxPolicy       `json:"sandboxPolicy"`
	PermissionProfile  *string              `json:"permissionProfile"`
	ProcessID          *string              `json:"processId"`
	TTY                bool                 `json:"tty"`
	StreamStdin        bool                 `json:"streamStdin"`
	StreamStdoutStderr bool                 `json:"streamStdoutStderr"`
	Size               *CommandExecTermSize `json:"size"`
}

// CommandExecTermSize is a PTY size in character cells.
type CommandExecTermSize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

func (p *CommandExecParams) Validate() error {
	switch {
	case len(p.Command) == 0 || p.Command[0] == "":
		return Errorf(ErrInvalidParams, "Invalid params: command must not be empty")
	case p.TimeoutMs != nil && p.DisableTimeout:
		return Errorf(ErrInvalidParams, "Invalid params: timeoutMs cannot be combined with disableTimeout")
	case p.TimeoutMs != nil && *p.TimeoutMs < 0:
		return Errorf(ErrInvalidParams, "Invalid params: timeoutMs must not be negative")
	case p.OutputBytesCap != nil && p.DisableOutputCap:
		return Errorf(ErrInvalidParams, "Invalid params: outputBytesCap cannot be combined with disableOutputCap")
	case p.OutputBytesCap != nil && *p.OutputBytesCap < 0:
		return Errorf(ErrInvalidParams, "Invalid params: outputBytesCap must not be negative")
	case p.PermissionProfile != nil && p.SandboxPolicy != nil:
		return Errorf(ErrInvalidParams, "Invalid params: permissionProfile cannot be combined with sandboxPolicy")
	case p.PermissionProfile != nil:
		return Errorf(ErrInvalidParams, "Invalid params: permissionProfile: apserver has no permission profiles; use sandboxPolicy")
	case (p.TTY || p.StreamStdin || p.StreamStdoutStderr) && (p.ProcessID == nil || *p.ProcessID == ""):
		return Errorf(ErrInvalidParams, "Invalid params: processId is required for tty, streamStdin and streamStdoutStderr")
	case p.Size != nil && !p.TTY:
		return Errorf(ErrInvalidParams, "Invalid params: size needs tty")
	case p.Cwd != nil && *p.Cwd != "" && !isAbs(*p.Cwd):
		return Errorf(ErrInvalidParams, "Invalid params: cwd must be an absolute path: %s", *p.Cwd)
	}
	if p.SandboxPolicy != nil {
		switch p.SandboxPolicy.Type {
		case "dangerFullAccess", "readOnly", "workspaceWrite", "externalSandbox":
		default:
			return Errorf(ErrInvalidParams, "Invalid params: sandboxPolicy.type %q is not one of dangerFullAccess, readOnly, workspaceWrite, externalSandbox", p.SandboxPolicy.Type)
		}
	}
	return nil
}

func isAbs(p string) bool { return len(p) > 0 && p[0] == '/' }

// CommandExecResult is command/exec's result, sent when the process exits.
type CommandExecResult struct {
	ExitCode int    `json:"exitCode"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
}

// CommandExecWriteParams are command/exec/write's params.
type CommandExecWriteParams struct {
	ProcessID   string  `json:"processId"`
	DeltaBase64 *string `json:"deltaBase64"`
	CloseStdin  bool    `json:"closeStdin"`
}

func (p *CommandExecWriteParams) Validate() error {
	if p.ProcessID == "" {
		return MissingField("processId")
	}
	return nil
}

// CommandExecResizeParams are command/exec/resize's params.
type CommandExecResizeParams struct {
	ProcessID string               `json:"processId"`
	Size      *CommandExecTermSize `json:"size"`
}

func (p *CommandExecResizeParams) Validate() error {
	switch {
	case p.ProcessID == "":
		return MissingField("processId")
	case p.Size == nil:
		return MissingField("size")
	}
	return nil
}

// CommandExecProcessParams are command/exec/terminate's params.
type CommandExecProcessParams struct {
	ProcessID string `json:"processId"`
}

func (p *CommandExecProcessParams) Validate() error {
	if p.ProcessID == "" {
		return MissingField("processId")
	}
	return nil
}

// CommandExecOutputDelta is command/exec/outputDelta's params.
type CommandExecOutputDelta struct {
	ProcessID   string `json:"processId"`
	Stream      string `json:"stream"` // stdout | stderr
	DeltaBase64 string `json:"deltaBase64"`
	CapReached  bool   `json:"capReached"`
}
