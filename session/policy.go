package session

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tools"
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

// commandRules returns the thread's rules: the built-in ones, the user's
// file, then the workspace's .apserver/rules. A file that fails to load
// (a bad line, or an example its rule does not decide as written) is left
// out and a warning names it; the built-in rules always apply.
func (t *thread) commandRules() *rules.Set {
	files := []string{}
	if f := t.m.opts.Config.RulesFile; f != "" {
		files = append(files, f)
	}
	files = append(files, filepath.Join(t.settings.Cwd, WorkspaceRulesFile))
	mt := statMtimes(files)
	if c := t.rules; c != nil && slices.Equal(c.files, files) && slices.EqualFunc(c.mtime, mt, time.Time.Equal) {
		return c.set
	}
	c := &rulesCache{files: files, mtime: mt}
	c.set, c.err = rules.Load(files...)
	if c.err != nil {
		t.warn(fmt.Sprintf("command rules not loaded: %v; using the rules that load", c.err))
		// Keep every file that loads on its own.
		c.set = rules.Builtin()
		for _, f := range files {
			if s, err := rules.Load(f); err == nil {
				c.set = c.set.With(userRules(s)...)
			}
		}
	}
	t.rules = c
	return c.set
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

// warn sends a warning notification for this thread.
func (t *thread) warn(msg string) {
	t.m.log.Warn(msg, "thread", t.id)
	w := protocol.WarningNotification{Message: msg}
	if t.id != "" {
		w.ThreadID = ptr(t.id)
	}
	t.notify(protocol.NotifyWarning, w)
}

func (t *thread) rulesContext() rules.Context {
	home, _ := os.UserHomeDir()
	return rules.Context{Cwd: t.settings.Cwd, WritableRoots: t.writableRoots(), Home: home}
}

func (t *thread) writableRoots() []string {
	return append([]string{t.settings.Cwd}, t.m.opts.Config.SandboxWritableRoots...)
}

// sandboxPolicy is the kernel sandbox for the thread's commands: nil for
// danger-full-access (or an approved escalation), else a policy that the
// kernel can enforce; an error when it cannot (the caller then asks).
func (t *thread) sandboxPolicy(escalated bool) (*sandbox.Policy, error) {
	mode := t.settings.Sandbox
	if mode == protocol.SandboxDangerFullAccess || escalated {
		return nil, nil
	}
	cfg := t.m.opts.Config
	p := &sandbox.Policy{
		Mode:          sandbox.Mode(mode),
		ReadableRoots: cfg.SandboxReadableRoots,
		Network:       cfg.SandboxNetwork,
		AllowTmp:      true,
	}
	if mode == protocol.SandboxWorkspaceWrite {
		p.WritableRoots = t.writableRoots()
	}
	probe := sandbox.Probe
	if f := t.m.opts.SandboxSupport; f != nil {
		probe = f
	}
	if err := probe().Enforceable(*p); err != nil {
		if !t.sandboxWarned {
			t.sandboxWarned = true
			t.warn(fmt.Sprintf("commands cannot be confined by the kernel sandbox here (%v); every command the rules do not allow will be sent for approval", err))
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

func (p commandPlan) forbidden() bool      { return p.verdict.Decision == rules.Forbidden }
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

// planCommand decides a command: the rules first (forbidden always needs
// a human), then the approval policy and the sandbox.
//
//   - never: run everything the rules do not forbid; refuse forbidden ones.
//   - untrusted: run what the rules allow; ask for the rest.
//   - on-request (and on-failure): ask when the model requests escalation;
//     otherwise run in the sandbox without asking, or, where the kernel
//     cannot sandbox, ask for anything the rules do not allow.
//
// A command accepted "for session" runs again without asking unless it is
// forbidden. Commands run confined by the sandbox unless the thread is
// danger-full-access or the user approved an escalation.
func (t *thread) planCommand(cmd string, escalated bool) commandPlan {
	v := t.commandRules().Evaluate(cmd, t.rulesContext())
	sb, sbErr := t.sandboxPolicy(escalated)
	plan := commandPlan{verdict: v, sandbox: sb, escalated: escalated}
	policy := t.settings.ApprovalPolicy
	switch {
	case v.Decision == rules.Forbidden:
		if policy == protocol.ApprovalNever {
			plan.refuse = v.Reason + ". Forbidden commands need a human, and this thread never asks; do not try to run it another way."
		} else {
			plan.ask = true
		}
	case t.approved[cmd]:
	case policy == protocol.ApprovalNever:
	case policy == protocol.ApprovalUntrusted:
		plan.ask = v.Decision != rules.Allow
	case escalated:
		plan.ask = true
	case v.Decision == rules.Allow, t.settings.Sandbox == protocol.SandboxDangerFullAccess:
	default:
		plan.ask = sbErr != nil
	}
	return plan
}
