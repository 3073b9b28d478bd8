package dynamictools

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
)

// TestEncodeRefusesOwnNames: a declared tool may not take the name of one
// of apserver's own tools, an exec alias or an MCP tool; a namespace's
// tools are named NAMESPACE__NAME.
func TestEncodeRefusesOwnNames(t *testing.T) {
	for _, name := range []string{"exec_command", "bash", "read_file", "read_output", "mcp__x__y"} {
		if _, err := Encode([]protocol.DynamicToolSpec{{Name: name}}); err == nil || !errors.Is(err, protocol.ErrInvalidParams) {
			t.Errorf("Encode(%q) = %v, want invalid params", name, err)
		}
	}
	specs := []protocol.DynamicToolSpec{{Type: "namespace", Name: "ed", Tools: []protocol.DynamicToolSpec{{Name: "open"}}}, {Name: "lint"}}
	if _, err := Encode(specs); err != nil {
		t.Fatal(err)
	}
	got := Flatten(specs)
	if len(got) != 2 || got[0].Name != "ed__open" || got[0].Tool != "open" || *got[0].Namespace != "ed" || got[1].Name != "lint" || got[1].Namespace != nil {
		t.Errorf("Flatten = %+v", got)
	}
}

// TestAnswer: an answer with an unknown content type is refused; texts
// are cut at the limit for the item and the model, an image shows as
// [image] to the model, and a failure says so.
func TestAnswer(t *testing.T) {
	if _, err := Decode(json.RawMessage(`{"contentItems":[{"type":"video"}],"success":true}`)); err == nil || !strings.Contains(err.Error(), `contentItems[0].type "video"`) {
		t.Errorf("unknown type: %v", err)
	}
	res, err := Decode(json.RawMessage(`{"contentItems":[{"type":"inputText","text":"` + strings.Repeat("é", 30) + `"},{"type":"inputImage","imageUrl":"data:image/png;base64,AA"}],"success":false}`))
	if err != nil {
		t.Fatal(err)
	}
	items, out := Output(res, 40)
	if len(items) != 2 || !strings.Contains(items[0].Text, "[output truncated: 40 of 60 bytes shown]") || items[1].ImageURL == "" {
		t.Errorf("items %+v", items)
	}
	if !strings.HasPrefix(out, "The tool reported a failure:\n") || !strings.Contains(out, "[output truncated: 40 of") {
		t.Errorf("model output %q", out)
	}
}
