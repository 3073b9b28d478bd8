package session

import (
	"github.com/apserver/apserver/commandpolicy"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tools"
	"github.com/apserver/apserver/tools/files"
	"github.com/apserver/apserver/tools/rules"
	"github.com/apserver/apserver/tools/sandbox"
)

// The command judge is package commandpolicy's; this file builds it from a
// thread (or the server's defaults) and gives it session's names.

// WorkspaceRulesFile is the workspace's command rules, relative to its root.
const WorkspaceRulesFile = commandpolicy.WorkspaceRulesFile

// rulesCache holds the loaded command rules of a thread.
type rulesCache = commandpolicy.RulesCache

// judge is what a commandpolicy.Judge is built from: a thread's (thread.judge)
// or, for policy/explain and the user's own commands, other settings.
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

// policy is the judge itself.
func (j judge) policy() commandpolicy.Judge {
	return commandpolicy.Judge{
		Settings: commandpolicy.Settings{Cwd: j.settings.Cwd, ApprovalPolicy: j.settings.ApprovalPolicy, Sandbox: j.settings.Sandbox},
		Config:   &j.m.opts.Config, Probe: j.m.opts.SandboxSupport, Warn: j.warn,
		Approved: j.approved, ApprovedPaths: j.approvedPaths, Rules: j.rules, SandboxWarned: j.sandboxWarned, ReadOnly: j.readOnly,
	}
}

func (j judge) planCommand(cmd string, escalated bool) commandPlan {
	return planOf(j.policy().PlanCommand(cmd, escalated))
}
func (j judge) commandRules() *rules.Set             { return j.policy().CommandRules() }
func (j judge) rulesContext() rules.Context          { return j.policy().RulesContext() }
func (j judge) workspace() (*files.Workspace, error) { return j.policy().Workspace() }
func (j judge) sandboxPolicy(escalated bool) (*sandbox.Policy, error) {
	return j.policy().SandboxPolicy(escalated)
}
func (j judge) fileChangePlan(paths []string, inside bool) string {
	return j.policy().FileChangePlan(paths, inside)
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

// commandPlan is a commandpolicy.Plan as the thread's command runs carry it.
type commandPlan struct {
	ask     bool
	refuse  string
	sandbox *sandbox.Policy
	verdict rules.Verdict
	// escalated: the model asked to run outside the sandbox.
	escalated bool
}

func planOf(p commandpolicy.Plan) commandPlan {
	return commandPlan{ask: p.Ask, refuse: p.Refuse, sandbox: p.Sandbox, verdict: p.Verdict, escalated: p.Escalated}
}

func (p commandPlan) policy() commandpolicy.Plan {
	return commandpolicy.Plan{Ask: p.ask, Refuse: p.refuse, Sandbox: p.sandbox, Verdict: p.verdict, Escalated: p.escalated}
}

func (p commandPlan) forbidden() bool                { return p.policy().Forbidden() }
func (p commandPlan) opaque() string                 { return p.policy().Opaque() }
func (p commandPlan) privileged() string             { return p.policy().Privileged() }
func (p commandPlan) sessionApprovable() bool        { return p.policy().SessionApprovable() }
func (p commandPlan) reason() string                 { return p.policy().Reason() }
func (p commandPlan) ruleDecision() string           { return p.policy().RuleDecision() }
func (p commandPlan) sandboxed() bool                { return p.policy().Sandboxed() }
func (p commandPlan) confine(req *tools.ExecRequest) { p.policy().Confine(req) }
func (p commandPlan) ruleName() string               { return p.policy().RuleName() }
func (p commandPlan) effective() string              { return p.policy().Effective() }

// approvalKey is the key of a command accepted "for session"
// (commandpolicy.ApprovalKey).
func approvalKey(cmd string, escalated bool) string { return commandpolicy.ApprovalKey(cmd, escalated) }
