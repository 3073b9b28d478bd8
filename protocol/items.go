package protocol

import (
	"encoding/json"
	"fmt"
)

// ThreadItem is one entry of a turn. It is a sealed interface: the variants
// below are the only implementations, each marshalled with its "type" tag.
type ThreadItem interface {
	ItemID() string
	ItemType() string
	isThreadItem()
}

// ItemStatus is the status of a commandExecution, fileChange or
// dynamicToolCall item.
type ItemStatus string

// Item status values.
const (
	ItemInProgress ItemStatus = "inProgress"
	ItemCompleted  ItemStatus = "completed"
	ItemFailed     ItemStatus = "failed"
	ItemDeclined   ItemStatus = "declined"
)

// UserMessageItem is the user's input.
type UserMessageItem struct {
	ID       string      `json:"id"`
	ClientID *string     `json:"clientId"`
	Content  []UserInput `json:"content"`
}

// AgentMessageItem is text from the agent.
type AgentMessageItem struct {
	ID    string  `json:"id"`
	Text  string  `json:"text"`
	Phase *string `json:"phase"`
}

// ReasoningItem is the model's reasoning summary and raw content.
type ReasoningItem struct {
	ID      string   `json:"id"`
	Summary []string `json:"summary"`
	Content []string `json:"content"`
}

// PlanItem is a proposed plan (plan mode).
type PlanItem struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// CommandExecutionItem is a shell command the agent ran (or asked to run).
type CommandExecutionItem struct {
	ID               string          `json:"id"`
	Command          string          `json:"command"`
	Cwd              string          `json:"cwd"`
	ProcessID        *string         `json:"processId"`
	Source           string          `json:"source"`
	Status           ItemStatus      `json:"status"`
	CommandActions   []CommandAction `json:"commandActions"`
	AggregatedOutput *string         `json:"aggregatedOutput"`
	ExitCode         *int            `json:"exitCode"`
	DurationMs       *int64          `json:"durationMs"`
	// Alignment is apserver's extension: the project brain's verdict on
	// the command, when it judged it (docs/brain.md).
	Alignment *AlignmentVerdict `json:"alignment,omitempty"`
}

// CommandAction is a best-effort reading of what a command does.
type CommandAction struct {
	Type    string  `json:"type"` // read | listFiles | search | unknown
	Command string  `json:"command"`
	Name    string  `json:"name,omitempty"`
	Path    *string `json:"path,omitempty"`
	Query   *string `json:"query,omitempty"`
}

// FileChangeItem is a set of file edits.
type FileChangeItem struct {
	ID      string             `json:"id"`
	Changes []FileUpdateChange `json:"changes"`
	Status  ItemStatus         `json:"status"`
	// Alignment is apserver's extension: the project brain's verdict on
	// the changes (the worst of the files'), when it judged them
	// (docs/brain.md).
	Alignment *AlignmentVerdict `json:"alignment,omitempty"`
}

// FileUpdateChange is one file's change with its unified diff.
type FileUpdateChange struct {
	Path string          `json:"path"`
	Kind PatchChangeKind `json:"kind"`
	Diff string          `json:"diff"`
}

// PatchChangeKind is {type:add|delete} or {type:update, move_path}.
type PatchChangeKind struct {
	Type     string  `json:"type"`
	MovePath *string `json:"move_path,omitempty"`
}

// DynamicToolCallItem is a call of one of the server's own tools that is not
// a command or a file change: apserver uses it for read_file, list_dir and
// search, so clients see what the agent looked at.
type DynamicToolCallItem struct {
	ID           string                   `json:"id"`
	Tool         string                   `json:"tool"`
	Arguments    json.RawMessage          `json:"arguments"`
	Status       ItemStatus               `json:"status"` // inProgress | completed | failed
	Success      *bool                    `json:"success"`
	ContentItems []DynamicToolCallContent `json:"contentItems"`
	DurationMs   *int64                   `json:"durationMs"`
	// Namespace is the client tool's namespace (dynamictools.go).
	Namespace *string `json:"namespace,omitempty"`
}

// DynamicToolCallContent is one part of a dynamic tool call's output.
type DynamicToolCallContent struct {
	Type     string `json:"type"` // inputText | inputImage
	Text     string `json:"text"`
	ImageURL string `json:"imageUrl,omitempty"` // inputImage
}

// ContextCompactionItem marks a compaction of the history.
type ContextCompactionItem struct {
	ID string `json:"id"`
}

// RawItem carries an item of a type this version does not model.
type RawItem struct {
	ID   string
	Type string
	Raw  json.RawMessage
}

func (UserMessageItem) isThreadItem()       {}
func (AgentMessageItem) isThreadItem()      {}
func (ReasoningItem) isThreadItem()         {}
func (PlanItem) isThreadItem()              {}
func (CommandExecutionItem) isThreadItem()  {}
func (FileChangeItem) isThreadItem()        {}
func (ContextCompactionItem) isThreadItem() {}
func (DynamicToolCallItem) isThreadItem()   {}
func (RawItem) isThreadItem()               {}

