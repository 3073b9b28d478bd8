package mcptool

import (
	"encoding/json"
	"fmt"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/mcp"
	"github.com/apserver/apserver/protocol"
)

// ApprovalRequest is the approval Codex asks for a call of tool on
// server: mcpServer/elicitation/request, a form with no fields whose _meta
// says it is an MCP tool approval (with the call's arguments, and "Allow
// for this session" offered under the "auto" mode). The caller sets the
// thread, turn and item.
func ApprovalRequest(server string, tool mcp.Tool, args json.RawMessage, mode string) protocol.McpServerElicitationParams {
	meta := map[string]any{"codex_approval_kind": "mcp_tool_call", "tool_params": args}
	if mode == config.MCPApprovalAuto {
		meta["persist"] = "session" // "Allow for this session" is offered
	}
	if tool.Title != "" {
		meta["tool_title"] = tool.Title
	}
	if tool.Description != "" {
		meta["tool_description"] = tool.Description
	}
	rawMeta, _ := json.Marshal(meta)
	return protocol.McpServerElicitationParams{
		ServerName:      server,
		Mode:            "form",
		Message:         fmt.Sprintf("Allow the %s MCP server to run tool %q?", server, tool.Name),
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`),
		Meta:            rawMeta,
	}
}

// ElicitParams forwards a server's own elicitation to the client as Codex
// does; the caller sets the thread and turn.
func ElicitParams(server string, req mcp.ElicitRequest) protocol.McpServerElicitationParams {
	return protocol.McpServerElicitationParams{ServerName: server, Mode: req.Mode, Message: req.Message,
		RequestedSchema: req.RequestedSchema, URL: req.URL, ElicitationID: req.ElicitationID, Meta: req.Meta}
}

// ElicitAnswer reads the client's answer to a forwarded elicitation: its
// action (accept, decline or cancel), content and _meta.
func ElicitAnswer(raw json.RawMessage) (mcp.ElicitResult, error) {
	var r struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
		Meta    map[string]any `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return mcp.ElicitResult{}, fmt.Errorf("decoding the answer: %w", err)
	}
	if r.Action != "accept" && r.Action != "decline" && r.Action != "cancel" {
		return mcp.ElicitResult{}, fmt.Errorf("action %q is not one of \"accept\", \"decline\", \"cancel\"", r.Action)
	}
	return mcp.ElicitResult{Action: r.Action, Content: r.Content, Meta: r.Meta}, nil
}

// ItemResult is a tool's result as its mcpToolCall item shows it (content
// cut at limit, structured content dropped past it) and as the model reads
// it, and whether the tool reported an error. limit <= 0 is the default
// (mcp_tool_output_max_bytes).
func ItemResult(res mcp.Result, limit int64) (item *protocol.McpToolCallResult, forModel string, failed bool) {
	if limit <= 0 {
		limit = config.DefaultMCPToolOutputMaxBytes
	}
	shown, forModel := Output(res, int(limit))
	item = &protocol.McpToolCallResult{Content: shown, StructuredContent: res.Structured, Meta: res.Meta}
	if len(res.Structured) > int(limit) {
		item.StructuredContent = nil
	}
	return item, forModel, res.IsError
}
