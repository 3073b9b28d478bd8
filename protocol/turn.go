package protocol

import "encoding/json"

// TurnStatus is a turn's status on the wire.
type TurnStatus string

// Turn statuses.
const (
	TurnInProgress  TurnStatus = "inProgress"
	TurnCompleted   TurnStatus = "completed"
	TurnInterrupted TurnStatus = "interrupted"
	TurnFailed      TurnStatus = "failed"
)

// ItemsView says how much of a turn's items a Turn carries.
type ItemsView string

// Items views of a turn.
const (
	ItemsNotLoaded ItemsView = "notLoaded"
	ItemsSummary   ItemsView = "summary"
	ItemsFull      ItemsView = "full"
)

// Turn is one user request and everything the agent did for it. startedAt
// and completedAt are Unix seconds; durationMs milliseconds.
type Turn struct {
	ID          string       `json:"id"`
	RootTurnID  *string      `json:"rootTurnId"`
	Items       []ThreadItem `json:"items"`
	ItemsView   ItemsView    `json:"itemsView"`
	Status      TurnStatus   `json:"status"`
	Error       *TurnError   `json:"error"`
	StartedAt   *int64       `json:"startedAt"`
	CompletedAt *int64       `json:"completedAt"`
	DurationMs  *int64       `json:"durationMs"`
}

func (t *Turn) UnmarshalJSON(b []byte) error {
	type alias Turn
	var v struct {
		alias
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*t = Turn(v.alias)
	t.Items = make([]ThreadItem, 0, len(v.Items))
	for _, raw := range v.Items {
		it, err := UnmarshalThreadItem(raw)
		if err != nil {
			return err
		}
		t.Items = append(t.Items, it)
	}
	return nil
}

// TurnError explains a failed turn.
type TurnError struct {
	Message           string          `json:"message"`
	CodexErrorInfo    json.RawMessage `json:"codexErrorInfo"` // a string such as "internalServerError" or an object; null when unknown
	AdditionalDetails *string         `json:"additionalDetails"`
	Misalignment      json.RawMessage `json:"misalignment"`
}

// ErrorInfo builds a string-valued CodexErrorInfo.
func ErrorInfo(kind string) json.RawMessage {
	b, _ := json.Marshal(kind)
	return b
}

// ErrorInfoNotSteerable is the CodexErrorInfo of a steer into a review
// or compaction turn: {"activeTurnNotSteerable":{"turnKind":kind}}.
func ErrorInfoNotSteerable(kind string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"activeTurnNotSteerable": map[string]string{"turnKind": kind}})
	return b
}

// ErrorInfoHTTP builds an object-valued CodexErrorInfo such as
// {"responseTooManyFailedAttempts":{"httpStatusCode":429}}.
func ErrorInfoHTTP(kind string, status int) json.RawMessage {
	inner := map[string]any{"httpStatusCode": nil}
	if status > 0 {
		inner["httpStatusCode"] = status
	}
	b, _ := json.Marshal(map[string]any{kind: inner})
	return b
}

// UserInput is one piece of user input. Only "text" is acted on by the
// agent today; other variants are kept and shown.
type UserInput struct {
	Type         string          `json:"type"` // text | image | localImage | skill | mention | audio | localAudio
	Text         string          `json:"text,omitempty"`
	TextElements []TextElement   `json:"text_elements,omitempty"`
	URL          string          `json:"url,omitempty"`
	Path         string          `json:"path,omitempty"`
	Name         string          `json:"name,omitempty"`
	Detail       json.RawMessage `json:"detail,omitempty"`
}

// TextElement is a UI span inside a text input.
type TextElement struct {
	ByteRange   ByteRange `json:"byteRange"`
	Placeholder *string   `json:"placeholder"`
}

// ByteRange is a half-open byte range.
type ByteRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// TextInput is a convenience constructor.
func TextInput(s string) UserInput {
	return UserInput{Type: "text", Text: s, TextElements: []TextElement{}}
}

// InputText concatenates the text parts of an input list.
func InputText(in []UserInput) string {
	var s string
	for _, u := range in {
		if u.Type == "text" {
			if s != "" {
				s += "\n"
			}
			s += u.Text
		}
	}
	return s
}

func validateInput(in []UserInput, present bool) error {
	if !present {
		return MissingField("input")
	}
	for _, u := range in {
		switch u.Type {
		case "text", "image", "localImage", "skill", "mention", "audio", "localAudio":
		case "":
			return MissingField("input[].type")
		default:
			return Errorf(ErrInvalidParams, "Invalid params: unknown input type `%s`", u.Type)
		}
	}
	return nil
}

// TurnStartParams are turn/start's params.
type TurnStartParams struct {
	ThreadID          string          `json:"threadId"`
	Input             []UserInput     `json:"input"`
	Cwd               *string         `json:"cwd,omitempty"`
	ApprovalPolicy    *AskForApproval `json:"approvalPolicy,omitempty"`
	ApprovalsReviewer *string         `json:"approvalsReviewer,omitempty"`
	SandboxPolicy     *SandboxPolicy  `json:"sandboxPolicy,omitempty"`
	Model             *string         `json:"model,omitempty"`
	ServiceTier       *string         `json:"serviceTier,omitempty"`
	Effort            *string         `json:"effort,omitempty"`
	Summary           *string         `json:"summary,omitempty"`
	OutputSchema      json.RawMessage `json:"outputSchema,omitempty"`
	ClientUserMessage *string         `json:"clientUserMessageId,omitempty"`
	ParentTurnID      *string         `json:"parentTurnId,omitempty"`
	RootTurnID        *string         `json:"rootTurnId,omitempty"`
	// CollaborationMode picks plan or default mode; it sticks (review.go).
	CollaborationMode *CollaborationMode `json:"collaborationMode,omitempty"`
}

func (p *TurnStartParams) Validate() error {
	if p.ThreadID == "" {
		return MissingField("threadId")
	}
	if err := p.CollaborationMode.validate(); err != nil {
		return err
	}
	if p.SandboxPolicy != nil {
		switch p.SandboxPolicy.Type {
		case "dangerFullAccess", "readOnly", "workspaceWrite", "externalSandbox":
		default:
			return Errorf(ErrInvalidParams, "Invalid params: unknown sandboxPolicy type `%s`", p.SandboxPolicy.Type)
		}
	}
	return validateInput(p.Input, p.Input != nil)
}

// TurnResult is {turn}: turn/start's result.
type TurnResult struct {
	Turn Turn `json:"turn"`
}

// TurnSteerParams are turn/steer's params.
type TurnSteerParams struct {
	ThreadID          string      `json:"threadId"`
	ExpectedTurnID    string      `json:"expectedTurnId"`
	Input             []UserInput `json:"input"`
	ClientUserMessage *string     `json:"clientUserMessageId,omitempty"`
}

func (p *TurnSteerParams) Validate() error {
	if p.ThreadID == "" {
		return MissingField("threadId")
	}
	if p.ExpectedTurnID == "" {
		return MissingField("expectedTurnId")
	}
	return validateInput(p.Input, p.Input != nil)
}

// TurnSteerResult is turn/steer's result.
type TurnSteerResult struct {
	TurnID string `json:"turnId"`
}

// TurnInterruptParams are turn/interrupt's params.
type TurnInterruptParams struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
}

func (p *TurnInterruptParams) Validate() error {
	if p.ThreadID == "" {
		return MissingField("threadId")
	}
	if p.TurnID == "" {
		return MissingField("turnId")
	}
	return nil
}
