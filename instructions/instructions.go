package instructions

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tools/files"
)

// MaxAgentsBytes caps how much of a workspace's AGENTS.md goes into the prompt.
const MaxAgentsBytes = 64 << 10

// Base is the base prompt, when the thread sets none.
const Base = `You are a coding agent running inside apserver, working in the user's workspace on their behalf.

How to work:
- Read before you change. Use read_file, list_dir and search to look around, exec_command to run builds and tests, and apply_patch (or edit_file / write_file) to change files.
- Keep a plan with update_plan for tasks of more than a couple of steps, and keep its statuses current.
- Commands may run in a sandbox that blocks writes outside the workspace and network access. If a command fails because of the sandbox and it truly needs more, run it again with sandbox_permissions "require_escalated" and a justification; the user will be asked.
- Keep changes small and focused on what the user asked. Do not revert changes you did not make.
- Prefer non-interactive commands. Commands run with the workspace as the working directory unless you pass workdir.
- If a command needs approval and the user declines it, do not retry it in another form; explain what you wanted to do instead.
- When you are done, reply with a short summary of what you changed and how you checked it.`

// System builds the instructions for one turn: the base prompt, the
// workspace's AGENTS.md (agents, from ReadAgents) if present, configured
// extra instructions and the thread's developer instructions.
func System(cwd, base, agents, extra, developer string) string {
	var b strings.Builder
	if base != "" {
		b.WriteString(base)
	} else {
		b.WriteString(Base)
	}
	b.WriteString("\n\nWorkspace: ")
	b.WriteString(cwd)
	if agents != "" {
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

// SandboxNote tells the model where its files go when commands run in the
// kernel sandbox: /tmp there is apserver's private one, so a file the
// user is told to open in /tmp is not in the user's /tmp.
func SandboxNote(mode protocol.SandboxMode) string {
	if mode == protocol.SandboxDangerFullAccess {
		return ""
	}
	return "\n\nCommands run in a sandbox. Its /tmp and $TMPDIR are private to apserver's sandboxed commands: files there stay between commands but are not in the user's /tmp, so the user cannot open them. Write anything the user should see or keep in the workspace."
}

// Agents is a workspace's AGENTS.md as a turn gets it.
type Agents struct {
	// Text is the start of the file (MaxAgentsBytes), trimmed; "" when
	// none was read.
	Text string
	// Path is the file read, as the workspace names it; "" when none.
	Path string
	// Skipped says why an AGENTS.md that is there was not read (a link to
	// a file the file tools may not read, say); "" otherwise. The user is
	// told: the model is not.
	Skipped string
}

// ReadAgents reads cwd's AGENTS.md through ws, the thread's file-tool view
// of its roots, so that it brings into the prompt only what read_file could:
// apserver reads it itself, outside the sandbox, and an AGENTS.md that is a
// symbolic link (one a sandboxed command made, or a cloned repository
// shipped, to ~/.ssh/id_rsa, say) is followed only into the workspace and
// the configured writable and readable roots. A shared instructions file
// elsewhere is read once its directory is a readable root
// (sandbox_settings.readable_roots). A nil ws stands for the workspace
// alone.
func ReadAgents(ws *files.Workspace, cwd string) Agents {
	if ws == nil {
		var err error
		if ws, err = files.NewWorkspace(cwd, nil, nil); err != nil {
			return Agents{}
		}
	}
	data, _, err := ws.ReadHead(filepath.Join(cwd, "AGENTS.md"), MaxAgentsBytes)
	var pe *files.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Agents{}
	case errors.As(err, &pe):
		return Agents{Skipped: fmt.Sprintf("AGENTS.md in %s was not read: %s. To use it, add its directory to sandbox_settings.readable_roots in your config.", cwd, pe.Reason)}
	case err != nil:
		return Agents{Skipped: fmt.Sprintf("AGENTS.md in %s was not read: %v", cwd, err)}
	}
	return Agents{Text: strings.TrimSpace(string(data)), Path: filepath.Join(cwd, "AGENTS.md")}
}

// Sources lists the instruction files a turn loads: a's file, if read.
func Sources(a Agents) []string {
	if a.Path == "" {
		return []string{}
	}
	return []string{a.Path}
}
