package controller

import (
	"fmt"
	"strings"
)

// blockedPrefixDenials is how many human denials block a command prefix.
const blockedPrefixDenials = 3

// Approve answers an approval request under full auto. denials counts,
// per command prefix, how often a human declined it in this run.
//
//   - ApproveAsk forwards everything to a human.
//   - ApproveNever accepts everything except what the rules forbid, what
//     runs a command as another user (privileged: sudo, su, doas, pkexec,
//     run0, ...), what asks to run outside the sandbox (escalated) and
//     what the rules cannot read (opaque) and would run outside the
//     sandbox, which it declines: no human is there to decide.
//   - ApprovePolicy accepts what the rules allow, file changes inside the
//     writable roots, and sandboxed commands the rules only prompt for,
//     opaque ones included (running the workspace's code is what the
//     sandbox is for). It never accepts a forbidden, privileged or
//     escalated command, nor an opaque one outside the sandbox, nor a
//     request only a human may approve (HumanOnly): a human decides.
//
// Under never and policy a prefix a human declined 3 times is declined
// without asking again, and questions always go on (the session asks the
// decision model). An unknown strategy forwards.
func Approve(strategy ApprovalStrategy, req ApprovalRequest, denials map[string]int) ApprovalVerdict {
	verdict := func(outcome, rule, format string, args ...any) ApprovalVerdict {
		return ApprovalVerdict{Outcome: outcome, Rule: rule, Reason: fmt.Sprintf(format, args...)}
	}
	if strategy != ApproveNever && strategy != ApprovePolicy {
		if strategy == ApproveAsk {
			return verdict(OutcomeForward, "ask", "approval strategy ask: a human decides")
		}
		return verdict(OutcomeForward, "unknownStrategy", "unknown approval strategy %q: a human decides", strategy)
	}
	if req.Kind == "question" {
		return verdict(OutcomeForward, string(strategy)+".question", "questions are answered by the decision model or a human")
	}
	prefix := req.Prefix
	if prefix == "" {
		prefix = commandPrefix(req.Command)
	}
	if n := denials[prefix]; prefix != "" && n >= blockedPrefixDenials {
		return verdict(OutcomeDecline, "denials.prefixBlocked", "%q was declined %d times in this run", prefix, n)
	}
	opaqueOutside := req.Opaque != "" && !req.Sandboxed
	if strategy == ApproveNever {
		switch {
		case req.RuleDecision == "forbidden":
			return verdict(OutcomeDecline, "never.forbidden", "forbidden by rule %s", req.Rule)
		case req.Privileged != "":
			return verdict(OutcomeDecline, "never.privileged", "%s: only a human approves that, and under approval strategy never nobody is asked", req.Privileged)
		case req.HumanOnly != "":
			return verdict(OutcomeDecline, "never.humanOnly", "%s: only a human approves that, and under approval strategy never nobody is asked", req.HumanOnly)
		case req.Escalated:
			return verdict(OutcomeDecline, "never.escalated", "running outside the sandbox is a human's call, and under approval strategy never nobody is asked")
		case opaqueOutside:
			return verdict(OutcomeDecline, "never.opaque", "the rules cannot read the command (%s) and it would run outside the sandbox, and under approval strategy never nobody is asked", req.Opaque)
		}
		return verdict(OutcomeAccept, "never", "approval strategy never: accept what is not forbidden, privileged, escalated or opaque outside the sandbox")
	}
	switch {
	case req.RuleDecision == "forbidden":
		return verdict(OutcomeForward, "policy.forbidden", "forbidden by rule %s: a human decides", req.Rule)
	case req.Privileged != "":
		return verdict(OutcomeForward, "policy.privileged", "%s: a human decides", req.Privileged)
	case req.HumanOnly != "":
		return verdict(OutcomeForward, "policy.humanOnly", "%s: a human decides", req.HumanOnly)
	case req.Escalated:
		return verdict(OutcomeForward, "policy.escalated", "the command asks to run outside the sandbox: a human decides")
	case opaqueOutside:
		return verdict(OutcomeForward, "policy.opaque", "the rules cannot read the command (%s) and it would run outside the sandbox: a human decides", req.Opaque)
	case req.RuleDecision == "allow":
		return verdict(OutcomeAccept, "policy.ruleAllow", "allowed by rule %s", req.Rule)
	case req.Kind == "fileChange" && req.InsideWritableRoots:
		return verdict(OutcomeAccept, "policy.writableRoots", "the change stays inside the writable roots")
	case req.Kind == "command" && req.RuleDecision == "prompt" && req.Sandboxed:
		return verdict(OutcomeAccept, "policy.sandboxed", "the command runs in the sandbox")
	}
	return verdict(OutcomeForward, "policy.forward", "not covered by the policy: a human decides")
}

// commandPrefix is the first two words of a command.
func commandPrefix(cmd string) string {
	f := strings.Fields(cmd)
	return strings.Join(f[:min(2, len(f))], " ")
}
