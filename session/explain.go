package session

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tools/rules"
)

// ExplainPolicy implements policy/explain: what would happen to a command
// or a file path, and which rule says so. With a threadId the thread's cwd,
// approval policy and sandbox apply; without, the server's defaults and the
// given cwd (or the server's own working directory).
func (m *Manager) ExplainPolicy(ctx context.Context, p protocol.PolicyExplainParams, reply Reply) {
	// An explain never warns that the sandbox is missing: the thread's
	// commands do that.
	if p.ThreadID != nil && *p.ThreadID != "" {
		m.onThread(*p.ThreadID, reply, func(t *thread) {
			warned := true
			j := t.judge()
			j.sandboxWarned = &warned
			if p.Cwd != nil && *p.Cwd != "" && *p.Cwd != j.settings.Cwd {
				// Other rules files: a cache of its own. In the thread's
				// cwd, the thread's cache is shared, so that a query warns
				// about a rules file once, as the thread's commands do.
				var rules *rulesCache
				j.settings.Cwd, j.rules = *p.Cwd, &rules
			}
			reply(j.explain(p), nil)
		})
		return
	}
	s := m.defaultSettings()
	if p.Cwd != nil && *p.Cwd != "" {
		s.Cwd = *p.Cwd
	}
	if !filepath.IsAbs(s.Cwd) {
		reply(nil, protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: cwd must be an absolute path: %s", s.Cwd))
		return
	}
	var rules *rulesCache
	warned := true
	reply(judge{m: m, settings: s, rules: &rules, sandboxWarned: &warned}.explain(p), nil)
}

// explain reports the plan a command or a file change would get.
func (j judge) explain(p protocol.PolicyExplainParams) protocol.PolicyExplainResult {
	res := protocol.PolicyExplainResult{Sandbox: j.settings.Sandbox, Approval: j.settings.ApprovalPolicy}
	if p.Command != nil {
		escalated := p.SandboxPermissions != nil && *p.SandboxPermissions == "require_escalated"
		// The very plan a command of this thread gets: same function, same
		// rules, approvals and sandbox.
		plan := j.planCommand(*p.Command, escalated)
		v := plan.verdict
		res.Decision, res.Reason, res.Effective = v.Decision.String(), v.Reason, plan.effective()
		res.Escalated = escalated
		if v.Opaque != "" {
			res.Opaque = ptr(v.Opaque)
		}
		if v.Privileged != "" {
			res.Privileged = ptr(v.Privileged)
		}
		if plan.refuse != "" {
			res.Refusal = ptr(plan.refuse)
		}
		res.Source = "default"
		if v.Rule != nil {
			res.Rule = ptr(strings.TrimSpace(v.Rule.Decision.String() + " " + strings.Join(v.Rule.Prefix, " ")))
			res.Source = v.Rule.Source
			if v.Rule.Line > 0 {
				res.Source = fmt.Sprintf("%s:%d", v.Rule.Source, v.Rule.Line)
			}
		}
		if v.Part != "" {
			res.Part = ptr(v.Part)
		}
		return res
	}
	res.Source = "sandbox"
	ws, err := j.workspace()
	if err == nil {
		var abs string
		abs, err = ws.ResolveWrite(*p.Path)
		if err == nil {
			res.ResolvedTo = ptr(abs)
			res.Decision = rules.Allow.String()
			res.Reason = "inside the writable roots: " + strings.Join(j.writableRoots(), ", ")
			res.Effective = "run"
			switch j.fileChangePlan([]string{relKey(j.settings.Cwd, abs)}, true) {
			case fileAsk:
				res.Decision, res.Effective = rules.Prompt.String(), "ask"
				res.Reason += fmt.Sprintf("; approval policy %s with sandbox %s asks before file changes", j.settings.ApprovalPolicy, j.settings.Sandbox)
			case fileRefuse:
				res.Decision, res.Effective = rules.Forbidden.String(), "refuse"
				res.Reason = "the sandbox is read-only and approval policy never asks, so no file can be changed"
			}
			return res
		}
	}
	res.Decision, res.Effective = rules.Forbidden.String(), "refuse"
	res.Reason = "the file tools refuse it: " + err.Error()
	return res
}
