package session

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/apserver/apserver/model"
)

// disabledTools reads the tool switches of a thread/start `config`
// override (Codex's keys; others are ignored) and returns the agent tools
// they turn off, comma-separated and sorted (threadSettings stays
// comparable). Codex's TUI turns everything off this way for the throwaway
// thread that titles a conversation.
//
//	features.shell_tool = false                          exec_command
//	tools.update_plan.enabled = false                    update_plan
//	tools.experimental_request_user_input.enabled = false request_user_input
//	default_permissions = ":read-only"                   apply_patch, edit_file, write_file
func disabledTools(cfg map[string]any) string {
	var off []string
	if v, ok := cfg["features.shell_tool"].(bool); ok && !v {
		off = append(off, toolExecCommand)
	}
	if v, ok := cfg["tools.update_plan.enabled"].(bool); ok && !v {
		off = append(off, toolUpdatePlan)
	}
	if v, ok := cfg["tools.experimental_request_user_input.enabled"].(bool); ok && !v {
		off = append(off, toolRequestUserInput)
	}
	if v, ok := cfg["default_permissions"].(string); ok && v == ":read-only" {
		off = append(off, toolApplyPatch, "edit_file", "write_file")
	}
	sort.Strings(off)
	return strings.Join(off, ",")
}

// toolOff reports whether a call's tool (any alias of exec_command
// included) is among those turned off.
func toolOff(off, name string) bool {
	if off == "" {
		return false
	}
	if execAliases[name] {
		name = toolExecCommand
	}
	for _, n := range strings.Split(off, ",") {
		if n == name {
			return true
		}
	}
	return false
}

// withoutTools drops the tools named in off (disabledTools' form).
func withoutTools(all []model.Tool, off string) []model.Tool {
	if off == "" {
		return all
	}
	skip := map[string]bool{}
	for _, n := range strings.Split(off, ",") {
		skip[n] = true
	}
	out := make([]model.Tool, 0, len(all))
	for _, t := range all {
		if !skip[t.Name] {
			out = append(out, t)
		}
	}
	return out
}

// outputSchema is the structured output a turn asked for with
// turn/start's outputSchema (nil: free text). The model is held to it.
func outputSchema(raw json.RawMessage) *model.OutputSchema {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return nil
	}
	return &model.OutputSchema{Name: "codex_output_schema", Schema: raw, Strict: true}
}