func (i UserMessageItem) ItemID() string       { return i.ID }
func (i AgentMessageItem) ItemID() string      { return i.ID }
func (i ReasoningItem) ItemID() string         { return i.ID }
func (i PlanItem) ItemID() string              { return i.ID }
func (i CommandExecutionItem) ItemID() string  { return i.ID }
func (i FileChangeItem) ItemID() string        { return i.ID }
func (i ContextCompactionItem) ItemID() string { return i.ID }
func (i DynamicToolCallItem) ItemID() string   { return i.ID }
func (i RawItem) ItemID() string               { return i.ID }

func (UserMessageItem) ItemType() string       { return "userMessage" }
func (AgentMessageItem) ItemType() string      { return "agentMessage" }
func (ReasoningItem) ItemType() string         { return "reasoning" }
func (PlanItem) ItemType() string              { return "plan" }
func (CommandExecutionItem) ItemType() string  { return "commandExecution" }
func (FileChangeItem) ItemType() string        { return "fileChange" }
func (ContextCompactionItem) ItemType() string { return "contextCompaction" }
func (DynamicToolCallItem) ItemType() string   { return "dynamicToolCall" }
func (i RawItem) ItemType() string             { return i.Type }

// tagged marshals v with a leading "type" field. A long string in v (see
// MarshalLarge) is escaped straight into the result, which is allocated
// once at its size: the stored item and the notification of an answer cut
// at a 64 MiB cap each cost 64 MiB, not several times that.
func tagged(typ string, v any) ([]byte, error) {
	if l, ok, err := MarshalLarge(v, true); err != nil {
		return nil, err
	} else if ok {
		out := makeLarge(l.Len() + len(typ) + 12) // largejson.go
		out = append(out, `{"type":"`...)
		out = append(out, typ...)
		out = append(out, '"')
		if l.Len() > 2 {
			out = append(out, ',')
			return l.appendFrom(out, 1), nil
		}
		return append(out, '}'), nil
	}
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(body)+len(typ)+12)
	out = append(out, `{"type":"`...)
	out = append(out, typ...)
	out = append(out, '"')
	if len(body) > 2 {
		out = append(out, ',')
		out = append(out, body[1:]...)
	} else {
		out = append(out, '}')
	}
	return out, nil
}

func (i UserMessageItem) MarshalJSON() ([]byte, error) {
	type a UserMessageItem
	if i.Content == nil {
		i.Content = []UserInput{}
	}
	return tagged(i.ItemType(), a(i))
}
func (i AgentMessageItem) MarshalJSON() ([]byte, error) {
	type a AgentMessageItem
	return tagged(i.ItemType(), a(i))
}
func (i ReasoningItem) MarshalJSON() ([]byte, error) {
	type a ReasoningItem
	if i.Summary == nil {
		i.Summary = []string{}
	}
	if i.Content == nil {
		i.Content = []string{}
	}
	return tagged(i.ItemType(), a(i))
}
func (i PlanItem) MarshalJSON() ([]byte, error) {
	type a PlanItem
	return tagged(i.ItemType(), a(i))
}
func (i CommandExecutionItem) MarshalJSON() ([]byte, error) {
	type a CommandExecutionItem
	if i.CommandActions == nil {
		i.CommandActions = []CommandAction{}
	}
	return tagged(i.ItemType(), a(i))
}
func (i FileChangeItem) MarshalJSON() ([]byte, error) {
	type a FileChangeItem
	if i.Changes == nil {
		i.Changes = []FileUpdateChange{}
	}
	return tagged(i.ItemType(), a(i))
}
func (i ContextCompactionItem) MarshalJSON() ([]byte, error) {
	type a ContextCompactionItem
	return tagged(i.ItemType(), a(i))
}
func (i DynamicToolCallItem) MarshalJSON() ([]byte, error) {
	type a DynamicToolCallItem
	if len(i.Arguments) == 0 {
		i.Arguments = json.RawMessage("{}")
	}
	return tagged(i.ItemType(), a(i))
}
func (i RawItem) MarshalJSON() ([]byte, error) { return i.Raw, nil }

// UnmarshalThreadItem decodes a tagged item. Unknown types come back as
// RawItem so nothing is lost.
func UnmarshalThreadItem(b []byte) (ThreadItem, error) {
	var head struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("decoding thread item: %w", err)
	}
	var (
		it  ThreadItem
		err error
	)
	switch head.Type {
	case "userMessage":
		var v UserMessageItem
		err = json.Unmarshal(b, &v)
		it = v
	case "agentMessage":
		var v AgentMessageItem
		err = json.Unmarshal(b, &v)
		it = v
	case "reasoning":
		var v ReasoningItem
		err = json.Unmarshal(b, &v)
		it = v
	case "plan":
		var v PlanItem
		err = json.Unmarshal(b, &v)
		it = v
	case "commandExecution":
		var v CommandExecutionItem
		err = json.Unmarshal(b, &v)
		it = v
	case "fileChange":
		var v FileChangeItem
		err = json.Unmarshal(b, &v)
		it = v
	case "contextCompaction":
		var v ContextCompactionItem
		err = json.Unmarshal(b, &v)
		it = v
	case "dynamicToolCall":
		var v DynamicToolCallItem
		err = json.Unmarshal(b, &v)
		it = v
	default:
		it = RawItem{ID: head.ID, Type: head.Type, Raw: append(json.RawMessage(nil), b...)}
	}
	if err != nil {
		return nil, fmt.Errorf("decoding %s item: %w", head.Type, err)
	}
	return it, nil
}
