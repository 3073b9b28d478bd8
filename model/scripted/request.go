package scripted

import (
	"bytes"
	"encoding/json"
	"strings"
)

// requestBody is the part of a Responses or Chat Completions request the
// server reads.
type requestBody struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Input    json.RawMessage `json:"input"`    // Responses: a string or a list of items
	Messages []inputItem     `json:"messages"` // Chat
	Tools    []toolDef       `json:"tools"`
}

// inputItem is a Responses input item or a Chat message.
type inputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// toolDef is an advertised tool, in the Responses shape
// ({"type":"function","name":…}) or the Chat shape
// ({"type":"function","function":{"name":…}}).
type toolDef struct {
	Type     string `json:"type"`
	Name     string `json:"name"`
	Function *struct {
		Name string `json:"name"`
	} `json:"function"`
}

func (t toolDef) name() string {
	if t.Function != nil && t.Function.Name != "" {
		return t.Function.Name
	}
	return t.Name
}

func (b *requestBody) toolNames() []string {
	var out []string
	for _, t := range b.Tools {
		if n := t.name(); n != "" {
			out = append(out, n)
		} else if t.Type != "" {
			out = append(out, t.Type)
		}
	}
	return out
}

// isCustom: the request advertises name as a Responses custom (free-form)
// tool.
func (b *requestBody) isCustom(name string) bool {
	for _, t := range b.Tools {
		if t.Type == "custom" && t.name() == name {
			return true
		}
	}
	return false
}

// shellTools is the order in which a scripted call without a Name picks
// an advertised tool.
var shellTools = []string{"exec_command", "shell", "shell_command", "bash"}

// defaultTool is the tool a call without a Name uses.
func (b *requestBody) defaultTool() string {
	for _, want := range shellTools {
		for _, t := range b.Tools {
			if t.name() == want {
				return want
			}
		}
	}
	for _, t := range b.Tools {
		if t.Type == "function" && t.name() != "" {
			return t.name()
		}
	}
	return "exec_command"
}

// conversation is what the server reads from a request's history.
type conversation struct {
	userText string // text of the last user message
	outputs  int    // tool outputs after it
	rounds   int    // runs of consecutive tool outputs after it
}

func (b *requestBody) conversation(wire string) conversation {
	items := b.Messages
	if wire == WireResponses {
		in := bytes.TrimSpace(b.Input)
		if len(in) > 0 && in[0] == '"' {
			var s string
			_ = json.Unmarshal(in, &s)
			return conversation{userText: s}
		}
		items = nil
		_ = json.Unmarshal(in, &items) // anything but a list: no history
	}
	last := -1
	for i, it := range items {
		if it.Role == "user" && (it.Type == "" || it.Type == "message") {
			last = i
		}
	}
	var c conversation
	if last >= 0 {
		c.userText = contentText(items[last].Content)
	}
	inRun := false
	for _, it := range items[last+1:] {
		switch {
		case isToolOutput(it):
			c.outputs++
			if !inRun {
				c.rounds++
				inRun = true
			}
		case isModelOutput(it):
			inRun = false
		}
	}
	return c
}

// isToolOutput: a Responses *_call_output item (function_call_output,
// custom_tool_call_output, …) or a Chat role "tool" (or legacy "function")
// message.
func isToolOutput(it inputItem) bool {
	return strings.HasSuffix(it.Type, "_call_output") || it.Role == "tool" || it.Role == "function"
}

// isModelOutput: something a model response produced (an assistant message,
// a reasoning item, a call). Other items (developer notes, say) do not
// split a run of tool outputs.
func isModelOutput(it inputItem) bool {
	return it.Role == "assistant" || it.Type == "reasoning" || strings.HasSuffix(it.Type, "_call")
}

// contentText is the text of a message content: a string, or the "text" of
// each part of a list, joined by newlines.
func contentText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var parts []struct {
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Text != nil {
			texts = append(texts, *p.Text)
		}
	}
	return strings.Join(texts, "\n")
}
