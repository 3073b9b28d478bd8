package commandpolicy

import (
	"fmt"
	"strings"

	"github.com/apserver/apserver/tools"
	"github.com/apserver/apserver/tools/rules"
	"github.com/apserver/apserver/tools/sandbox"
)

// Plan is what happens to a command: run (confined by Sandbox unless
// nil), ask the user first (Ask), or refuse (Refuse, the model's answer).
type Plan struct {
	Ask     bool
	Refuse  string
	Sandbox *sandbox.Policy
	Verdict rules.Verdict
	// Escalated: the model asked to run outside the sandbox.
	Escalated bool
}

// Forbidden: the rules forbid the command.
func (p Plan) Forbidden() bool { return p.Verdict.Decision == rules.Forbidden }

// Opaque says why the rules cannot read the command fully ("" they can).
func (p Plan) Opaque() string { return p.Verdict.Opaque }

// Privileged says why the command runs as another user ("" it does not).
func (p Plan) Privileged() string { return p.Verdict.Privileged }

// SessionApprovable: a human may accept the command for the session. A
// forbidden, privileged or opaque command is accepted once at a time.
func (p Plan) SessionApprovable() bool {
	return !p.Forbidden() && p.Privileged() == "" && p.Opaque() == ""
}

// Reason is the rules' reason for their verdict.
func (p Plan) Reason() string { return p.Verdict.Reason }

// RuleDecision is the rules' verdict: "allow", "prompt" or "forbidden".
func (p Plan) RuleDecision() string { return p.Verdict.Decision.String() }

// Sandboxed: the command runs confined by the kernel sandbox.
func (p Plan) Sandboxed() bool { return p.Sandbox != nil }

// Confine makes req run in the plan's sandbox.
func (p Plan) Confine(req *tools.ExecRequest) { req.Sandbox = p.Sandbox }

// RuleName is how receipts and requests name the rule behind the verdict.
func (p Plan) RuleName() string {
	v := p.Verdict
	if v.Rule == nil {
		return "default"
	}
	return fmt.Sprintf("%s %s (%s:%d)", v.Rule.Decision, strings.Join(v.Rule.Prefix, " "), v.Rule.Source, v.Rule.Line)
}

// Effective names the plan for policy/explain: "refuse", "ask",
// "runSandboxed" or "run".
func (p Plan) Effective() string {
	switch {
	case p.Refuse != "":
		return "refuse"
	case p.Ask:
		return "ask"
	case p.Sandbox != nil:
		return "runSandboxed"
	}
	return "run"
}
