package controller

import "testing"

func TestApprove(t *testing.T) {
	cmd := func(command, rule string, sandboxed bool) ApprovalRequest {
		return ApprovalRequest{Kind: "command", Command: command, RuleDecision: rule, Rule: "r1", Sandboxed: sandboxed}
	}
	file := func(inside bool) ApprovalRequest {
		return ApprovalRequest{Kind: "fileChange", Paths: []string{"/w/main.go"}, InsideWritableRoots: inside}
	}
	question := ApprovalRequest{Kind: "question"}
	escalated := func(rule string) ApprovalRequest {
		r := cmd("make test", rule, false)
		r.Escalated = true
		return r
	}
	opaque := cmd("$(echo git) push", "prompt", true)
	opaque.Opaque = "cannot tell which program $(echo git) runs"
	opaqueOutside := opaque
	opaqueOutside.Sandboxed = false
	privileged := func(rule string, sandboxed bool) ApprovalRequest {
		r := cmd("sudo -s", rule, sandboxed)
		r.Privileged = "sudo runs commands as another user"
		return r
	}
	untrustedMCP := ApprovalRequest{Kind: "mcpToolCall", Command: "mcp__exfil__write", HumanOnly: "MCP server \"exfil\" was added by an untrusted workspace file"}
	trustedMCP := ApprovalRequest{Kind: "mcpToolCall", Command: "mcp__docs__write"}
	blocked := map[string]int{"git push": 3}
	for _, c := range []struct {
		name     string
		strategy ApprovalStrategy
		req      ApprovalRequest
		denials  map[string]int
		outcome  string
		rule     string
	}{
		{"never: allowed", ApproveNever, cmd("go test ./...", "allow", false), nil, OutcomeAccept, "never"},
		{"never: prompt, unsandboxed", ApproveNever, cmd("curl example.com", "prompt", false), nil, OutcomeAccept, "never"},
		{"never: file outside roots", ApproveNever, file(false), nil, OutcomeAccept, "never"},
		{"never: forbidden", ApproveNever, cmd("rm -rf /", "forbidden", false), nil, OutcomeDecline, "never.forbidden"},
		{"never: question", ApproveNever, question, nil, OutcomeForward, "never.question"},
		{"never: blocked prefix", ApproveNever, cmd("git push origin main", "prompt", false), blocked, OutcomeDecline, "denials.prefixBlocked"},

		{"ask: allowed", ApproveAsk, cmd("go test ./...", "allow", true), nil, OutcomeForward, "ask"},
		{"ask: file inside roots", ApproveAsk, file(true), nil, OutcomeForward, "ask"},
		{"ask: blocked prefix still asks", ApproveAsk, cmd("git push", "prompt", false), blocked, OutcomeForward, "ask"},

		{"policy: rule allows", ApprovePolicy, cmd("go test ./...", "allow", false), nil, OutcomeAccept, "policy.ruleAllow"},
		{"policy: file inside roots", ApprovePolicy, file(true), nil, OutcomeAccept, "policy.writableRoots"},
		{"policy: file outside roots", ApprovePolicy, file(false), nil, OutcomeForward, "policy.forward"},
		{"policy: prompt, sandboxed", ApprovePolicy, cmd("make build", "prompt", true), nil, OutcomeAccept, "policy.sandboxed"},
		{"policy: prompt, unsandboxed", ApprovePolicy, cmd("make build", "prompt", false), nil, OutcomeForward, "policy.forward"},
		{"policy: no rule, sandboxed", ApprovePolicy, cmd("make build", "", true), nil, OutcomeForward, "policy.forward"},
		{"policy: forbidden goes to a human", ApprovePolicy, cmd("rm -rf /", "forbidden", true), nil, OutcomeForward, "policy.forbidden"},
		{"policy: question", ApprovePolicy, question, nil, OutcomeForward, "policy.question"},

		// Escalation, and opaque commands outside the sandbox, are a human's
		// call in every strategy.
		{"never: escalated, allowed by a rule", ApproveNever, escalated("allow"), nil, OutcomeDecline, "never.escalated"},
		{"never: opaque, unsandboxed", ApproveNever, opaqueOutside, nil, OutcomeDecline, "never.opaque"},
		{"policy: escalated, allowed by a rule", ApprovePolicy, escalated("allow"), nil, OutcomeForward, "policy.escalated"},
		{"policy: escalated, prompt", ApprovePolicy, escalated("prompt"), nil, OutcomeForward, "policy.escalated"},
		{"policy: opaque, unsandboxed", ApprovePolicy, opaqueOutside, nil, OutcomeForward, "policy.opaque"},
		// Inside the sandbox, an opaque command (make test, a script) runs
		// like any other prompted command: that is what the sandbox is for.
		{"never: opaque, sandboxed", ApproveNever, opaque, nil, OutcomeAccept, "never"},
		{"policy: opaque, sandboxed", ApprovePolicy, opaque, nil, OutcomeAccept, "policy.sandboxed"},
		// Running as another user is a human's call, sandboxed or not,
		// whatever rule allows it.
		{"never: privileged, sandboxed", ApproveNever, privileged("prompt", true), nil, OutcomeDecline, "never.privileged"},
		{"never: privileged, allowed", ApproveNever, privileged("allow", false), nil, OutcomeDecline, "never.privileged"},
		{"policy: privileged, sandboxed", ApprovePolicy, privileged("prompt", true), nil, OutcomeForward, "policy.privileged"},
		{"policy: privileged, allowed", ApprovePolicy, privileged("allow", true), nil, OutcomeForward, "policy.privileged"},
		{"ask: privileged", ApproveAsk, privileged("prompt", true), nil, OutcomeForward, "ask"},
		// A tool of an MCP server an untrusted workspace added: its URL is
		// the repository's choice, so a human decides in every strategy. A
		// server the user configured is the strategy's as before.
		{"never: untrusted MCP server", ApproveNever, untrustedMCP, nil, OutcomeDecline, "never.humanOnly"},
		{"policy: untrusted MCP server", ApprovePolicy, untrustedMCP, nil, OutcomeForward, "policy.humanOnly"},
		{"ask: untrusted MCP server", ApproveAsk, untrustedMCP, nil, OutcomeForward, "ask"},
		{"never: the user's MCP server", ApproveNever, trustedMCP, nil, OutcomeAccept, "never"},
		{"policy: the user's MCP server", ApprovePolicy, trustedMCP, nil, OutcomeForward, "policy.forward"},
		{"ask: escalated", ApproveAsk, escalated("allow"), nil, OutcomeForward, "ask"},
		{"policy: blocked prefix", ApprovePolicy, cmd("git  push --force", "allow", true), blocked, OutcomeDecline, "denials.prefixBlocked"},
		{"policy: explicit prefix", ApprovePolicy, ApprovalRequest{Kind: "command", Command: "x", Prefix: "git push", RuleDecision: "allow"}, blocked, OutcomeDecline, "denials.prefixBlocked"},
		{"policy: two denials", ApprovePolicy, cmd("git push", "prompt", true), map[string]int{"git push": 2}, OutcomeAccept, "policy.sandboxed"},
		{"policy: other prefix", ApprovePolicy, cmd("git pull", "prompt", true), blocked, OutcomeAccept, "policy.sandboxed"},

		{"unknown strategy", "yolo", cmd("ls", "allow", true), nil, OutcomeForward, "unknownStrategy"},
	} {
		got := Approve(c.strategy, c.req, c.denials)
		if got.Outcome != c.outcome || got.Rule != c.rule || got.Reason == "" {
			t.Errorf("Approve(%s) = %+v, want %s by %s", c.name, got, c.outcome, c.rule)
		}
	}
}

func TestCommandPrefix(t *testing.T) {
	for cmd, want := range map[string]string{"git push origin main": "git push", "  ls ": "ls", "": "", "go\ttest ./...": "go test"} {
		if got := commandPrefix(cmd); got != want {
			t.Errorf("commandPrefix(%q) = %q, want %q", cmd, got, want)
		}
	}
}
