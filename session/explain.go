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
	if p.ThreadID != nil && *p.ThreadID != "" {
		m.onThread(*p.ThreadID, reply, func(t *thread) {
			s := t.settings
			if p.Cwd != nil && *p.Cwd != "" {
				s.Cwd = *p.Cwd
			}
			ex := m.explainer(t.id, s, t.approved, t.approvedPaths)
			if s.Cwd == t.settings.Cwd {
				// Share the thread's loaded rules, so that a query warns
				// about a rules file once, as the thread's commands do.
				ex.rules = t.rules
				defer func() { t.rules = ex.rules }()
			}
			reply(ex.explain(p), nil)
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
	reply(m.explainer("", s, nil, nil).explain(p), nil)
}

// explainer is a thread value with no goroutine, for judging with the given
// settings and session approvals: explain only reads those and the rules
// files, so a query never changes the real thread.
func (m *Manager) explainer(id string, s threadSettings, approved, approvedPaths map[string]bool) *thread {
	return &thread{m: m, id: id, settings: s, approved: approved, approvedPaths: approvedPaths, sandboxWarned: true}
}

func (t *thread) explain(p protocol.PolicyExplainParams) protocol.PolicyExplainResult {
	res := protocol.PolicyExplainResult{Sandbox: t.settings.Sandbox, Approval: t.settings.ApprovalPolicy}
	if p.Command != nil {
		escalated := p.SandboxPermissions != nil && *p.SandboxPermissions == "require_escalated"
		// The very plan a command of this thread gets: same function, same
		// rules, approvals and sandbox.
		plan := t.planCommand(*p.Command, escalated)
		v := plan.verdict
		res.Decision, res.Reason, res.Effective = v.Decision.String(), v.Reason, plan.effective()
		res.Escalated = escalated
		if v.Opaque != "" {
			res.Opaque = ptr(v.Opaque)
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
	ws, err := t.workspace()
	if err == nil {
		var abs string
		abs, err = ws.ResolveWrite(*p.Path)
		if err == nil {
			res.ResolvedTo = ptr(abs)
			res.Decision = rules.Allow.String()
			res.Reason = "inside the writable roots: " + strings.Join(t.writableRoots(), ", ")
			res.Effective = "run"
			switch t.fileChangePlan([]string{relKey(t.settings.Cwd, abs)}, true) {
			case fileAsk:
				res.Decision, res.Effective = rules.Prompt.String(), "ask"
				res.Reason += fmt.Sprintf("; approval policy %s with sandbox %s asks before file changes", t.settings.ApprovalPolicy, t.settings.Sandbox)
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
