package protocol

import (
	"encoding/json"
	"strconv"
)

// MCP servers (Codex's shapes; docs/mcp.md). The method names are generated
// (methods_gen.go): MethodMcpServerStatusList, MethodMcpServerToolCall,
// MethodMcpResourceRead, MethodMcpServerReload, NotifyMcpServerStartupStatus,
// NotifyMcpToolCallProgress, RequestMcpServerElicitation.

// McpToolCallItem is a call of a tool of an MCP server.
type McpToolCallItem struct {
	ID         string             `json:"id"`
	Server     string             `json:"server"`
	Tool       string             `json:"tool"`
	Status     ItemStatus         `json:"status"` // inProgress | completed | failed
	Arguments  json.RawMessage    `json:"arguments"`
	Result     *McpToolCallResult `json:"result"`
	Error      *McpToolCallError  `json:"error"`
	DurationMs *int64             `json:"durationMs"`
}

// McpToolCallResult is what the tool answered.
type McpToolCallResult struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	Meta              json.RawMessage   `json:"_meta,omitempty"`
}

// McpToolCallError says why the call did not complete.
type McpToolCallError struct {
	Message string `json:"message"`
}

func (McpToolCallItem) isThreadItem()    {}
func (i McpToolCallItem) ItemID() string { return i.ID }
func (McpToolCallItem) ItemType() string { return "mcpToolCall" }
func (i McpToolCallItem) MarshalJSON() ([]byte, error) {
	type a McpToolCallItem
	if len(i.Arguments) == 0 {
		i.Arguments = json.RawMessage("{}")
	}
	if i.Result != nil && i.Result.Content == nil {
		r := *i.Result
		r.Content = []json.RawMessage{}
		i.Result = &r
	}
	return tagged(i.ItemType(), a(i))
}

// McpToolCallProgressNotification is item/mcpToolCall/progress.
type McpToolCallProgressNotification struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	ItemID   string `json:"itemId"`
	Message  string `json:"message"`
}

// McpServerStartupState is a server's state in
// mcpServer/startupStatus/updated.
type McpServerStartupState string

// Startup states.
const (
	McpStartupStarting  McpServerStartupState = "starting"
	McpStartupReady     McpServerStartupState = "ready"
	McpStartupFailed    McpServerStartupState = "failed"
	McpStartupCancelled McpServerStartupState = "cancelled"
)

// McpServerStatusUpdatedNotification is mcpServer/startupStatus/updated.
type McpServerStatusUpdatedNotification struct {
	Name     string                `json:"name"`
	Status   McpServerStartupState `json:"status"`
	Error    *string               `json:"error"`
	ThreadID *string               `json:"threadId"`
}

// McpServerStatusListParams are mcpServerStatus/list's params.
type McpServerStatusListParams struct {
	Cursor     *string `json:"cursor,omitempty"`
	Limit      *uint32 `json:"limit,omitempty"`
	Detail     *string `json:"detail,omitempty"` // full | toolsAndAuthOnly
	ServerName *string `json:"serverName,omitempty"`
	ThreadID   *string `json:"threadId,omitempty"`
}

// Validate checks the enum and the cursor.
func (p McpServerStatusListParams) Validate() error {
	if p.Detail != nil && *p.Detail != "full" && *p.Detail != "toolsAndAuthOnly" {
		return Errorf(ErrInvalidParams, "Invalid params: detail: %q is not one of \"full\", \"toolsAndAuthOnly\"", *p.Detail)
	}
	if p.Cursor != nil {
		if n, err := strconv.Atoi(*p.Cursor); err != nil || n < 0 {
			return Errorf(ErrInvalidParams, "Invalid params: cursor: %q is not a cursor this server returned", *p.Cursor)
		}
	}
	return nil
}

// McpServerConnectionStatus is a server's runtime status.
type McpServerConnectionStatus string

// Runtime statuses.
const (
	McpNotStarted McpServerConnectionStatus = "notStarted"
	McpStarting   McpServerConnectionStatus = "starting"
	McpConnected  McpServerConnectionStatus = "connected"
	McpFailed     McpServerConnectionStatus = "failed"
	McpDisabled   McpServerConnectionStatus = "disabled"
)

// McpServerStatus is one server in mcpServerStatus/list.
type McpServerStatus struct {
	Name              string                     `json:"name"`
	AuthStatus        string                     `json:"authStatus"` // unsupported | bearerToken | …
	Tools             map[string]json.RawMessage `json:"tools"`
	Resources         []json.RawMessage          `json:"resources"`
	ResourceTemplates []json.RawMessage          `json:"resourceTemplates"`
	RuntimeStatus     McpServerConnectionStatus  `json:"runtimeStatus"`
	ServerInfo        json.RawMessage            `json:"serverInfo,omitempty"`
	HTTPOrigin        *string                    `json:"httpOrigin"`
	ToolsError        *string                    `json:"toolsError"`
}

// McpServerStatusListResult is mcpServerStatus/list's result.
type McpServerStatusListResult struct {
	Data       []McpServerStatus `json:"data"`
	NextCursor *string           `json:"nextCursor"`
}

// McpServerToolCallParams are mcpServer/tool/call's params.
type McpServerToolCallParams struct {
	ThreadID  string          `json:"threadId"`
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Meta      json.RawMessage `json:"_meta,omitempty"`
}

// Validate checks the required fields.
func (p McpServerToolCallParams) Validate() error {
	switch {
	case p.ThreadID == "":
		return MissingField("threadId")
	case p.Server == "":
		return MissingField("server")
	case p.Tool == "":
		return MissingField("tool")
	}
	return nil
}

// McpServerToolCallResult is mcpServer/tool/call's result.
type McpServerToolCallResult struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	IsError           *bool             `json:"isError"`
	Meta              json.RawMessage   `json:"_meta,omitempty"`
}

// McpResourceReadParams are mcpServer/resource/read's params.
type McpResourceReadParams struct {
	ThreadID *string `json:"threadId,omitempty"`
	Server   string  `json:"server"`
	URI      string  `json:"uri"`
}

// Validate checks the required fields.
func (p McpResourceReadParams) Validate() error {
	switch {
	case p.Server == "":
		return MissingField("server")
	case p.URI == "":
		return MissingField("uri")
	}
	return nil
}

// McpResourceReadResult is mcpServer/resource/read's result.
type McpResourceReadResult struct {
	Contents []json.RawMessage `json:"contents"`
}

// McpServerElicitationParams is mcpServer/elicitation/request: a form (an
// MCP tool approval is one with _meta.codex_approval_kind =
// "mcp_tool_call") or a URL to open.
type McpServerElicitationParams struct {
	ThreadID        string          `json:"threadId"`
	TurnID          *string         `json:"turnId"`
	ServerName      string          `json:"serverName"`
	Mode            string          `json:"mode"` // form | url
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	URL             string          `json:"url,omitempty"`
	ElicitationID   string          `json:"elicitationId,omitempty"`
	Meta            json.RawMessage `json:"_meta,omitempty"`
	// ItemID is the mcpToolCall item an approval is about (not sent).
	ItemID string `json:"-"`
}

// McpServerElicitationResponse is the client's answer.
type McpServerElicitationResponse struct {
	Action  string          `json:"action"` // accept | decline | cancel
	Content json.RawMessage `json:"content,omitempty"`
	Meta    json.RawMessage `json:"_meta,omitempty"`
}
