package paramcheck

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/protocol"
)

// TestTurnStartRefusals: each bad turn/start param is refused as invalid
// params naming the field (and, in a schema, where in it), and a good one
// passes.
func TestTurnStartRefusals(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c := &config.Config{Model: "main", Models: []config.ModelInfo{{ID: "main"}, {ID: "small", ReasoningEfforts: []string{"low"}}},
		Roles: map[string]config.RoleConfig{"decision": {Model: "judge"}}}
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		p    protocol.TurnStartParams
		want string // "" passes
	}{
		{protocol.TurnStartParams{Cwd: s(dir), Model: s("judge"), Effort: s("high")}, ""},
		{protocol.TurnStartParams{Cwd: s("rel/dir")}, "cwd must be an absolute path"},
		{protocol.TurnStartParams{Cwd: s(filepath.Join(dir, "none"))}, "cwd does not exist"},
		{protocol.TurnStartParams{Cwd: s(file)}, "cwd is not a directory"},
		{protocol.TurnStartParams{Model: s("other")}, "unknown model `other`"},
		{protocol.TurnStartParams{Model: s("small"), Effort: s("high")}, "unknown effort `high`, expected one of low"},
		{protocol.TurnStartParams{Summary: s("long")}, "unknown summary `long`"},
		{protocol.TurnStartParams{OutputSchema: json.RawMessage(`[1]`)}, "outputSchema must be a JSON Schema object, not an array"},
		{protocol.TurnStartParams{OutputSchema: json.RawMessage(`{"properties":{"a":{"type":"text"}}}`)}, "outputSchema.properties.a.type: text is not a JSON type"},
		{protocol.TurnStartParams{OutputSchema: json.RawMessage(`{"required":[1]}`)}, "outputSchema.required must be an array of strings"},
		{protocol.TurnStartParams{Input: []protocol.UserInput{{Type: "localImage", Path: "x.png"}}}, "localImage path must be absolute"},
	} {
		err := TurnStart(c, tc.p)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v, want no error", tc.p, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, protocol.ErrInvalidParams)):
			t.Errorf("%+v: %v, want invalid params with %q", tc.p, err, tc.want)
		}
	}
	if err := ThreadSettings(c, protocol.ThreadSettings{ModelProvider: s("nope")}); err == nil || !strings.Contains(err.Error(), "unknown modelProvider `nope`") {
		t.Errorf("unknown provider: %v", err)
	}
}
