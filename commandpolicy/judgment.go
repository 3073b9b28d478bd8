package commandpolicy

import (
	"strings"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
)

// Judgment is the plan a command or a file change of a policy/explain
// question would get: for a command the very plan PlanCommand makes (same
// rules, approvals and sandbox), for a path where it resolves and
// FileChangePlan's answer.
func (j Judge) Judgment(p protocol.PolicyExplainParams) port.PolicyJudgment {
	res := port.PolicyJudgment{Sandbox: j.Settings.Sandbox, Approval: j.Settings.ApprovalPolicy}
	if p.Command != nil {
		escalated := p.SandboxPermissions != nil && *p.SandboxPermissions == "require_escalated"
		plan := j.PlanCommand(*p.Command, escalated)
		v := plan.Verdict
		c := &port.CommandJudgment{Escalated: escalated, Decision: v.Decision.String(), Reason: v.Reason, Effective: plan.Effective(),
			Refusal: plan.Refuse, Opaque: v.Opaque, Privileged: v.Privileged, Part: v.Part}
		if v.Rule != nil {
			c.Rule = strings.TrimSpace(v.Rule.Decision.String() + " " + strings.Join(v.Rule.Prefix, " "))
			c.Source, c.Line = v.Rule.Source, v.Rule.Line
		}
		res.Command = c
		return res
	}
	f := &port.FileJudgment{WritableRoots: j.WritableRoots()}
	res.File = f
	ws, err := j.Workspace()
	if err == nil {
		var abs string
		if abs, err = ws.ResolveWrite(*p.Path); err == nil {
			f.Resolved, f.Plan = abs, j.FileChangePlan([]string{PathKey(j.Settings.Cwd, abs)}, true)
			return res
		}
	}
	f.Refused, f.Plan = err.Error(), FileRefuse
	return res
}
