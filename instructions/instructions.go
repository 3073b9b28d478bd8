package instructions

import (
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/apserver/apserver/protocol"
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
// workspace's AGENTS.md if present, configured extra instructions and the
// thread's developer instructions.
func System(cwd, base, extra, developer string) string {
	var b strings.Builder
	if base != "" {
		b.WriteString(base)
	} else {
		b.WriteString(Base)
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

// SandboxNote tells the model where its files go when commands run in the
// kernel sandbox: /tmp there is apserver's private one, so a file the
// user is told to open in /tmp is not in the user's /tmp.
func SandboxNote(mode protocol.SandboxMode) string {
	if mode == protocol.SandboxDangerFullAccess {
		return ""
	}
	return "\n\nCommands run in a sandbox. Its /tmp and $TMPDIR are private to apserver's sandboxed commands: files there stay between commands but are not in the user's /tmp, so the user cannot open them. Write anything the user should see or keep in the workspace."
}

// readAgents is the start of the workspace's AGENTS.md, trimmed; empty
// when there is none. It is read through an os.Root of the workspace: an
// AGENTS.md that is a symbolic link out of it (one a command made, or a
// cloned repository shipped, to ~/.ssh/id_rsa, say) is not read, for what
// it would bring into the prompt is outside the workspace; a link to a
// file inside it is followed.
func readAgents(cwd string) string {
	root, err := os.OpenRoot(cwd)
	if err != nil {
		return ""
	}
	defer root.Close()
	f, err := root.Open("AGENTS.md")
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, MaxAgentsBytes)
	n, _ := io.ReadFull(f, buf)
	return strings.TrimSpace(string(buf[:n]))
}

// Sources lists the instruction files loaded for a workspace.
func Sources(cwd string) []string {
	root, err := os.OpenRoot(cwd)
	if err != nil {
		return []string{}
	}
	defer root.Close()
	if fi, err := root.Stat("AGENTS.md"); err == nil && fi.Mode().IsRegular() {
		return []string{filepath.Join(cwd, "AGENTS.md")}
	}
	return []string{}
}
