package commandpolicy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/instructions"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tools/files"
	"github.com/apserver/apserver/tools/rules"
	"github.com/apserver/apserver/tools/sandbox"
)

// WorkspaceRulesFile is the workspace's command rules, relative to its root.
const WorkspaceRulesFile = ".apserver/rules"

// Settings are what a judge reads of a thread's settings.
type Settings struct {
	Cwd            string
	ApprovalPolicy protocol.ApprovalPolicy
	Sandbox        protocol.SandboxMode
}

// RulesCache holds the loaded command rules of a thread and reloads them
// when a rules file changes. Its owner (a thread's goroutine) keeps a
// *RulesCache and hands the judge its address.
type RulesCache struct {
	files []string
	mtime []time.Time
	set   *rules.Set
	err   error
}

func statMtimes(files []string) []time.Time {
	out := make([]time.Time, len(files))
	for i, f := range files {
		if fi, err := os.Stat(f); err == nil {
			out[i] = fi.ModTime()
		}
	}
	return out
}

// Judge decides what happens to a command or a file change: run, run in
// the sandbox, ask, or refuse. It reads only its fields, so a thread's
// goroutine and policy/explain, which judges with other settings or
// without a thread and must not change one, run the same code. It writes
// only *Rules and *SandboxWarned.
type Judge struct {
	Settings Settings
	// Config is the server's configuration: the user's rules file, the
	// trusted projects, the sandbox's extra roots and network.
	Config *config.Config
	// Probe reports what the kernel offers for confining commands; nil
	// probes the machine (sandbox.Probe).
	Probe func() sandbox.Support
	// Warn sends a warning to the client (and the log).
	Warn func(msg string)
	// Approved and ApprovedPaths are the commands (ApprovalKey) and files
	// (PathKey) accepted for the session.
	Approved, ApprovedPaths map[string]bool
	// Rules is the command rules cache it reads and refreshes;
	// SandboxWarned says the missing-sandbox warning was sent. Neither
	// may be nil.
	Rules         **RulesCache
	SandboxWarned *bool
	// ReadOnly: the active turn may change nothing (plan mode and
	// reviews); commands run in the read-only sandbox.
	ReadOnly bool
}

func (j Judge) warn(msg string) {
	if j.Warn != nil {
		j.Warn(msg)
	}
}

// CommandRules returns the rules: the built-in ones, the user's
// file, then the workspace's .apserver/rules. A workspace file is written
// by the repository or the agent, not the user: unless the user's config
// marks the project trusted, its forbidden and prompt rules apply and its
// allow rules are left out, with one warning naming them. A file that
// fails to load (a bad line, or an example its rule does not decide as
// written) is left out and a warning names it; the built-in rules always
// apply.
func (j Judge) CommandRules() *rules.Set {
	files := []string{}
	if f := j.Config.RulesFile; f != "" {
		files = append(files, f)
	}
	ws := filepath.Join(j.Settings.Cwd, WorkspaceRulesFile)
	files = append(files, ws)
	mt := statMtimes(files)
	if c := *j.Rules; c != nil && slices.Equal(c.files, files) && slices.EqualFunc(c.mtime, mt, time.Time.Equal) {
		return c.set
	}
	c := &RulesCache{files: files, mtime: mt}
	trusted := j.Config.ProjectTrusted(j.Settings.Cwd)
	c.set = rules.Builtin()
	var bad []string
	for _, f := range files {
		s, err := rules.Load(f)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		add := UserRules(s)
		if f == ws && !trusted {
			add = TightenOnly(f, add, j.warn)
		}
		c.set = c.set.With(add...)
	}
	if len(bad) > 0 {
		c.err = errors.New(strings.Join(bad, "; "))
		j.warn(fmt.Sprintf("command rules not loaded: %v; using the rules that load", c.err))
	}
	*j.Rules = c
	return c.set
}

