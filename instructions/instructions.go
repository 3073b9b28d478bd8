package instructions

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tooloutput"
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
		b.WriteString("\n\n# Instructions from AGENTS.md (the repository root's first, the workspace's last)\n\n")
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

// Agents is what a turn gets of the AGENTS.md files along its workspace.
type Agents struct {
	// Text is the files' text, the repository root's first, joined by
	// blank lines and cut to MaxAgentsBytes in all; "" when none was read.
	Text string
	// Paths are the files read, in that order.
	Paths []string
	// Skipped says why a file that is there was not read (a link to a
	// file the file tools may not read, say); "" otherwise. The user is
	// told: the model is not.
	Skipped string
}

// agentsNames are the names looked for in each directory, the first one
// there taken: a local override (untracked, say) before the shared file,
// as Codex does.
var agentsNames = []string{"AGENTS.override.md", "AGENTS.md"}

// ReadAgents reads the AGENTS.md files that apply to a thread in cwd, as
// Codex does: one in each directory from the repository's root (the
// nearest directory above cwd holding .git; cwd alone outside a
// repository) down to cwd, AGENTS.override.md before AGENTS.md.
//
// apserver reads them itself, outside the sandbox, so each is read the way
// read_file reads, through ws, the thread's file-tool view of its roots:
// an AGENTS.md that is a symbolic link (one a sandboxed command made, or
// a cloned repository shipped, to ~/.ssh/id_rsa, say) is followed only
// into the workspace and the configured writable and readable roots, so a
// shared instructions file elsewhere is read once its directory is a
// readable root (sandbox_settings.readable_roots). The one exception is
// that a directory above the workspace may hold its own AGENTS.md as a
// plain file, read where it is and never through a link. A nil ws stands
// for the workspace alone.
func ReadAgents(ws *files.Workspace, cwd string) Agents {
	if ws == nil {
		var err error
		if ws, err = files.NewWorkspace(cwd, nil, nil); err != nil {
			return Agents{}
		}
	}
	var a Agents
	var skipped []string
	var b strings.Builder
	for _, dir := range agentsDirs(cwd) {
		for _, name := range agentsNames {
			p := filepath.Join(dir, name)
			data, err := readAgentsFile(ws, p, dir != cwd)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			var pe *files.PathError
			switch {
			case errors.As(err, &pe):
				skipped = append(skipped, fmt.Sprintf("%s was not read: %s. To use it, add its directory to sandbox_settings.readable_roots in your config.", p, pe.Reason))
			case err != nil:
				skipped = append(skipped, fmt.Sprintf("%s was not read: %v", p, err))
			default:
				sep := ""
				if b.Len() > 0 {
					sep = "\n\n"
				}
				room := MaxAgentsBytes - b.Len() - len(sep)
				// A file cut at the budget may end inside a character.
				if text := tooloutput.CutBytes(strings.TrimSpace(strings.ToValidUTF8(string(data), "")), max(room, 0)); text != "" {
					b.WriteString(sep)
					b.WriteString(text)
					a.Paths = append(a.Paths, p)
				}
			}
			break // the first name there is the directory's file
		}
	}
	a.Text = strings.TrimSpace(b.String())
	a.Skipped = strings.Join(skipped, " ")
	return a
}

// agentsDirs are the directories whose AGENTS.md apply in cwd: from the
// repository's root down to cwd, or cwd alone outside a repository.
func agentsDirs(cwd string) []string {
	dirs := []string{cwd}
	for d := cwd; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			slices.Reverse(dirs)
			return dirs
		}
		up := filepath.Dir(d)
		if up == d {
			return []string{cwd}
		}
		d = up
		dirs = append(dirs, d)
	}
}

// readAgentsFile reads the start of p through ws; when ws refuses it and p
// is in a directory above the workspace (above), a plain file there is
// read where it is, never through a link.
func readAgentsFile(ws *files.Workspace, p string, above bool) ([]byte, error) {
	data, _, err := ws.ReadHead(p, MaxAgentsBytes)
	var pe *files.PathError
	if !above || !errors.As(err, &pe) {
		return data, err
	}
	f, ferr := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if ferr != nil {
		if errors.Is(ferr, syscall.ELOOP) {
			return nil, err // a link out of the roots: ws's reason
		}
		return nil, ferr
	}
	defer f.Close()
	if fi, ferr := f.Stat(); ferr != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	return io.ReadAll(io.LimitReader(f, MaxAgentsBytes))
}

// Sources lists the instruction files a turn loads: a's files.
func Sources(a Agents) []string {
	return append([]string{}, a.Paths...)
}
