package protocol

import (
	"encoding/json"
	"fmt"
)

// Thread is a conversation. Times are Unix seconds.
type Thread struct {
	ID              string       `json:"id"`
	SessionID       string       `json:"sessionId"`
	ForkedFromID    *string      `json:"forkedFromId"`
	ParentThreadID  *string      `json:"parentThreadId"`
	Preview         string       `json:"preview"`
	Ephemeral       bool         `json:"ephemeral"`
	Path            *string      `json:"path"`
	ModelProvider   string       `json:"modelProvider"`
	Model           *string      `json:"model"`
	ReasoningEffort *string      `json:"reasoningEffort"`
	CreatedAt       int64        `json:"createdAt"`
	UpdatedAt       int64        `json:"updatedAt"`
	RecencyAt       *int64       `json:"recencyAt"`
	Status          ThreadStatus `json:"status"`
	Cwd             string       `json:"cwd"`
	CLIVersion      string       `json:"cliVersion"`
	Originator      *string      `json:"originator"`
	Source          string       `json:"source"`
	ThreadSource    *string      `json:"threadSource"`
	AgentNickname   *string      `json:"agentNickname"`
	AgentRole       *string      `json:"agentRole"`
	GitInfo         *GitInfo     `json:"gitInfo"`
	Name            *string      `json:"name"`
	HistoryMode     string       `json:"historyMode"`
	ProjectID       *string      `json:"projectId"`
	Turns           []Turn       `json:"turns"`
}

// GitInfo is the repository state captured when a thread was created.
type GitInfo struct {
	SHA       *string `json:"sha"`
	Branch    *string `json:"branch"`
	OriginURL *string `json:"originUrl"`
}

// ThreadStatusType is the "type" of a ThreadStatus.
type ThreadStatusType string

// Thread status types.
const (
	StatusNotLoaded   ThreadStatusType = "notLoaded"
	StatusIdle        ThreadStatusType = "idle"
	StatusSystemError ThreadStatusType = "systemError"
	StatusActive      ThreadStatusType = "active"
)

// Active flags: what an active thread waits on. They stay untyped, so
// that a []string of flags takes them as they are.
const (
	FlagWaitingOnApproval  = "waitingOnApproval"
	FlagWaitingOnUserInput = "waitingOnUserInput"
)

// ThreadStatus is {type} or {type:"active", activeFlags:[…]}.
type ThreadStatus struct {
	Type        ThreadStatusType
	ActiveFlags []string
}

func (s ThreadStatus) MarshalJSON() ([]byte, error) {
	if s.Type == StatusActive {
		flags := s.ActiveFlags
		if flags == nil {
			flags = []string{}
		}
		return json.Marshal(struct {
			Type        ThreadStatusType `json:"type"`
			ActiveFlags []string         `json:"activeFlags"`
		}{s.Type, flags})
	}
	return json.Marshal(struct {
		Type ThreadStatusType `json:"type"`
	}{s.Type})
}

