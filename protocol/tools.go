package protocol

// Methods and shapes of the workspace tools: revert, file watching and the
// policy/explain extension (docs/protocol.md).
// Their method names are constants in methods_gen.go, generated from the
// schema (see internal/protogen).

// ThreadRevertParams are thread/revert's params. Force is apserver's
// extension: restore files even when some changed outside apserver since.
type ThreadRevertParams struct {
	ThreadID     string `json:"threadId"`
	BeforeTurnID string `json:"beforeTurnId"`
	Force        bool   `json:"force,omitempty"`
}

func (p *ThreadRevertParams) Validate() error {
	if p.ThreadID == "" {
		return MissingField("threadId")
	}
	if p.BeforeTurnID == "" {
		return MissingField("beforeTurnId")
	}
	return nil
}

// ThreadRevertResult is thread/revert's result. RestoredPaths is
// apserver's extension: the workspace files the revert rewrote or removed.
type ThreadRevertResult struct {
	Thread               Thread   `json:"thread"`
	TurnsBackwardsCursor *string  `json:"turnsBackwardsCursor"`
	ItemsBackwardsCursor *string  `json:"itemsBackwardsCursor"`
	RestoredPaths        []string `json:"restoredPaths"`
}

// ThreadRevertedNotification: thread/reverted.
type ThreadRevertedNotification struct {
	ThreadID string `json:"threadId"`
}

// FsWatchParams are fs/watch's params.
type FsWatchParams struct {
	WatchID string `json:"watchId"`
	Path    string `json:"path"`
}

func (p *FsWatchParams) Validate() error {
	if p.WatchID == "" {
		return MissingField("watchId")
	}
	if p.Path == "" {
		return MissingField("path")
	}
	return nil
}

// FsWatchResult is fs/watch's result: the canonical path.
type FsWatchResult struct {
	Path string `json:"path"`
}

// FsUnwatchParams are fs/unwatch's params.
type FsUnwatchParams struct {
	WatchID string `json:"watchId"`
}

func (p *FsUnwatchParams) Validate() error {
	if p.WatchID == "" {
		return MissingField("watchId")
	}
	return nil
}

// FsChangedNotification: fs/changed.
type FsChangedNotification struct {
	WatchID      string   `json:"watchId"`
	ChangedPaths []string `json:"changedPaths"`
}

// PolicyExplainParams are policy/explain's params: a command or a path,
// judged in a thread's context (its cwd, sandbox and rules) or, without a
// thread, in the server's defaults. Cwd overrides the context's cwd.
type PolicyExplainParams struct {
	ThreadID *string `json:"threadId,omitempty"`
	Command  *string `json:"command,omitempty"`
	Path     *string `json:"path,omitempty"`
	Cwd      *string `json:"cwd,omitempty"`
	// SandboxPermissions is exec_command's argument of that name:
	// "require_escalated" asks what would happen to the command run outside
	// the sandbox.
	SandboxPermissions *string `json:"sandboxPermissions,omitempty"`
}

func (p *PolicyExplainParams) Validate() error {
	if (p.Command == nil) == (p.Path == nil) {
		return Errorf(ErrInvalidParams, "Invalid params: exactly one of `command` and `path` is required")
	}
	if p.Command != nil && *p.Command == "" {
		return Errorf(ErrInvalidParams, "Invalid params: command must not be empty")
	}
	if p.Path != nil && *p.Path == "" {
		return Errorf(ErrInvalidParams, "Invalid params: path must not be empty")
	}
	if sp := p.SandboxPermissions; sp != nil && *sp != "use_default" && *sp != "require_escalated" {
		return Errorf(ErrInvalidParams, "Invalid params: sandboxPermissions must be \"use_default\" or \"require_escalated\", not %q", *sp)
	}
	return nil
}

// PolicyExplainResult says what would happen to a command or a path.
//
// Decision is "allow" (runs or is written without asking), "prompt" (the
// user is asked) or "forbidden" (never without a human; refused outright
// under approval policy "never"). Rule is the deciding rule as written,
// Source its file and line (or "builtin", "sandbox", "default"), Part the
// piece of a compound command that decided. Effective is what the thread's
// approval policy and sandbox make of the decision: "run", "runSandboxed",
// "ask" or "refuse".
type PolicyExplainResult struct {
	Decision   string         `json:"decision"`
	Rule       *string        `json:"rule"`
	Source     string         `json:"source"`
	Part       *string        `json:"part"`
	Reason     string         `json:"reason"`
	Effective  string         `json:"effective"`
	Sandbox    SandboxMode    `json:"sandbox"`
	Approval   ApprovalPolicy `json:"approvalPolicy"`
	ResolvedTo *string        `json:"resolvedPath,omitempty"`
	// Opaque, for a command, says why the rules cannot read it fully; such
	// a command never runs without a human or the sandbox.
	Opaque *string `json:"opaque,omitempty"`
	// Privileged, for a command, says why it runs a command as another user
	// (sudo, su, doas, ...): a human approves it every time.
	Privileged *string `json:"privileged,omitempty"`
	// Escalated echoes a sandboxPermissions of "require_escalated".
	Escalated bool `json:"escalated,omitempty"`
	// Refusal, when effective is "refuse", is what the model is told.
	Refusal *string `json:"refusal,omitempty"`
}
