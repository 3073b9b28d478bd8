package session

import (
	"context"
	"path/filepath"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
)

// JudgePolicy decides a policy/explain question: what would happen to a
// command or a file path, and which rule says so (the services' explain
// reports it). With a threadId the thread's cwd, approval policy, sandbox
// and session approvals apply, on its goroutine; without, the server's
// defaults and the given cwd (or the server's own working directory).
func (m *Manager) JudgePolicy(ctx context.Context, p protocol.PolicyExplainParams, reply func(port.PolicyJudgment, error)) {
	// An explain never warns that the sandbox is missing: the thread's
	// commands do that.
	if p.ThreadID != nil && *p.ThreadID != "" {
		m.onThread(*p.ThreadID, func(_ any, err error) { reply(port.PolicyJudgment{}, err) }, func(t *thread) {
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
			reply(j.judgment(p), nil)
		})
		return
	}
	s := m.defaultSettings()
	if p.Cwd != nil && *p.Cwd != "" {
		s.Cwd = *p.Cwd
	}
	if !filepath.IsAbs(s.Cwd) {
		reply(port.PolicyJudgment{}, protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: cwd must be an absolute path: %s", s.Cwd))
		return
	}
	var rules *rulesCache
	warned := true
	reply(judge{m: m, settings: s, rules: &rules, sandboxWarned: &warned}.judgment(p), nil)
}

// judgment is the plan a command or a file change would get
// (commandpolicy.Judge.Judgment).
func (j judge) judgment(p protocol.PolicyExplainParams) port.PolicyJudgment {
	return j.policy().Judgment(p)
}
