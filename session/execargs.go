package session

import (
	"encoding/json"
	"strings"
)

// Tool names the agent is offered.
const toolExecCommand = "exec_command"

var execCommandSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "cmd": {"type": "string", "description": "The shell command to run (executed with bash -c)."},
    "workdir": {"type": "string", "description": "Working directory, relative to the workspace or absolute. Defaults to the workspace."},
    "timeout_ms": {"type": "integer", "description": "Kill the command after this many milliseconds. Default 120000."},
    "sandbox_permissions": {"type": "string", "enum": ["use_default", "require_escalated"], "description": "Ask the user to approve running this command with more permissions than the sandbox allows."},
    "justification": {"type": "string", "description": "Why the command is needed; shown to the user when approval is asked."}
  },
  "required": ["cmd"],
  "additionalProperties": false
}`)

// execArgs are exec_command's arguments. "command" is accepted as an alias
// of "cmd" for models trained on other harnesses.
type execArgs struct {
	Cmd                string `json:"cmd"`
	Command            any    `json:"command"`
	Workdir            string `json:"workdir"`
	TimeoutMs          int64  `json:"timeout_ms"`
	SandboxPermissions string `json:"sandbox_permissions"`
	Justification      string `json:"justification"`
}

func (a *execArgs) command() string {
	if a.Cmd != "" {
		return a.Cmd
	}
	switch c := a.Command.(type) {
	case string:
		return c
	case []any:
		// ["bash","-lc","…"] style: take the script when present.
		parts := make([]string, 0, len(c))
		for _, p := range c {
			if s, ok := p.(string); ok {
				parts = append(parts, s)
			}
		}
		if len(parts) == 3 && (parts[1] == "-lc" || parts[1] == "-c") {
			return parts[2]
		}
		return strings.Join(parts, " ")
	}
	return ""
}
