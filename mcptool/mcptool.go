package mcptool

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/mcp"
	"github.com/apserver/apserver/protocol"
)

// MaxNameLen is the longest function name providers accept.
const MaxNameLen = 64

// ID is one MCP tool: its server and its name there.
type ID struct{ Server, Tool string }

// Names gives each tool its model name: mcp__SERVER__TOOL with characters
// outside [A-Za-z0-9_-] as "_"; a name longer than MaxNameLen bytes, or
// one that two tools would share, is cut and given a hash of the server
// and tool.
func Names(ids []ID) []string {
	names := make([]string, len(ids))
	seen := map[string]int{}
	for i, id := range ids {
		names[i] = sanitizeName("mcp__" + id.Server + "__" + id.Tool)
		seen[names[i]]++
	}
	for i, id := range ids {
		if n := names[i]; len(n) > MaxNameLen || seen[n] > 1 {
			sum := sha1.Sum([]byte(id.Server + "\x00" + id.Tool))
			h := hex.EncodeToString(sum[:])[:12]
			names[i] = n[:min(len(n), MaxNameLen-len(h)-1)] + "_" + h
		}
	}
	return names
}

func sanitizeName(n string) string {
	b := []byte(n)
	for i, c := range b {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

// SanitizeSchema makes an MCP input schema one every provider takes as
// function parameters: an object with properties, without a top-level
// $schema, $id, combinator or enum (OpenAI refuses those at the top).
func SanitizeSchema(raw json.RawMessage) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	for _, k := range []string{"$schema", "$id", "oneOf", "anyOf", "allOf", "not", "enum"} {
		delete(m, k)
	}
	m["type"] = "object"
	if p, ok := m["properties"].(map[string]any); !ok || p == nil {
		m["properties"] = map[string]any{}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return b
}

// NeedsApproval is Codex's rule: "approve" never asks, "prompt" always
// does, and "auto" asks for a tool whose annotations say it may change
// things or reach the outside world (destructive, or not read-only and
// not known to be non-destructive and closed-world); a tool without
// annotations is not asked about under "auto". Full access asks for
// nothing.
func NeedsApproval(mode string, a *mcp.Annotations, fullAccess bool) bool {
	switch {
	case fullAccess, mode == config.MCPApprovalApprove:
		return false
	case mode == config.MCPApprovalPrompt:
		return true
	case a == nil:
		return false
	case a.Destructive != nil && *a.Destructive:
		return true
	case a.ReadOnly:
		return false
	}
	return a.Destructive == nil || *a.Destructive || a.OpenWorld == nil || *a.OpenWorld
}

// ApprovalAnswer reads an answer: the client's {action, _meta} or a
// {decision} from full auto's rules or decision model.
func ApprovalAnswer(raw json.RawMessage) (action string, session bool, err error) {
	var a struct {
		Action   string `json:"action"`
		Decision string `json:"decision"`
		Meta     struct {
			Persist string `json:"persist"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", false, fmt.Errorf("decoding the answer: %w", err)
	}
	switch {
	case a.Action == "accept" || a.Action == "decline" || a.Action == "cancel":
		return a.Action, a.Action == "accept" && (a.Meta.Persist == "session" || a.Meta.Persist == "always"), nil
	case a.Decision == string(protocol.DecisionAccept):
		return "accept", false, nil
	case a.Decision == string(protocol.DecisionAcceptForSession):
		return "accept", true, nil
	case a.Decision == string(protocol.DecisionDecline):
		return "decline", false, nil
	case a.Decision == string(protocol.DecisionCancel):
		return "cancel", false, nil
	}
	return "", false, fmt.Errorf("action %q is not one of \"accept\", \"decline\", \"cancel\"", a.Action)
}

// TruncationMarker ends a tool output cut at the limit.
func TruncationMarker(shown, total int) string {
	return fmt.Sprintf("\n… [output truncated: %d of %d bytes shown]", shown, total)
}

// Output is a tool result as the item shows it (content blocks, text cut
// at limit) and as the model reads it (the text, other blocks as JSON,
// cut at limit with a marker; an error result says so).
func Output(res mcp.Result, limit int) ([]json.RawMessage, string) {
	var sb strings.Builder
	if res.IsError {
		sb.WriteString("The tool reported an error:\n")
	}
	shown := make([]json.RawMessage, 0, len(res.Content))
	budget := limit
	for _, c := range res.Content {
		var block struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		_ = json.Unmarshal(c, &block)
		if block.Type == "text" {
			sb.WriteString(block.Text)
			sb.WriteString("\n")
			txt := block.Text
			if len(txt) > budget {
				txt = CutUTF8(txt, max(budget, 0)) + TruncationMarker(max(budget, 0), len(block.Text))
			}
			budget -= len(block.Text)
			b, _ := json.Marshal(map[string]string{"type": "text", "text": txt})
			shown = append(shown, b)
			continue
		}
		if len(c) > budget {
			b, _ := json.Marshal(map[string]string{"type": "text", "text": fmt.Sprintf("[%s content of %d bytes omitted]", block.Type, len(c))})
			shown = append(shown, b)
			sb.Write(b)
		} else {
			shown = append(shown, c)
			sb.Write(c)
		}
		sb.WriteString("\n")
		budget -= len(c)
	}
	if len(res.Content) == 0 && len(res.Structured) > 0 {
		sb.Write(res.Structured)
	}
	out := strings.TrimSuffix(sb.String(), "\n")
	if len(out) > limit {
		out = CutUTF8(out, limit) + TruncationMarker(limit, len(out))
	}
	return shown, out
}

// CutUTF8 cuts s to at most n bytes without splitting a character.
func CutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
