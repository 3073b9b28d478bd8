package agenttools

import (
	"sort"
	"strings"

	"github.com/apserver/apserver/model"
)

// Disabled reads the tool switches of a thread/start `config`
// override (Codex's keys; others are ignored) and returns the agent tools
// they turn off, comma-separated and sorted (a thread's settings stay
// comparable). Codex's TUI turns everything off this way for the throwaway
// thread that titles a conversation.
//
//	features.shell_tool = false                          exec_command
//	tools.update_plan.enabled = false                    update_plan
//	tools.experimental_request_user_input.enabled = false request_user_input
//	default_permissions = ":read-only"                   apply_patch, edit_file, write_file
func Disabled(cfg map[string]any) string {
	var off []string
	if v, ok := cfg["features.shell_tool"].(bool); ok && !v {
		off = append(off, ExecCommand)
	}
	if v, ok := cfg["tools.update_plan.enabled"].(bool); ok && !v {
		off = append(off, UpdatePlan)
	}
	if v, ok := cfg["tools.experimental_request_user_input.enabled"].(bool); ok && !v {
		off = append(off, RequestUserInput)
	}
	if v, ok := cfg["default_permissions"].(string); ok && v == ":read-only" {
		off = append(off, ApplyPatch, "edit_file", "write_file")
	}
	sort.Strings(off)
	return strings.Join(off, ",")
}

// Off reports whether a call's tool (any alias of exec_command
// included) is among those turned off.
func Off(off, name string) bool {
	if off == "" {
		return false
	}
	if ExecAliases[name] {
		name = ExecCommand
	}
	for _, n := range strings.Split(off, ",") {
		if n == name {
			return true
		}
	}
	return false
}

// Without drops the tools named in off (Disabled's form).
func Without(all []model.Tool, off string) []model.Tool {
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
