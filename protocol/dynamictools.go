package protocol

import (
	"encoding/json"
	"regexp"
)

// Editor-provided tools (Codex's dynamic tools, experimental API): a client
// declares them on thread/start; when the model calls one, the client is
// asked with item/tool/call and its answer is the tool's output.

// The client is asked with RequestItemToolCall (item/tool/call).

// DynamicToolSpec is one entry of thread/start's dynamicTools: a function
// tool, or a namespace of them.
type DynamicToolSpec struct {
	Type         string            `json:"type,omitempty"` // function (default) | namespace
	Name         string            `json:"name"`
	Description  string            `json:"description"`
	InputSchema  json.RawMessage   `json:"inputSchema,omitempty"`
	DeferLoading bool              `json:"deferLoading,omitempty"`
	Tools        []DynamicToolSpec `json:"tools,omitempty"` // of a namespace
}

var dynamicToolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidateDynamicTools checks thread/start's dynamicTools: names of
// letters, digits, "_" and "-" (at most 64), unique, an object input
// schema, namespaces of functions only.
func ValidateDynamicTools(specs []DynamicToolSpec) error {
	seen := map[string]bool{}
	for i, s := range specs {
		field := "dynamicTools[" + itoa(i) + "]"
		if err := validateDynamicTool(s, field, seen, ""); err != nil {
			return err
		}
	}
	return nil
}

func validateDynamicTool(s DynamicToolSpec, field string, seen map[string]bool, ns string) error {
	if !dynamicToolName.MatchString(s.Name) {
		return Errorf(ErrInvalidParams, "Invalid params: %s.name: %q must be 1 to 64 letters, digits, _ or -", field, s.Name)
	}
	switch s.Type {
	case "", "function":
		full := s.Name
		if ns != "" {
			full = ns + "__" + s.Name
		}
		if seen[full] {
			return Errorf(ErrInvalidParams, "Invalid params: %s.name: %q is declared twice", field, full)
		}
		seen[full] = true
		if len(s.InputSchema) > 0 {
			var obj map[string]any
			if json.Unmarshal(s.InputSchema, &obj) != nil {
				return Errorf(ErrInvalidParams, "Invalid params: %s.inputSchema: must be a JSON schema object", field)
			}
		}
	case "namespace":
		if ns != "" {
			return Errorf(ErrInvalidParams, "Invalid params: %s.type: a namespace cannot hold a namespace", field)
		}
		for j, t := range s.Tools {
			if err := validateDynamicTool(t, field+".tools["+itoa(j)+"]", seen, s.Name); err != nil {
				return err
			}
		}
	default:
		return Errorf(ErrInvalidParams, "Invalid params: %s.type: %q is not one of \"function\", \"namespace\"", field, s.Type)
	}
	return nil
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// DynamicToolCallParams are item/tool/call's params.
type DynamicToolCallParams struct {
	ThreadID  string          `json:"threadId"`
	TurnID    string          `json:"turnId"`
	CallID    string          `json:"callId"`
	Tool      string          `json:"tool"`
	Namespace *string         `json:"namespace"`
	Arguments json.RawMessage `json:"arguments"`
}

// DynamicToolCallResponse is the client's answer to item/tool/call.
type DynamicToolCallResponse struct {
	ContentItems []DynamicToolCallOutput `json:"contentItems"`
	Success      bool                    `json:"success"`
}

// DynamicToolCallOutput is one part of a dynamic tool's answer:
// inputText {text} or inputImage {imageUrl}.
type DynamicToolCallOutput struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"imageUrl,omitempty"`
}