// TightenOnly drops the allow rules of an untrusted workspace rules file,
// warning once (through warn, which may be nil) with their names.
func TightenOnly(file string, rs []rules.Rule, warn func(string)) []rules.Rule {
	var keep []rules.Rule
	var dropped []string
	for _, r := range rs {
		if r.Decision == rules.Allow {
			dropped = append(dropped, fmt.Sprintf("%q (line %d)", r.String(), r.Line))
			continue
		}
		keep = append(keep, r)
	}
	if len(dropped) > 0 && warn != nil {
		warn(fmt.Sprintf("%s: allow rules ignored, since this project is not marked trusted in the user config (a workspace rules file may only make commands stricter): %s",
			file, strings.Join(dropped, ", ")))
	}
	return keep
}

// UserRules are the rules of s that did not come with the binary.
func UserRules(s *rules.Set) []rules.Rule {
	var out []rules.Rule
	for _, r := range s.Rules() {
		if r.Source != "builtin" {
			out = append(out, r)
		}
	}
	return out
}

// RulesContext is what the rules know of where a command runs.
func (j Judge) RulesContext() rules.Context {
	home, _ := os.UserHomeDir()
	return rules.Context{Cwd: j.Settings.Cwd, WritableRoots: j.WritableRoots(), Home: home}
}

// WritableRoots are the cwd and the configured extra writable roots.
func (j Judge) WritableRoots() []string {
	return append([]string{j.Settings.Cwd}, j.Config.SandboxWritableRoots...)
}

// Workspace is the file tools' view of the writable and readable roots.
func (j Judge) Workspace() (*files.Workspace, error) {
	return files.NewWorkspace(j.Settings.Cwd, j.Config.SandboxWritableRoots, j.Config.SandboxReadableRoots)
}

// SandboxPolicy is the kernel sandbox for the thread's commands: nil for
// danger-full-access (or an approved escalation), else a policy that the
// kernel can enforce; an error when it cannot (the caller then asks).
func (j Judge) SandboxPolicy(escalated bool) (*sandbox.Policy, error) {
	mode := j.Settings.Sandbox
	if j.ReadOnly {
		mode, escalated = protocol.SandboxReadOnly, false
	}
	if mode == protocol.SandboxDangerFullAccess || escalated {
		return nil, nil
	}
	p := &sandbox.Policy{
		Mode:          sandbox.Mode(mode),
		ReadableRoots: j.Config.SandboxReadableRoots,
		Network:       j.Config.SandboxNetwork,
		AllowTmp:      true,
	}
	if mode == protocol.SandboxWorkspaceWrite {
		p.WritableRoots = j.WritableRoots()
	}
	probe := sandbox.Probe
	if j.Probe != nil {
		probe = j.Probe
	}
	if err := probe().Enforceable(*p); err != nil {
		if !*j.SandboxWarned {
			*j.SandboxWarned = true
			j.warn(fmt.Sprintf("commands cannot be confined by the kernel sandbox here (%v); every command the rules do not allow will be sent for approval", err))
		}
		return nil, err
	}
	return p, nil
}

// ApprovalKey is the key of a command accepted "for session": an approval
// to run a command in the sandbox never covers running it outside.
func ApprovalKey(cmd string, escalated bool) string {
	if escalated {
		return "\x00escalated\x00" + cmd
	}
	return cmd
}

