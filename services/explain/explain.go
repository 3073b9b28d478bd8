package explain

import (
	"context"
	"fmt"
	"strings"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
	"github.com/apserver/apserver/tools/rules"
)

// Service answers policy/explain. Any goroutine may use it.
type Service struct {
	// Judge decides the question (session.Manager.JudgePolicy) and calls
	// reply exactly once.
	Judge func(ctx context.Context, p protocol.PolicyExplainParams, reply func(port.PolicyJudgment, error))
}

// Explain implements policy/explain.
func (s *Service) Explain(ctx context.Context, p protocol.PolicyExplainParams, reply port.Reply) {
	s.Judge(ctx, p, func(j port.PolicyJudgment, err error) {
		if err != nil {
			reply(nil, err)
			return
		}
		reply(Result(j), nil)
	})
}

// Result is policy/explain's answer for judgment j.
func Result(j port.PolicyJudgment) protocol.PolicyExplainResult {
	res := protocol.PolicyExplainResult{Sandbox: j.Sandbox, Approval: j.Approval}
	if c := j.Command; c != nil {
		res.Decision, res.Reason, res.Effective, res.Escalated = c.Decision, c.Reason, c.Effective, c.Escalated
		res.Opaque, res.Privileged, res.Refusal, res.Part = some(c.Opaque), some(c.Privileged), some(c.Refusal), some(c.Part)
		res.Source = "default"
		if c.Rule != "" {
			res.Rule = &c.Rule
			res.Source = c.Source
			if c.Line > 0 {
				res.Source = fmt.Sprintf("%s:%d", c.Source, c.Line)
			}
		}
		return res
	}
	f := j.File
	if f == nil {
		f = &port.FileJudgment{Plan: "refuse", Refused: "no command and no path"} // Validate requires one
	}
	res.Source = "sandbox"
	if f.Resolved == "" {
		res.Decision, res.Effective = rules.Forbidden.String(), "refuse"
		res.Reason = "the file tools refuse it: " + f.Refused
		return res
	}
	res.ResolvedTo = &f.Resolved
	res.Decision, res.Effective = rules.Allow.String(), "run"
	res.Reason = "inside the writable roots: " + strings.Join(f.WritableRoots, ", ")
	switch f.Plan {
	case "ask":
		res.Decision, res.Effective = rules.Prompt.String(), "ask"
		res.Reason += fmt.Sprintf("; approval policy %s with sandbox %s asks before file changes", j.Approval, j.Sandbox)
	case "refuse":
		res.Decision, res.Effective = rules.Forbidden.String(), "refuse"
		res.Reason = "the sandbox is read-only and approval policy never asks, so no file can be changed"
	}
	return res
}

// some is s, or nil when it is empty.
func some(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
