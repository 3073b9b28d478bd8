package protocol

// The project brain (apserver's extension, docs/brain.md): decisions, the
// project snapshot, the context a stage is given and the alignment of an
// action with the plan. Method constants (MethodProjectDecisionAdd …) are
// generated into methods_gen.go from protocol/apserver/schema.

// DecisionStatus is where a decision stands.
type DecisionStatus string

// Decision statuses.
const (
	DecisionActive     DecisionStatus = "active"
	DecisionProposed   DecisionStatus = "proposed"
	DecisionSuperseded DecisionStatus = "superseded"
	DecisionRevoked    DecisionStatus = "revoked"
)

// Valid reports whether s is one of the statuses.
func (s DecisionStatus) Valid() bool {
	return s == DecisionActive || s == DecisionProposed || s == DecisionSuperseded || s == DecisionRevoked
}

// DecisionScope says what a decision is about: file globs (relative to
// the project, `**` crosses directories), blueprint node ids and free tags.
type DecisionScope struct {
	Files []string `json:"files,omitempty"`
	Nodes []string `json:"nodes,omitempty"`
	Tags  []string `json:"tags,omitempty"`
}

// ProjectDecision is a recorded project decision. Source says who recorded it:
// "user", "planner", "clarification", "repair", "model" (record_decision),
// "alignment" (a human approving an action that contradicted another).
type ProjectDecision struct {
	ID           string         `json:"id"`
	Cwd          string         `json:"cwd"`
	Title        string         `json:"title"`
	Text         string         `json:"text"`
	Why          string         `json:"why,omitempty"`
	Alternatives []string       `json:"alternatives,omitempty"`
	Scope        DecisionScope  `json:"scope"`
	Source       string         `json:"source"`
	Status       DecisionStatus `json:"status"`
	SupersededBy string         `json:"supersededBy,omitempty"`
	// RunID is the run that recorded it (sources planner, clarification,
	// repair).
	RunID string `json:"runId,omitempty"`
	// TaskID is the run's task whose thread proposed it (the model's
	// record_decision in a task thread); the run's trust may confirm it
	// when the task is committed.
	TaskID string `json:"taskId,omitempty"`
	// ConfirmedBy says who made a proposed decision active: "user" (a
	// human, project/decision/update), "run/plan/approve", or the run's
	// trust ("run trust planning=auto", "run trust implementation=auto").
	ConfirmedBy string `json:"confirmedBy,omitempty"`
	CreatedAtMs int64  `json:"createdAtMs"`
	UpdatedAtMs int64  `json:"updatedAtMs"`
}

// ProjectDecisionAddParams records a decision. Status may be "active"
// (default) or "proposed"; Supersedes names an active decision this one
// replaces.
type ProjectDecisionAddParams struct {
	Cwd          string          `json:"cwd"`
	Title        string          `json:"title"`
	Text         string          `json:"text"`
	Why          string          `json:"why,omitempty"`
	Alternatives []string        `json:"alternatives,omitempty"`
	Scope        *DecisionScope  `json:"scope,omitempty"`
	Source       string          `json:"source,omitempty"`
	Status       *DecisionStatus `json:"status,omitempty"`
	Supersedes   string          `json:"supersedes,omitempty"`
}

// Validate names the first missing or bad field.
func (p *ProjectDecisionAddParams) Validate() error {
	if p.Cwd == "" {
		return MissingField("cwd")
	}
	if p.Title == "" {
		return MissingField("title")
	}
	if p.Status != nil && *p.Status != DecisionActive && *p.Status != DecisionProposed {
		return Errorf(ErrInvalidParams, "Invalid params: status must be `active` or `proposed`, not `%s`", *p.Status)
	}
	return nil
}

// ProjectDecisionUpdateParams changes a decision's fields (those given),
// or confirms a proposed one (Status "active").
type ProjectDecisionUpdateParams struct {
	ID           string          `json:"id"`
	Title        *string         `json:"title,omitempty"`
	Text         *string         `json:"text,omitempty"`
	Why          *string         `json:"why,omitempty"`
	Alternatives *[]string       `json:"alternatives,omitempty"`
	Scope        *DecisionScope  `json:"scope,omitempty"`
	Status       *DecisionStatus `json:"status,omitempty"`
}

// Validate names the first missing or bad field.
func (p *ProjectDecisionUpdateParams) Validate() error {
	if p.ID == "" {
		return MissingField("id")
	}
	if p.Title != nil && *p.Title == "" {
		return Errorf(ErrInvalidParams, "Invalid params: title must not be empty")
	}
	if p.Status != nil && *p.Status != DecisionActive {
		return Errorf(ErrInvalidParams, "Invalid params: status can only be set to `active` (use project/decision/revoke)")
	}
	return nil
}

// ProjectDecisionRevokeParams revokes a decision.
type ProjectDecisionRevokeParams struct {
	ID     string `json:"id"`
	Reason string `json:"reason,omitempty"`
}

// Validate checks that id is present.
func (p *ProjectDecisionRevokeParams) Validate() error {
	if p.ID == "" {
		return MissingField("id")
	}
	return nil
}

// ProjectDecisionResult is the decision after a change.
type ProjectDecisionResult struct {
	Decision ProjectDecision `json:"decision"`
}

// ProjectDecisionListParams lists a project's decisions; All includes the
// superseded and revoked ones.
type ProjectDecisionListParams struct {
	Cwd string `json:"cwd"`
	All bool   `json:"all,omitempty"`
}

