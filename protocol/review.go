package protocol

import "strings"

// review/start and collaboration modes (plan mode).
// Their method names are constants in methods_gen.go, generated from the
// schema (see internal/protogen).

// ReviewTarget is what review/start reviews.
type ReviewTarget struct {
	Type         string  `json:"type"` // uncommittedChanges | baseBranch | commit | custom
	Branch       string  `json:"branch,omitempty"`
	SHA          string  `json:"sha,omitempty"`
	Title        *string `json:"title,omitempty"`
	Instructions string  `json:"instructions,omitempty"`
}

// ReviewStartParams are review/start's params.
type ReviewStartParams struct {
	ThreadID string        `json:"threadId"`
	Target   *ReviewTarget `json:"target"`
	Delivery *string       `json:"delivery"`
}

func (p *ReviewStartParams) Validate() error {
	switch {
	case p.ThreadID == "":
		return MissingField("threadId")
	case p.Target == nil:
		return MissingField("target")
	}
	t := p.Target
	switch t.Type {
	case "uncommittedChanges":
	case "baseBranch":
		if strings.TrimSpace(t.Branch) == "" {
			return MissingField("target.branch")
		}
	case "commit":
		if strings.TrimSpace(t.SHA) == "" {
			return MissingField("target.sha")
		}
	case "custom":
		if strings.TrimSpace(t.Instructions) == "" {
			return MissingField("target.instructions")
		}
	case "":
		return MissingField("target.type")
	default:
		return Errorf(ErrInvalidParams, "Invalid params: unknown review target type `%s`, expected uncommittedChanges, baseBranch, commit or custom", t.Type)
	}
	if p.Delivery != nil && *p.Delivery != "inline" {
		return Errorf(ErrInvalidParams, "Invalid params: unknown delivery `%s`: Codex 0.169's protocol has only inline (detached is gone)", *p.Delivery)
	}
	return nil
}

// ReviewStartResult is review/start's result: the review turn, in the
// thread itself (inline delivery).
type ReviewStartResult struct {
	Turn           Turn   `json:"turn"`
	ReviewThreadID string `json:"reviewThreadId"`
}

// ReviewModeItem is the enteredReviewMode item (Exited false: Review is
// what is reviewed) or the exitedReviewMode item (Review is the review).
type ReviewModeItem struct {
	ID     string
	Review string
	Exited bool
}

func (ReviewModeItem) isThreadItem()    {}
func (i ReviewModeItem) ItemID() string { return i.ID }
func (i ReviewModeItem) ItemType() string {
	if i.Exited {
		return "exitedReviewMode"
	}
	return "enteredReviewMode"
}

func (i ReviewModeItem) MarshalJSON() ([]byte, error) {
	return tagged(i.ItemType(), struct {
		ID     string `json:"id"`
		Review string `json:"review"`
	}{i.ID, i.Review})
}

// Collaboration modes (collaborationMode/list, turn/start's
// collaborationMode).
const (
	ModeDefault = "default"
	ModePlan    = "plan"
)

// CollaborationMode is turn/start's collaborationMode.
type CollaborationMode struct {
	Mode     string                    `json:"mode"`
	Settings CollaborationModeSettings `json:"settings"`
}

// CollaborationModeSettings are a mode's settings; a null
// developer_instructions means the mode's own.
type CollaborationModeSettings struct {
	Model                 string  `json:"model"`
	ReasoningEffort       *string `json:"reasoning_effort"`
	DeveloperInstructions *string `json:"developer_instructions"`
}

func (c *CollaborationMode) validate() error {
	if c == nil {
		return nil
	}
	if c.Mode != ModeDefault && c.Mode != ModePlan {
		return Errorf(ErrInvalidParams, "Invalid params: unknown collaborationMode.mode `%s`, expected plan or default", c.Mode)
	}
	return nil
}
