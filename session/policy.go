package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apserver/apserver/instructions"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tools"
	"github.com/apserver/apserver/tools/files"
	"github.com/apserver/apserver/tools/rules"
	"github.com/apserver/apserver/tools/sandbox"
)

// WorkspaceRulesFile is the workspace's command rules, relative to its root.
const WorkspaceRulesFile = ".apserver/rules"

// rulesCache holds the loaded command rules of a thread and reloads them
// when a rules file changes.
type rulesCache struct {
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

// judge decides what happens to a command or a file change: run, run in
// the sandbox, ask, or refuse. It reads only its fields, so a thread's
// goroutine (thread.judge) and policy/explain, which judges with other
// settings or without a thread and must not change one, run the same code.
type judge struct {
	m        *Manager
	threadID string // "" for the server's defaults
	settings threadSettings
	// approved and approvedPaths are the commands and files accepted for
	// the session.
	approved, approvedPaths map[string]bool
	// rules is the command rules cache it reads and refreshes;
	// sandboxWarned says the missing-sandbox warning was sent. A thread's
	// judge points them at the thread's own.
	rules         **rulesCache
	sandboxWarned *bool
	// readOnly: the active turn may change nothing (plan mode and
	// reviews, planmode.go); commands run in the read-only sandbox.
	readOnly bool
}

// judge is the thread's judge, valid until its settings or approvals change.
func (t *thread) judge() judge {
	return judge{m: t.m, threadID: t.id, settings: t.settings, approved: t.approved, approvedPaths: t.approvedPaths,
		rules: &t.rules, sandboxWarned: &t.sandboxWarned, readOnly: t.readOnlyTurn()}
}

func (t *thread) planCommand(cmd string, escalated bool) commandPlan {
	return t.judge().planCommand(cmd, escalated)
}

func (t *thread) commandRules() *rules.Set    { return t.judge().commandRules() }
func (t *thread) rulesContext() rules.Context { return t.judge().rulesContext() }

// commandRules returns the rules: the built-in ones, the user's
// file, then the workspace's .apserver/rules. A workspace file is written
// by the repository or the agent, not the user: unless the user's config
// marks the project trusted, its forbidden and prompt rules apply and its
// allow rules are left out, with one warning naming them. A file that
// fails to load (a bad line, or an example its rule does not decide as
// written) is left out and a warning names it; the built-in rules always
// apply.
func (j judge) commandRules() *rules.Set {
	files := []string{}
	if f := j.m.opts.Config.RulesFile; f != "" {
		files = append(files, f)
	}
	ws := filepath.Join(j.settings.Cwd, WorkspaceRulesFile)
	files = append(files, ws)
	mt := statMtimes(files)
	if c := *j.rules; c != nil && slices.Equal(c.files, files) && slices.EqualFunc(c.mtime, mt, time.Time.Equal) {
		return c.set
	}
	c := &rulesCache{files: files, mtime: mt}
	trusted := j.m.opts.Config.ProjectTrusted(j.settings.Cwd)
	c.set = rules.Builtin()
	var bad []string
	for _, f := range files {
		s, err := rules.Load(f)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		add := userRules(s)
		if f == ws && !trusted {
			add = j.tightenOnly(f, add)
		}
		c.set = c.set.With(add...)
	}
	if len(bad) > 0 {
		c.err = errors.New(strings.Join(bad, "; "))
		j.warn(fmt.Sprintf("command rules not loaded: %v; using the rules that load", c.err))
	}
	*j.rules = c
	return c.set
}

// tightenOnly drops the allow rules of an untrusted workspace rules file,
// warning once per load with their names.
func (j judge) tightenOnly(file string, rs []rules.Rule) []rules.Rule {
	var keep []rules.Rule
	var dropped []string
	for _, r := range rs {
		if r.Decision == rules.Allow {
			dropped = append(dropped, fmt.Sprintf("%q (line %d)", r.String(), r.Line))
			continue
		}
		keep = append(keep, r)
	}
	if len(dropped) > 0 {
		j.warn(fmt.Sprintf("%s: allow rules ignored, since this project is not marked trusted in the user config (a workspace rules file may only make commands stricter): %s",
			file, strings.Join(dropped, ", ")))
	}
	return keep
}

// userRules are the rules of s that did not come with the binary.
func userRules(s *rules.Set) []rules.Rule {
	var out []rules.Rule
	for _, r := range s.Rules() {
		if r.Source != "builtin" {
			out = append(out, r)
		}
	}
	return out
}

// warn sends a warning notification for the judge's thread.
func (j judge) warn(msg string) {
	j.m.log.Warn(msg, "thread", j.threadID)
	w := protocol.WarningNotification{Message: msg}
	if j.threadID != "" {
		w.ThreadID = ptr(j.threadID)
	}
	j.m.notify(protocol.NotifyWarning, w)
}

func (j judge) rulesContext() rules.Context {
	home, _ := os.UserHomeDir()
	return rules.Context{Cwd: j.settings.Cwd, WritableRoots: j.writableRoots(), Home: home}
}

func (j judge) writableRoots() []string {
	return append([]string{j.settings.Cwd}, j.m.opts.Config.SandboxWritableRoots...)
}

// workspace is the file tools' view of the writable and readable roots.
func (j judge) workspace() (*files.Workspace, error) {
	cfg := j.m.opts.Config
	return files.NewWorkspace(j.settings.Cwd, cfg.SandboxWritableRoots, cfg.SandboxReadableRoots)
}

// sandboxPolicy is the kernel sandbox for the thread's commands: nil for
// danger-full-access (or an approved escalation), else a policy that the
// kernel can enforce; an error when it cannot (the caller then asks).
func (j judge) sandboxPolicy(escalated bool) (*sandbox.Policy, error) {
	mode := j.settings.Sandbox
	if j.readOnly { // planmode.go
		mode, escalated = protocol.SandboxReadOnly, false
	}
	if mode == protocol.SandboxDangerFullAccess || escalated {
		return nil, nil
	}
	cfg := j.m.opts.Config
	p := &sandbox.Policy{
		Mode:          sandbox.Mode(mode),
		ReadableRoots: cfg.SandboxReadableRoots,
		Network:       cfg.SandboxNetwork,
		AllowTmp:      true,
	}
	if mode == protocol.SandboxWorkspaceWrite {
		p.WritableRoots = j.writableRoots()
	}
	probe := sandbox.Probe
	if f := j.m.opts.SandboxSupport; f != nil {
		probe = f
	}
	if err := probe().Enforceable(*p); err != nil {
		if !*j.sandboxWarned {
			*j.sandboxWarned = true
			j.warn(fmt.Sprintf("commands cannot be confined by the kernel sandbox here (%v); every command the rules do not allow will be sent for approval", err))
		}
		return nil, err
	}
	return p, nil
}

// commandPlan is what happens to a command: run (confined by sandbox
// unless nil), ask the user first, or refuse.
type commandPlan struct {
	ask     bool
	refuse  string
	sandbox *sandbox.Policy
	verdict rules.Verdict
	// escalated: the model asked to run outside the sandbox.
	escalated bool
}

func (p commandPlan) forbidden() bool    { return p.verdict.Decision == rules.Forbidden }
func (p commandPlan) opaque() string     { return p.verdict.Opaque }
func (p commandPlan) privileged() string { return p.verdict.Privileged }

// sessionApprovable: a human may accept the command for the session. A
// forbidden, privileged or opaque command is accepted once at a time.
func (p commandPlan) sessionApprovable() bool {
	return !p.forbidden() && p.privileged() == "" && p.opaque() == ""
}
func (p commandPlan) reason() string       { return p.verdict.Reason }
func (p commandPlan) ruleDecision() string { return p.verdict.Decision.String() }
func (p commandPlan) sandboxed() bool      { return p.sandbox != nil }

// confine makes req run in the plan's sandbox.
func (p commandPlan) confine(req *tools.ExecRequest) { req.Sandbox = p.sandbox }

// ruleName is how receipts and requests name the rule behind the verdict.
func (p commandPlan) ruleName() string {
	v := p.verdict
	if v.Rule == nil {
		return "default"
	}
	return fmt.Sprintf("%s %s (%s:%d)", v.Rule.Decision, strings.Join(v.Rule.Prefix, " "), v.Rule.Source, v.Rule.Line)
}

// effective names the plan for policy/explain.
func (p commandPlan) effective() string {
	switch {
	case p.refuse != "":
		return "refuse"
	case p.ask:
		return "ask"
	case p.sandbox != nil:
		return "runSandboxed"
	}
	return "run"
}

// approvalKey is the key of a command accepted "for session": an approval
// to run a command in the sandbox never covers running it outside.
func approvalKey(cmd string, escalated bool) string {
	if escalated {
		return "\x00escalated\x00" + cmd
	}
	return cmd
}

// planCommand decides a command. policy/explain reports exactly this plan.
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
func (j judge) planCommand(cmd string, escalated bool) commandPlan {
	v := j.commandRules().Evaluate(cmd, j.rulesContext())
	sb, sbErr := j.sandboxPolicy(escalated)
	plan := commandPlan{verdict: v, sandbox: sb, escalated: escalated}
	never := j.settings.ApprovalPolicy == protocol.ApprovalNever
	switch {
	case j.readOnly && (escalated || sbErr != nil && v.Decision != rules.Allow):
		plan.refuse = instructions.ReadOnlyRefusal(escalated)
	case v.Decision == rules.Forbidden:
		if never {
			plan.refuse = v.Reason + ". Forbidden commands need a human, and this thread never asks; do not try to run it another way."
		} else {
			plan.ask = true
		}
	case v.Privileged != "":
		if never {
			plan.refuse = "This command runs something as another user (" + v.Privileged + "). That needs a human every time, and this thread never asks; do the work without it, or say what a human must run."
		} else {
			plan.ask = true
		}
	case escalated:
		switch {
		case j.approved[approvalKey(cmd, true)]:
		case never:
			plan.refuse = "Running a command outside the sandbox needs a human's approval, and this thread never asks. Run it without require_escalated: it then runs inside the sandbox."
		default:
			plan.ask = true
		}
	case j.approved[approvalKey(cmd, false)]:
	case v.Opaque != "" && sb == nil:
		if never {
			plan.refuse = "The rules cannot read this command fully (" + v.Opaque + "), so it may only run inside the sandbox, and this thread has none and never asks. Write it so the program and its subcommand are plain words."
		} else {
			plan.ask = true
		}
	case never:
	case j.settings.ApprovalPolicy == protocol.ApprovalUntrusted:
		plan.ask = v.Decision != rules.Allow
	case v.Decision == rules.Allow, j.settings.Sandbox == protocol.SandboxDangerFullAccess:
	default:
		plan.ask = sbErr != nil
	}
	return plan
}

// fileChangePlan applies the approval policy to a file change (protocol/codex/CORE.md §9):
// written without asking under "never" or danger-full-access; asked about
// under "untrusted" and in read-only; under on-request with workspace-write,
// asked only when a path is outside the writable roots (which the workspace
// guard refuses before this) — unless every path was accepted for the
// session. A read-only thread that never asks cannot write: refused.
func (j judge) fileChangePlan(paths []string, inside bool) string {
	allApproved := true
	for _, p := range paths {
		if !j.approvedPaths[p] {
			allApproved = false
		}
	}
	switch {
	case allApproved:
		return fileWrite
	case j.settings.ApprovalPolicy == protocol.ApprovalNever && j.settings.Sandbox == protocol.SandboxReadOnly:
		return fileRefuse
	case j.settings.ApprovalPolicy == protocol.ApprovalNever:
		return fileWrite
	case j.settings.ApprovalPolicy == protocol.ApprovalUntrusted:
		return fileAsk
	case j.settings.Sandbox == protocol.SandboxDangerFullAccess:
		return fileWrite
	case j.settings.Sandbox == protocol.SandboxReadOnly, !inside:
		return fileAsk
	}
	return fileWrite
}