// Validate checks that cwd is present.
func (p *ProjectDecisionListParams) Validate() error {
	if p.Cwd == "" {
		return MissingField("cwd")
	}
	return nil
}

// ProjectDecisionListResult holds decisions, oldest first.
type ProjectDecisionListResult struct {
	Decisions []ProjectDecision `json:"decisions"`
}

// ProjectSnapshotReadParams reads a project's snapshot.
type ProjectSnapshotReadParams struct {
	Cwd string `json:"cwd"`
}

// Validate checks that cwd is present.
func (p *ProjectSnapshotReadParams) Validate() error {
	if p.Cwd == "" {
		return MissingField("cwd")
	}
	return nil
}

// ProjectSnapshotReadResult is the snapshot as Markdown (the bytes of
// .apserver/snapshot.md).
type ProjectSnapshotReadResult struct {
	Markdown string `json:"markdown"`
}

// ProjectContextPreviewParams asks for the context block a stage would
// get: Role (planner, implementer, reviewer, thread) and a blueprint
// task (TaskID, with BlueprintID) or a thread.
type ProjectContextPreviewParams struct {
	Cwd         string `json:"cwd"`
	Role        string `json:"role"`
	BlueprintID string `json:"blueprintId,omitempty"`
	TaskID      string `json:"taskId,omitempty"`
	ThreadID    string `json:"threadId,omitempty"`
	Budget      int    `json:"budget,omitempty"`
}

// Validate names the first missing or bad field.
func (p *ProjectContextPreviewParams) Validate() error {
	if p.Cwd == "" {
		return MissingField("cwd")
	}
	if p.Role == "" {
		return MissingField("role")
	}
	if p.TaskID == "" && p.ThreadID == "" {
		return Errorf(ErrInvalidParams, "Invalid params: taskId or threadId is required")
	}
	if p.Budget < 0 {
		return Errorf(ErrInvalidParams, "Invalid params: budget must not be negative")
	}
	return nil
}

// ProjectContextPreviewResult is the block, its estimated tokens and the
// budget it was built for.
type ProjectContextPreviewResult struct {
	Context string `json:"context"`
	Tokens  int    `json:"tokens"`
	Budget  int    `json:"budget"`
}

// AlignmentStatus is the verdict on an action.
type AlignmentStatus string

// Alignment verdicts. Undecided is the first pass's answer when its rules
// cannot settle the action; the validator model then decides.
const (
	AlignmentAligned     AlignmentStatus = "aligned"
	AlignmentRisky       AlignmentStatus = "risky"
	AlignmentConflicting AlignmentStatus = "conflicting"
	AlignmentUndecided   AlignmentStatus = "undecided"
)

// Stops reports whether the verdict sends the action to a human.
func (s AlignmentStatus) Stops() bool {
	return s == AlignmentRisky || s == AlignmentConflicting
}

// ActionKind is what an action does.
type ActionKind string

// Action kinds.
const (
	ActionWrite   ActionKind = "write"
	ActionDelete  ActionKind = "delete"
	ActionCommand ActionKind = "command"
)

// AlignmentAction is an action to judge: a file write (Path, and the
// file's text Before and After when known), a deletion (Path) or a
// command.
type AlignmentAction struct {
	Kind    ActionKind `json:"kind"`
	Path    string     `json:"path,omitempty"`
	Before  string     `json:"before,omitempty"`
	After   string     `json:"after,omitempty"`
	Command string     `json:"command,omitempty"`
}

// Validate names the first missing or bad field.
func (a *AlignmentAction) Validate(field string) error {
	switch a.Kind {
	case ActionWrite, ActionDelete:
		if a.Path == "" {
			return MissingField(field + ".path")
		}
	case ActionCommand:
		if a.Command == "" {
			return MissingField(field + ".command")
		}
	case "":
		return MissingField(field + ".kind")
	default:
		return Errorf(ErrInvalidParams, "Invalid params: %s.kind must be write, delete or command, not `%s`", field, a.Kind)
	}
	return nil
}

// DecisionRef names a decision in a verdict.
type DecisionRef struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// AlignmentVerdict is the judgement of an action: a status, a score in
// [0, 1] (1 is plainly aligned), the reasons, the decisions and nodes it
// relates to, and which pass settled it ("rules" or "validator").
type AlignmentVerdict struct {
	Status    AlignmentStatus `json:"status"`
	Score     float64         `json:"score"`
	Reasons   []string        `json:"reasons"`
	Decisions []DecisionRef   `json:"decisions"`
	Nodes     []string        `json:"nodes,omitempty"`
	Pass      string          `json:"pass"`
}

// AlignmentExplainParams judges an action as the thread's alignment check
// would: in the thread's project (a run's task thread: the run's
// repository and its task), or in Cwd when given.
type AlignmentExplainParams struct {
	ThreadID string          `json:"threadId"`
	Cwd      string          `json:"cwd,omitempty"`
	Action   AlignmentAction `json:"action"`
}

// Validate names the first missing or bad field.
func (p *AlignmentExplainParams) Validate() error {
	if p.ThreadID == "" {
		return MissingField("threadId")
	}
	return p.Action.Validate("action")
}

// AlignmentExplainResult is the verdict.
type AlignmentExplainResult struct {
	Verdict AlignmentVerdict `json:"verdict"`
}
