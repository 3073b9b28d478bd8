package mcptool

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/mcp"
)

func TestApprovalRequest(t *testing.T) {
	tool := mcp.Tool{Name: "delete_page", Title: "Delete a page", Description: "Deletes it"}
	p := ApprovalRequest("wiki", tool, json.RawMessage(`{"id":7}`), config.MCPApprovalAuto)
	if p.ServerName != "wiki" || p.Mode != "form" || p.Message != `Allow the wiki MCP server to run tool "delete_page"?` ||
		string(p.RequestedSchema) != `{"type":"object","properties":{}}` {
		t.Errorf("ApprovalRequest = %+v", p)
	}
	var meta map[string]any
	if err := json.Unmarshal(p.Meta, &meta); err != nil {
		t.Fatal(err)
	}
	if meta["codex_approval_kind"] != "mcp_tool_call" || meta["persist"] != "session" || meta["tool_title"] != "Delete a page" ||
		meta["tool_description"] != "Deletes it" || meta["tool_params"].(map[string]any)["id"] != 7.0 {
		t.Errorf("ApprovalRequest meta = %v", meta)
	}
	p = ApprovalRequest("wiki", mcp.Tool{Name: "x"}, json.RawMessage(`{}`), config.MCPApprovalPrompt)
	meta = nil
	if err := json.Unmarshal(p.Meta, &meta); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"persist", "tool_title", "tool_description"} {
		if _, ok := meta[k]; ok {
			t.Errorf("ApprovalRequest under prompt, no title or description: meta has %s: %v", k, meta)
		}
	}
}

func TestElicitAnswer(t *testing.T) {
	tests := []struct {
		raw, action, err string
	}{
		{`{"action":"accept","content":{"name":"x"},"_meta":{"k":1}}`, "accept", ""},
		{`{"action":"decline"}`, "decline", ""},
		{`{"action":"cancel"}`, "cancel", ""},
		{`{"action":"maybe"}`, "", `action "maybe" is not one of`},
		{`{"decision":"accept"}`, "", `action "" is not one of`},
		{`[1]`, "", "decoding the answer"},
	}
	for _, tc := range tests {
		res, err := ElicitAnswer(json.RawMessage(tc.raw))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ElicitAnswer(%s) = %+v, %v; want an error with %q", tc.raw, res, err, tc.err)
			}
			continue
		}
		if err != nil || res.Action != tc.action {
			t.Errorf("ElicitAnswer(%s) = %+v, %v; want action %s", tc.raw, res, err, tc.action)
		}
	}
	res, _ := ElicitAnswer(json.RawMessage(`{"action":"accept","content":{"name":"x"},"_meta":{"k":1}}`))
	if res.Content["name"] != "x" || res.Meta["k"] != 1.0 {
		t.Errorf("ElicitAnswer kept content %v, meta %v", res.Content, res.Meta)
	}
}

func TestElicitParams(t *testing.T) {
	req := mcp.ElicitRequest{Mode: "url", Message: "Sign in", URL: "https://example.com/a", ElicitationID: "e1", Meta: json.RawMessage(`{"k":"v"}`)}
	p := ElicitParams("auth", req)
	if p.ServerName != "auth" || p.Mode != "url" || p.Message != "Sign in" || p.URL != "https://example.com/a" || p.ElicitationID != "e1" || string(p.Meta) != `{"k":"v"}` {
		t.Errorf("ElicitParams = %+v", p)
	}
}

func TestItemResult(t *testing.T) {
	text := json.RawMessage(`{"type":"text","text":"hello"}`)
	item, forModel, failed := ItemResult(mcp.Result{Content: []json.RawMessage{text}, Structured: json.RawMessage(`{"n":1}`)}, 0)
	if failed || forModel != "hello" || len(item.Content) != 1 || string(item.StructuredContent) != `{"n":1}` {
		t.Errorf("ItemResult = %+v, %q, %v", item, forModel, failed)
	}
	big := json.RawMessage(`{"s":"` + strings.Repeat("x", 100) + `"}`)
	item, _, failed = ItemResult(mcp.Result{Content: []json.RawMessage{text}, Structured: big, IsError: true}, 50)
	if !failed || item.StructuredContent != nil {
		t.Errorf("ItemResult past its limit: structured %s, failed %v; want dropped, failed", item.StructuredContent, failed)
	}
}