// PlanCommand decides a command. policy/explain reports exactly this plan.
// Some things always need a human, whatever the approval policy, sandbox
// and session approvals say:
//
//   - a forbidden command: asked for, or refused under never;
//   - a privileged command (sudo, su, doas, pkexec, run0, ... anywhere in
//     it): asked for every time, never covered by a session approval, or
//     refused under never, as forbidden is;
//   - an escalation (the model asks to run outside the sandbox): asked
//     for, or refused under never, telling the model to run it sandboxed;
//     only an escalation accepted for the session runs again;
//   - an opaque command, which the rules cannot read fully, where it would
//     run outside the kernel sandbox (danger-full-access, or no kernel
//     sandbox here): asked for, unless accepted for the session; refused
//     under never.
//
// Inside the kernel sandbox an opaque command is like any other: running
// the workspace's own code (make test, ./gradlew, a script) is what the
// sandbox is for. Otherwise:
//
//   - never: run everything.
//   - untrusted: run what the rules allow; ask for the rest.
//   - on-request (and on-failure): run in the sandbox without asking, or,
//     where the kernel cannot sandbox, ask for anything the rules do not
//     allow; danger-full-access runs what the rules do not forbid.
//
// Commands run confined by the sandbox unless the thread is
// danger-full-access or the user approved an escalation.
func (j Judge) PlanCommand(cmd string, escalated bool) Plan {
	v := j.CommandRules().Evaluate(cmd, j.RulesContext())
	sb, sbErr := j.SandboxPolicy(escalated)
	plan := Plan{Verdict: v, Sandbox: sb, Escalated: escalated}
	never := j.Settings.ApprovalPolicy == protocol.ApprovalNever
	switch {
	case j.ReadOnly && (escalated || sbErr != nil && v.Decision != rules.Allow):
		plan.Refuse = instructions.ReadOnlyRefusal(escalated)
	case v.Decision == rules.Forbidden:
		if never {
			plan.Refuse = v.Reason + ". Forbidden commands need a human, and this thread never asks; do not try to run it another way."
		} else {
			plan.Ask = true
		}
	case v.Privileged != "":
		if never {
			plan.Refuse = "This command runs something as another user (" + v.Privileged + "). That needs a human every time, and this thread never asks; do the work without it, or say what a human must run."
		} else {
			plan.Ask = true
		}
	case escalated:
		switch {
		case j.Approved[ApprovalKey(cmd, true)]:
		case never:
			plan.Refuse = "Running a command outside the sandbox needs a human's approval, and this thread never asks. Run it without require_escalated: it then runs inside the sandbox."
		default:
			plan.Ask = true
		}
	case j.Approved[ApprovalKey(cmd, false)]:
	case v.Opaque != "" && sb == nil:
		if never {
			plan.Refuse = "The rules cannot read this command fully (" + v.Opaque + "), so it may only run inside the sandbox, and this thread has none and never asks. Write it so the program and its subcommand are plain words."
		} else {
			plan.Ask = true
		}
	case never:
	case j.Settings.ApprovalPolicy == protocol.ApprovalUntrusted:
		plan.Ask = v.Decision != rules.Allow
	case v.Decision == rules.Allow, j.Settings.Sandbox == protocol.SandboxDangerFullAccess:
	default:
		plan.Ask = sbErr != nil
	}
	return plan
}

// What happens to a file change (FileChangePlan).
const (
	FileWrite  = "write"
	FileAsk    = "ask"
	FileRefuse = "refuse"
)

// FileChangePlan applies the approval policy to a file change (protocol/codex/CORE.md §9):
// written without asking under "never" or danger-full-access; asked about
// under "untrusted" and in read-only; under on-request with workspace-write,
// asked only when a path is outside the writable roots (which the workspace
// guard refuses before this) — unless every path was accepted for the
// session. A read-only thread that never asks cannot write: refused.
func (j Judge) FileChangePlan(paths []string, inside bool) string {
	allApproved := true
	for _, p := range paths {
		if !j.ApprovedPaths[p] {
			allApproved = false
		}
	}
	switch {
	case allApproved:
		return FileWrite
	case j.Settings.ApprovalPolicy == protocol.ApprovalNever && j.Settings.Sandbox == protocol.SandboxReadOnly:
		return FileRefuse
	case j.Settings.ApprovalPolicy == protocol.ApprovalNever:
		return FileWrite
	case j.Settings.ApprovalPolicy == protocol.ApprovalUntrusted:
		return FileAsk
	case j.Settings.Sandbox == protocol.SandboxDangerFullAccess:
		return FileWrite
	case j.Settings.Sandbox == protocol.SandboxReadOnly, !inside:
		return FileAsk
	}
	return FileWrite
}

// PathKey is the workspace-relative, slash-separated form of a path the
// agent gave, the form file changes carry and ApprovedPaths is keyed by.
func PathKey(cwd, p string) string {
	if filepath.IsAbs(p) {
		if r, err := filepath.Rel(cwd, p); err == nil {
			p = r
		}
	}
	return filepath.ToSlash(filepath.Clean(p))
}
