package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/apserver/apserver/protocol"
)

// maxAgentsBytes caps how much of a workspace's AGENTS.md goes into the prompt.
const maxAgentsBytes = 64 << 10

const basePrompt = `You are a coding agent running inside apserver, working in the user's workspace on their behalf.

How to work:
- Read before you change. Use read_file, list_dir and search to look around, exec_command to run builds and tests, and apply_patch (or edit_file / write_file) to change files.
- Keep a plan with update_plan for tasks of more than a couple of steps, and keep its statuses current.
- Commands may run in a sandbox that blocks writes outside the workspace and network access. If a command fails because of the sandbox and it truly needs more, run it again with sandbox_permissions "require_escalated" and a justification; the user will be asked.
- Keep changes small and focused on what the user asked. Do not revert changes you did not make.
- Prefer non-interactive commands. Commands run with the workspace as the working directory unless you pass workdir.
- If a command needs approval and the user declines it, do not retry it in another form; explain what you wanted to do instead.
- When you are done, reply with a short summary of what you changed and how you checked it.`

// systemPrompt builds the instructions for one turn: the base prompt, the
// workspace's AGENTS.md if present, configured extra instructions and the
// thread's developer instructions.
func systemPrompt(cwd, base, extra, developer string) string {
	var b strings.Builder
	if base != "" {
		b.WriteString(base)
	} else {
		b.WriteString(basePrompt)
	}
	b.WriteString("\n\nWorkspace: ")
	b.WriteString(cwd)
	if agents := readAgents(cwd); agents != "" {
		b.WriteString("\n\n# Instructions from AGENTS.md in the workspace\n\n")
		b.WriteString(agents)
	}
	if extra != "" {
		b.WriteString("\n\n")
		b.WriteString(extra)
	}
	if developer != "" {
		b.WriteString("\n\n")
		b.WriteString(developer)
	}
	return b.String()
}

// sandboxNote tells the model where its files go when commands run in the
// kernel sandbox: /tmp there is apserver's private one, so a file the
// user is told to open in /tmp is not in the user's /tmp.
func sandboxNote(mode protocol.SandboxMode) string {
	if mode == protocol.SandboxDangerFullAccess {
		return ""
	}
	return "\n\nCommands run in a sandbox. Its /tmp and $TMPDIR are private to apserver's sandboxed commands: files there stay between commands but are not in the user's /tmp, so the user cannot open them. Write anything the user should see or keep in the workspace."
}

func readAgents(cwd string) string {
	f, err := os.Open(filepath.Join(cwd, "AGENTS.md"))
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, maxAgentsBytes)
	n, _ := f.Read(buf)
	return strings.TrimSpace(string(buf[:n]))
}

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
