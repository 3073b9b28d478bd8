package explain

import (
	"encoding/json"
	"testing"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
)

func TestResult(t *testing.T) {
	for _, tc := range []struct {
		name string
		j    port.PolicyJudgment
		want string
	}{
		{"a command by the default rule",
			port.PolicyJudgment{Sandbox: protocol.SandboxWorkspaceWrite, Approval: protocol.ApprovalOnRequest,
				Command: &port.CommandJudgment{Decision: "prompt", Reason: "r", Effective: "runSandboxed"}},
			`{"decision":"prompt","rule":null,"source":"default","part":null,"reason":"r","effective":"runSandboxed","sandbox":"workspace-write","approvalPolicy":"on-request"}`},
		{"a command by a rule, refused, opaque",
			port.PolicyJudgment{Sandbox: protocol.SandboxDangerFullAccess, Approval: protocol.ApprovalNever,
				Command: &port.CommandJudgment{Escalated: true, Decision: "forbidden", Reason: "r", Effective: "refuse", Refusal: "no",
					Opaque: "$(x)", Privileged: "sudo", Part: "git push", Rule: "forbidden git push", Source: "/rules", Line: 3}},
			`{"decision":"forbidden","rule":"forbidden git push","source":"/rules:3","part":"git push","reason":"r","effective":"refuse","sandbox":"danger-full-access","approvalPolicy":"never","opaque":"$(x)","privileged":"sudo","escalated":true,"refusal":"no"}`},
		{"a rule without a line",
			port.PolicyJudgment{Command: &port.CommandJudgment{Decision: "allow", Effective: "run", Rule: "allow ls", Source: "builtin"}},
			`{"decision":"allow","rule":"allow ls","source":"builtin","part":null,"reason":"","effective":"run","sandbox":"","approvalPolicy":""}`},
		{"a path inside the roots",
			port.PolicyJudgment{Sandbox: protocol.SandboxWorkspaceWrite, Approval: protocol.ApprovalOnRequest,
				File: &port.FileJudgment{Resolved: "/w/a", WritableRoots: []string{"/w", "/x"}, Plan: "write"}},
			`{"decision":"allow","rule":null,"source":"sandbox","part":null,"reason":"inside the writable roots: /w, /x","effective":"run","sandbox":"workspace-write","approvalPolicy":"on-request","resolvedPath":"/w/a"}`},
		{"a path the policy asks about",
			port.PolicyJudgment{Sandbox: protocol.SandboxReadOnly, Approval: protocol.ApprovalOnRequest,
				File: &port.FileJudgment{Resolved: "/w/a", WritableRoots: []string{"/w"}, Plan: "ask"}},
			`{"decision":"prompt","rule":null,"source":"sandbox","part":null,"reason":"inside the writable roots: /w; approval policy on-request with sandbox read-only asks before file changes","effective":"ask","sandbox":"read-only","approvalPolicy":"on-request","resolvedPath":"/w/a"}`},
		{"a path no change may write",
			port.PolicyJudgment{Sandbox: protocol.SandboxReadOnly, Approval: protocol.ApprovalNever,
				File: &port.FileJudgment{Resolved: "/w/a", WritableRoots: []string{"/w"}, Plan: "refuse"}},
			`{"decision":"forbidden","rule":null,"source":"sandbox","part":null,"reason":"the sandbox is read-only and approval policy never asks, so no file can be changed","effective":"refuse","sandbox":"read-only","approvalPolicy":"never","resolvedPath":"/w/a"}`},
		{"a path the file tools refuse",
			port.PolicyJudgment{File: &port.FileJudgment{Refused: "outside", Plan: "refuse"}},
			`{"decision":"forbidden","rule":null,"source":"sandbox","part":null,"reason":"the file tools refuse it: outside","effective":"refuse","sandbox":"","approvalPolicy":""}`},
	} {
		b, err := json.Marshal(Result(tc.j))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("%s: Result = %s\nwant %s", tc.name, b, tc.want)
		}
	}
}
