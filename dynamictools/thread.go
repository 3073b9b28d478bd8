package dynamictools

import (
	"encoding/json"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/mcptool"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
)

// FromSettings are the tools kept in a thread's settings (Encode's
// string; "" none), flattened.
func FromSettings(encoded string) ([]Tool, error) {
	if encoded == "" {
		return nil, nil
	}
	var specs []protocol.DynamicToolSpec
	if err := json.Unmarshal([]byte(encoded), &specs); err != nil {
		return nil, err
	}
	return Flatten(specs), nil
}

// ModelTools offers the tools to the model as function tools (schemas
// made acceptable to every provider, as MCP tools').
func ModelTools(tools []Tool) []model.Tool {
	var out []model.Tool
	for _, d := range tools {
		out = append(out, model.Tool{Name: d.Name, Description: d.Spec.Description, Parameters: mcptool.SanitizeSchema(d.Spec.InputSchema)})
	}
	return out
}

// Complete fills in item from the client's answer raw to the call of
// name, or from callErr, the reason the call failed, and returns what the
// model reads. failure is why the call failed (callErr, or an answer that
// does not read), nil when the client answered; the tool's own reported
// failure is an answer. limit <= 0 is the default
// (mcp_tool_output_max_bytes).
func Complete(item *protocol.DynamicToolCallItem, name string, raw json.RawMessage, callErr error, limit int64) (forModel string, failure error) {
	var res protocol.DynamicToolCallResponse
	err := callErr
	if err == nil {
		res, err = Decode(raw)
	}
	if limit <= 0 {
		limit = config.DefaultMCPToolOutputMaxBytes
	}
	item.ContentItems = []protocol.DynamicToolCallContent{}
	if err != nil {
		failed := false
		item.Status, item.Success = protocol.ItemFailed, &failed
		return "The editor's tool " + name + " failed: " + err.Error(), err
	}
	item.ContentItems, forModel = Output(res, int(limit))
	success := res.Success
	item.Success = &success
	item.Status = protocol.ItemCompleted
	if !res.Success {
		item.Status = protocol.ItemFailed
	}
	return forModel, nil
}
