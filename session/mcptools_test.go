package session

import (
	"strings"
	"testing"

	"github.com/apserver/apserver/mcp"
)

func TestMCPToolNames(t *testing.T) {
	long := strings.Repeat("x", 70)
	refs := mcpNames([]mcpToolRef{
		{server: "docs", tool: mcp.Tool{Name: "search"}},
		{server: "my.server", tool: mcp.Tool{Name: "get file"}},
		{server: "a", tool: mcp.Tool{Name: "b__c"}},
		{server: "a__b", tool: mcp.Tool{Name: "c"}},
		{server: "s", tool: mcp.Tool{Name: long}},
	})
	if refs[0].name != "mcp__docs__search" || refs[1].name != "mcp__my_server__get_file" {
		t.Errorf("plain names: %q, %q", refs[0].name, refs[1].name)
	}
	// mcp__a__b__c twice: both get a hash, and they differ.
	if refs[2].name == refs[3].name || !strings.HasPrefix(refs[2].name, "mcp__a__b__c_") || len(refs[2].name) != len("mcp__a__b__c_")+12 {
		t.Errorf("colliding names: %q, %q", refs[2].name, refs[3].name)
	}
	if n := refs[4].name; len(n) != 64 || !strings.HasPrefix(n, "mcp__s__xxx") {
		t.Errorf("long name %q (%d bytes), want 64 bytes", n, len(n))
	}
	again := mcpNames([]mcpToolRef{{server: "s", tool: mcp.Tool{Name: long}}})
	if again[0].name != refs[4].name {
		t.Errorf("names are not stable: %q then %q", refs[4].name, again[0].name)
	}
}
