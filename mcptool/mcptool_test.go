package mcptool

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/mcp"
)

func TestMCPNeedsApproval(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		mode string
		a    *mcp.Annotations
		full bool
		want bool
	}{
		{config.MCPApprovalAuto, nil, false, false}, // no annotations: not asked
		{config.MCPApprovalAuto, &mcp.Annotations{ReadOnly: true}, false, false},
		{config.MCPApprovalAuto, &mcp.Annotations{ReadOnly: true, Destructive: &yes}, false, true}, // destructive wins
		{config.MCPApprovalAuto, &mcp.Annotations{}, false, true},                                  // may destroy, open world
		{config.MCPApprovalAuto, &mcp.Annotations{Destructive: &no}, false, true},                  // open world unknown
		{config.MCPApprovalAuto, &mcp.Annotations{Destructive: &no, OpenWorld: &no}, false, false},
		{config.MCPApprovalAuto, &mcp.Annotations{Destructive: &no, OpenWorld: &yes}, false, true},
		{config.MCPApprovalPrompt, &mcp.Annotations{ReadOnly: true}, false, true},
		{config.MCPApprovalPrompt, nil, false, true},
		{config.MCPApprovalApprove, &mcp.Annotations{Destructive: &yes}, false, false},
		{config.MCPApprovalPrompt, &mcp.Annotations{Destructive: &yes}, true, false}, // full access asks nothing
	} {
		if got := NeedsApproval(tc.mode, tc.a, tc.full); got != tc.want {
			t.Errorf("NeedsApproval(%s, %+v, full=%v) = %v, want %v", tc.mode, tc.a, tc.full, got, tc.want)
		}
	}
}

func TestSanitizeSchema(t *testing.T) {
	for in, want := range map[string]string{
		``:                  `{"type":"object","properties":{}}`,
		`{"type":"object"}`: `{"properties":{},"type":"object"}`,
		`{"$schema":"x","oneOf":[{}],"properties":{"a":{"type":"string"}}}`: `{"properties":{"a":{"type":"string"}},"type":"object"}`,
		`[1]`: `{"type":"object","properties":{}}`,
	} {
		if got := string(SanitizeSchema(json.RawMessage(in))); got != want {
			t.Errorf("SanitizeSchema(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestMCPOutput(t *testing.T) {
	res := mcp.Result{Content: []json.RawMessage{
		json.RawMessage(`{"type":"text","text":"` + strings.Repeat("é", 30) + `"}`),
		json.RawMessage(`{"type":"image","data":"` + strings.Repeat("A", 100) + `","mimeType":"image/png"}`),
	}, IsError: true}
	shown, model := Output(res, 40)
	if !strings.HasPrefix(model, "The tool reported an error:\n") || !strings.Contains(model, "[output truncated: 40 of") || len(model) > 40+60 {
		t.Errorf("model output %q", model)
	}
	var first struct{ Text string }
	_ = json.Unmarshal(shown[0], &first)
	if !strings.Contains(first.Text, "[output truncated: 40 of 60 bytes shown]") || !strings.HasPrefix(first.Text, strings.Repeat("é", 20)) {
		t.Errorf("item text %q", first.Text)
	}
	if !strings.Contains(string(shown[1]), "[image content of") {
		t.Errorf("big image kept in the item: %s", shown[1])
	}
}
