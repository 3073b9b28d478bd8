package dynamictools

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apserver/apserver/agenttools"
	"github.com/apserver/apserver/mcptool"
	"github.com/apserver/apserver/protocol"
)

// Tool is one declared tool under the name the model calls it by:
// its name, or NAMESPACE__NAME for a tool of a namespace.
type Tool struct {
	Name      string
	Tool      string
	Namespace *string
	Spec      protocol.DynamicToolSpec
}

// Encode keeps thread/start's dynamicTools with the thread's
// settings (so they survive a resume), refusing a name the agent's own
// tools or the MCP tools use.
func Encode(specs []protocol.DynamicToolSpec) (string, error) {
	if len(specs) == 0 {
		return "", nil
	}
	builtin := map[string]bool{}
	for _, tl := range agenttools.Build("function") {
		builtin[tl.Name] = true
	}
	for n := range agenttools.ExecAliases {
		builtin[n] = true
	}
	for _, d := range Flatten(specs) {
		if builtin[d.Name] || strings.HasPrefix(d.Name, "mcp__") {
			return "", protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: dynamicTools: %q is the name of one of apserver's own tools", d.Name)
		}
	}
	b, err := json.Marshal(specs)
	if err != nil {
		return "", fmt.Errorf("encoding dynamicTools: %w", err)
	}
	return string(b), nil
}

// Flatten lists the declared tools, a namespace's under
// NAMESPACE__NAME.
func Flatten(specs []protocol.DynamicToolSpec) []Tool {
	var out []Tool
	for _, s := range specs {
		if s.Type == "namespace" {
			ns := s.Name
			for _, t := range s.Tools {
				out = append(out, Tool{Name: ns + "__" + t.Name, Tool: t.Name, Namespace: &ns, Spec: t})
			}
			continue
		}
		out = append(out, Tool{Name: s.Name, Tool: s.Name, Spec: s})
	}
	return out
}

// Decode reads the client's answer to item/tool/call: {contentItems,
// success}, each content item inputText or inputImage.
func Decode(raw json.RawMessage) (protocol.DynamicToolCallResponse, error) {
	var res protocol.DynamicToolCallResponse
	if uerr := json.Unmarshal(raw, &res); uerr != nil {
		return res, fmt.Errorf("the editor's answer is not {contentItems, success}: %v", uerr)
	}
	for i, c := range res.ContentItems {
		if c.Type != "inputText" && c.Type != "inputImage" {
			return res, fmt.Errorf("the editor's answer has contentItems[%d].type %q, not inputText or inputImage", i, c.Type)
		}
	}
	return res, nil
}

// Output is an answer as the item shows it (each text cut at limit, images
// as they are) and as the model reads it (the texts, an image as
// "[image]", cut at limit with a marker; a failure says so).
func Output(res protocol.DynamicToolCallResponse, limit int) ([]protocol.DynamicToolCallContent, string) {
	items := []protocol.DynamicToolCallContent{}
	var sb strings.Builder
	if !res.Success {
		sb.WriteString("The tool reported a failure:\n")
	}
	for _, c := range res.ContentItems {
		if c.Type == "inputImage" {
			items = append(items, protocol.DynamicToolCallContent{Type: c.Type, ImageURL: c.ImageURL})
			sb.WriteString("[image]\n")
			continue
		}
		text := c.Text
		if len(text) > limit {
			text = mcptool.CutUTF8(text, limit) + mcptool.TruncationMarker(limit, len(c.Text))
		}
		items = append(items, protocol.DynamicToolCallContent{Type: "inputText", Text: text})
		sb.WriteString(c.Text)
		sb.WriteString("\n")
	}
	out := strings.TrimSuffix(sb.String(), "\n")
	if len(out) > limit {
		out = mcptool.CutUTF8(out, limit) + mcptool.TruncationMarker(limit, len(out))
	}
	return items, out
}