func (s *ThreadStatus) UnmarshalJSON(b []byte) error {
	var v struct {
		Type        ThreadStatusType `json:"type"`
		ActiveFlags []string         `json:"activeFlags"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	s.Type, s.ActiveFlags = v.Type, v.ActiveFlags
	return nil
}

// Equal reports whether two statuses are the same on the wire.
func (s ThreadStatus) Equal(o ThreadStatus) bool {
	if s.Type != o.Type || len(s.ActiveFlags) != len(o.ActiveFlags) {
		return false
	}
	for i := range s.ActiveFlags {
		if s.ActiveFlags[i] != o.ActiveFlags[i] {
			return false
		}
	}
	return true
}

func (s ThreadStatus) String() string {
	if s.Type == StatusActive && len(s.ActiveFlags) > 0 {
		return fmt.Sprintf("active%v", s.ActiveFlags)
	}
	return string(s.Type)
}

// ThreadSettings are the overrides accepted by thread/start, resume and fork.
type ThreadSettings struct {
	Cwd                   *string         `json:"cwd,omitempty"`
	Model                 *string         `json:"model,omitempty"`
	ModelProvider         *string         `json:"modelProvider,omitempty"`
	ServiceTier           *string         `json:"serviceTier,omitempty"`
	ApprovalPolicy        *AskForApproval `json:"approvalPolicy,omitempty"`
	ApprovalsReviewer     *string         `json:"approvalsReviewer,omitempty"`
	Sandbox               *SandboxMode    `json:"sandbox,omitempty"`
	Config                map[string]any  `json:"config,omitempty"`
	BaseInstructions      *string         `json:"baseInstructions,omitempty"`
	DeveloperInstructions *string         `json:"developerInstructions,omitempty"`
	Personality           *string         `json:"personality,omitempty"`
}

func (s *ThreadSettings) validate() error {
	if s.Sandbox != nil && !s.Sandbox.Valid() {
		return Errorf(ErrInvalidParams, "Invalid params: unknown sandbox mode `%s`, expected one of read-only, workspace-write, danger-full-access", *s.Sandbox)
	}
	return nil
}

// ThreadStartParams are thread/start's params.
type ThreadStartParams struct {
	ThreadSettings
	Ephemeral    *bool   `json:"ephemeral,omitempty"`
	ServiceName  *string `json:"serviceName,omitempty"`
	ThreadSource *string `json:"threadSource,omitempty"`
	// DynamicTools are the client's own tools (experimental API;
	// dynamictools.go).
	DynamicTools []DynamicToolSpec `json:"dynamicTools,omitempty"`
}

func (p *ThreadStartParams) Validate() error {
	if err := p.ThreadSettings.validate(); err != nil {
		return err
	}
	return ValidateDynamicTools(p.DynamicTools)
}

// ThreadSessionResult is the shared shape of thread/start, resume and fork results.
type ThreadSessionResult struct {
	Thread             Thread         `json:"thread"`
	Model              string         `json:"model"`
	ModelProvider      string         `json:"modelProvider"`
	ServiceTier        *string        `json:"serviceTier"`
	Cwd                string         `json:"cwd"`
	ApprovalPolicy     AskForApproval `json:"approvalPolicy"`
	ApprovalsReviewer  string         `json:"approvalsReviewer"`
	Sandbox            SandboxPolicy  `json:"sandbox"`
	ReasoningEffort    *string        `json:"reasoningEffort"`
	InstructionSources []string       `json:"instructionSources"`
}

// ThreadStartResult is thread/start's result.
type ThreadStartResult = ThreadSessionResult

// ThreadForkResult is thread/fork's result.
type ThreadForkResult = ThreadSessionResult

// ThreadResumeResult is thread/resume's result.
type ThreadResumeResult struct {
	ThreadSessionResult
	TurnsBackwardsCursor *string `json:"turnsBackwardsCursor"`
	ItemsBackwardsCursor *string `json:"itemsBackwardsCursor"`
}

// ThreadResumeParams are thread/resume's params.
type ThreadResumeParams struct {
	ThreadID string `json:"threadId"`
	ThreadSettings
	ExcludeTurns bool `json:"excludeTurns,omitempty"`
}

func (p *ThreadResumeParams) Validate() error {
	if p.ThreadID == "" {
		return MissingField("threadId")
	}
	return p.ThreadSettings.validate()
}

// ThreadForkParams are thread/fork's params.
type ThreadForkParams struct {
	ThreadID string `json:"threadId"`
	ThreadSettings
	LastTurnID   *string `json:"lastTurnId,omitempty"`
	Ephemeral    bool    `json:"ephemeral,omitempty"`
	ExcludeTurns bool    `json:"excludeTurns,omitempty"`
}

func (p *ThreadForkParams) Validate() error {
	if p.ThreadID == "" {
		return MissingField("threadId")
	}
	return p.ThreadSettings.validate()
}

// ThreadListParams are thread/list's params.
type ThreadListParams struct {
	Cursor         *string         `json:"cursor,omitempty"`
	Limit          *int            `json:"limit,omitempty"`
	SortKey        *string         `json:"sortKey,omitempty"`
	SortDirection  *string         `json:"sortDirection,omitempty"`
	Archived       *bool           `json:"archived,omitempty"`
	Cwd            json.RawMessage `json:"cwd,omitempty"` // string or string[]
	SearchTerm     *string         `json:"searchTerm,omitempty"`
	ModelProviders []string        `json:"modelProviders,omitempty"`
	SourceKinds    []string        `json:"sourceKinds,omitempty"`
	// IncludedThreadIDs (Codex 0.171) restricts the list to these ids, at
	// most MaxIncludedThreadIDs; nil is unrestricted, an empty list matches
	// nothing.
	IncludedThreadIDs *[]string `json:"includedThreadIds,omitempty"`
}

// MaxIncludedThreadIDs is the most ids thread/list's includedThreadIds takes.
const MaxIncludedThreadIDs = 100

// Cwds decodes the cwd filter, which may be one path or a list.
func (p *ThreadListParams) Cwds() ([]string, error) {
	if len(p.Cwd) == 0 || string(p.Cwd) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(p.Cwd, &one); err == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(p.Cwd, &many); err != nil {
		return nil, Errorf(ErrInvalidParams, "Invalid params: invalid type for field `cwd`: expected a string or an array of strings")
	}
	return many, nil
}

func (p *ThreadListParams) Validate() error {
	if p.SortKey != nil {
		switch *p.SortKey {
		case "created_at", "updated_at", "recency_at", "section_position":
		default:
			return Errorf(ErrInvalidParams, "Invalid params: unknown sortKey `%s`", *p.SortKey)
		}
	}
	if p.SortDirection != nil && *p.SortDirection != "asc" && *p.SortDirection != "desc" {
		return Errorf(ErrInvalidParams, "Invalid params: unknown sortDirection `%s`", *p.SortDirection)
	}
	if p.Limit != nil && *p.Limit < 0 {
		return Errorf(ErrInvalidParams, "Invalid params: limit must not be negative")
	}
	if p.IncludedThreadIDs != nil && len(*p.IncludedThreadIDs) > MaxIncludedThreadIDs {
		return Errorf(ErrInvalidParams, "Invalid params: `includedThreadIds` has %d ids, at most %d", len(*p.IncludedThreadIDs), MaxIncludedThreadIDs)
	}
	_, err := p.Cwds()
	return err
}

// ThreadListResult is thread/list's result.
type ThreadListResult struct {
	Data            []Thread `json:"data"`
	NextCursor      *string  `json:"nextCursor"`
	BackwardsCursor *string  `json:"backwardsCursor"`
	// ReadStates is always null: apserver keeps no read receipts, which
	// Codex's clients take as "durable read state is unavailable".
	ReadStates map[string]any `json:"readStates"`
}

// ThreadIDParams is the params shape of methods that take only a threadId
// (thread/archive, thread/unarchive).
type ThreadIDParams struct {
	ThreadID string `json:"threadId"`
}

func (p *ThreadIDParams) Validate() error {
	if p.ThreadID == "" {
		return MissingField("threadId")
	}
	return nil
}

// ThreadReadParams are thread/read's params.
type ThreadReadParams struct {
	ThreadID     string `json:"threadId"`
	IncludeTurns bool   `json:"includeTurns,omitempty"`
}

func (p *ThreadReadParams) Validate() error {
	if p.ThreadID == "" {
		return MissingField("threadId")
	}
	return nil
}

// ThreadResult is {thread}: thread/read and thread/unarchive results.
type ThreadResult struct {
	Thread Thread `json:"thread"`
}

// ThreadNameSetParams are thread/name/set's params.
type ThreadNameSetParams struct {
	ThreadID string  `json:"threadId"`
	Name     *string `json:"name"`
}

func (p *ThreadNameSetParams) Validate() error {
	if p.ThreadID == "" {
		return MissingField("threadId")
	}
	if p.Name == nil {
		return MissingField("name")
	}
	return nil
}

// Empty is the {} result.
type Empty struct{}

// ModelListParams are model/list's params.
type ModelListParams struct {
	Cursor        *string `json:"cursor,omitempty"`
	Limit         *int    `json:"limit,omitempty"`
	IncludeHidden *bool   `json:"includeHidden,omitempty"`
	ModelProvider *string `json:"modelProvider,omitempty"`
}

// Model is one entry of model/list.
type Model struct {
	ID                        string                  `json:"id"`
	Model                     string                  `json:"model"`
	DisplayName               string                  `json:"displayName"`
	Description               string                  `json:"description"`
	Hidden                    bool                    `json:"hidden"`
	SupportedReasoningEfforts []ReasoningEffortOption `json:"supportedReasoningEfforts"`
	DefaultReasoningEffort    string                  `json:"defaultReasoningEffort"`
	InputModalities           []string                `json:"inputModalities"`
	IsDefault                 bool                    `json:"isDefault"`
}

// ReasoningEffortOption is one supported effort of a model.
type ReasoningEffortOption struct {
	ReasoningEffort string `json:"reasoningEffort"`
	Description     string `json:"description"`
}

// ModelListResult is model/list's result.
type ModelListResult struct {
	Data       []Model `json:"data"`
	NextCursor *string `json:"nextCursor"`
}

// InitializeParams are initialize's params.
type InitializeParams struct {
	ClientInfo   *ClientInfo             `json:"clientInfo"`
	Capabilities *InitializeCapabilities `json:"capabilities,omitempty"`
}

func (p *InitializeParams) Validate() error {
	if p.ClientInfo == nil {
		return MissingField("clientInfo")
	}
	if p.ClientInfo.Name == "" {
		return MissingField("clientInfo.name")
	}
	if p.ClientInfo.Version == "" {
		return MissingField("clientInfo.version")
	}
	return nil
}

// ClientInfo names the client.
type ClientInfo struct {
	Name    string  `json:"name"`
	Title   *string `json:"title,omitempty"`
	Version string  `json:"version"`
}

// InitializeCapabilities are the client's capabilities, fixed per connection.
type InitializeCapabilities struct {
	ExperimentalAPI           bool     `json:"experimentalApi,omitempty"`
	OptOutNotificationMethods []string `json:"optOutNotificationMethods,omitempty"`
}

// InitializeResult is initialize's result.
type InitializeResult struct {
	UserAgent      string `json:"userAgent"`
	CodexHome      string `json:"codexHome"`
	PlatformFamily string `json:"platformFamily"`
	PlatformOS     string `json:"platformOs"`
}
