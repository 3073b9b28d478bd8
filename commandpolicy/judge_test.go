package commandpolicy

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tools"
	"github.com/apserver/apserver/tools/rules"
	"github.com/apserver/apserver/tools/sandbox"
)

var (
	kernelSandbox = func() sandbox.Support { return sandbox.Support{LandlockABI: 7, UserNS: true} }
	noSandbox     = func() sandbox.Support { return sandbox.Support{Err: errors.New("Landlock is not available")} }
)

// testJudge is a judge of a fresh workspace whose user rules file says
// userRules; warnings are collected in *warns.
func testJudge(t *testing.T, userRules string, approval protocol.ApprovalPolicy, mode protocol.SandboxMode, probe func() sandbox.Support) (Judge, *[]string) {
	t.Helper()
	cfg := &config.Config{}
	if userRules != "" {
		cfg.RulesFile = filepath.Join(t.TempDir(), "rules")
		if err := os.WriteFile(cfg.RulesFile, []byte(userRules), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var warns []string
	var cache *RulesCache
	warned := false
	j := Judge{
		Settings: Settings{Cwd: t.TempDir(), ApprovalPolicy: approval, Sandbox: mode},
		Config:   cfg, Probe: probe, Warn: func(m string) { warns = append(warns, m) },
		Approved: map[string]bool{}, ApprovedPaths: map[string]bool{},
		Rules: &cache, SandboxWarned: &warned,
	}
	return j, &warns
}

func TestApprovalKey(t *testing.T) {
	if ApprovalKey("make", false) != "make" {
		t.Errorf("ApprovalKey(make, false) = %q, want the command itself", ApprovalKey("make", false))
	}
	if k := ApprovalKey("make", true); k == "make" || k == ApprovalKey("make", false) {
		t.Errorf("ApprovalKey(make, true) = %q: an escalated approval must not share the sandboxed one's key", k)
	}
	if ApprovalKey("a", true) == ApprovalKey("b", true) {
		t.Error("ApprovalKey: two escalated commands share a key")
	}
}

func TestTightenOnly(t *testing.T) {
	rs := []rules.Rule{
		{Decision: rules.Allow, Prefix: []string{"curl"}, Line: 1},
		{Decision: rules.Forbidden, Prefix: []string{"go", "test"}, Line: 2},
		{Decision: rules.Prompt, Prefix: []string{"make"}, Line: 3},
	}
	var warns []string
	got := TightenOnly("ws/.apserver/rules", rs, func(m string) { warns = append(warns, m) })
	if len(got) != 2 || got[0].Decision != rules.Forbidden || got[1].Decision != rules.Prompt {
		t.Errorf("TightenOnly = %v, want the forbidden and prompt rules only", got)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "ws/.apserver/rules") || !strings.Contains(warns[0], "(line 1)") || strings.Contains(warns[0], "line 2") {
		t.Errorf("TightenOnly warned %q, want one warning naming the file and the dropped allow rule", warns)
	}
	warns = nil
	if got := TightenOnly("f", rs[1:], func(m string) { warns = append(warns, m) }); len(got) != 2 || len(warns) != 0 {
		t.Errorf("TightenOnly without allow rules = %v, warned %q; want both rules kept, no warning", got, warns)
	}
}

func TestPlanCommand(t *testing.T) {
	const userRules = "allow make\nforbidden curl\n"
	tests := []struct {
		cmd       string
		escalated bool
		approval  protocol.ApprovalPolicy
		mode      protocol.SandboxMode
		probe     func() sandbox.Support
		approved  []string // approval keys accepted for the session
		readOnly  bool
		want      string // Effective()
	}{
		// never: run what is not forbidden, privileged, escalated or opaque.
		{"make build", false, protocol.ApprovalNever, protocol.SandboxWorkspaceWrite, kernelSandbox, nil, false, "runSandboxed"},
		{"curl x", false, protocol.ApprovalNever, protocol.SandboxWorkspaceWrite, kernelSandbox, nil, false, "refuse"},
		{"sudo make", false, protocol.ApprovalNever, protocol.SandboxDangerFullAccess, nil, nil, false, "refuse"},
		{"make", true, protocol.ApprovalNever, protocol.SandboxWorkspaceWrite, kernelSandbox, nil, false, "refuse"},
		{`eval "$cmd"`, false, protocol.ApprovalNever, protocol.SandboxDangerFullAccess, nil, nil, false, "refuse"},
		{`eval "$cmd"`, false, protocol.ApprovalNever, protocol.SandboxWorkspaceWrite, kernelSandbox, nil, false, "runSandboxed"},
		{"npm install", false, protocol.ApprovalNever, protocol.SandboxDangerFullAccess, nil, nil, false, "run"},
		// untrusted: run what the rules allow, ask for the rest.
		{"make", false, protocol.ApprovalUntrusted, protocol.SandboxWorkspaceWrite, kernelSandbox, nil, false, "runSandboxed"},
		{"npm install", false, protocol.ApprovalUntrusted, protocol.SandboxWorkspaceWrite, kernelSandbox, nil, false, "ask"},
		{"npm install", false, protocol.ApprovalUntrusted, protocol.SandboxWorkspaceWrite, kernelSandbox, []string{"npm install"}, false, "runSandboxed"},
		// on-request: sandboxed without asking where the kernel can.
		{"npm install", false, protocol.ApprovalOnRequest, protocol.SandboxWorkspaceWrite, kernelSandbox, nil, false, "runSandboxed"},
		{"npm install", false, protocol.ApprovalOnRequest, protocol.SandboxWorkspaceWrite, noSandbox, nil, false, "ask"},
		{"make", false, protocol.ApprovalOnRequest, protocol.SandboxWorkspaceWrite, noSandbox, nil, false, "run"},
		{"npm install", false, protocol.ApprovalOnRequest, protocol.SandboxDangerFullAccess, nil, nil, false, "run"},
		{"curl x", false, protocol.ApprovalOnRequest, protocol.SandboxDangerFullAccess, nil, nil, false, "ask"},
		// A forbidden or privileged command is asked about, approved or not.
		{"curl x", false, protocol.ApprovalOnRequest, protocol.SandboxWorkspaceWrite, kernelSandbox, []string{"curl x"}, false, "ask"},
		{"sudo make", false, protocol.ApprovalOnRequest, protocol.SandboxWorkspaceWrite, kernelSandbox, []string{"sudo make"}, false, "ask"},
		// An escalation: asked unless accepted for the session as one.
		{"make", true, protocol.ApprovalOnRequest, protocol.SandboxWorkspaceWrite, kernelSandbox, []string{"make"}, false, "ask"},
		{"make", true, protocol.ApprovalOnRequest, protocol.SandboxWorkspaceWrite, kernelSandbox, []string{ApprovalKey("make", true)}, false, "run"},
		// Opaque outside the sandbox: asked unless accepted.
		{`eval "$cmd"`, false, protocol.ApprovalOnRequest, protocol.SandboxDangerFullAccess, nil, nil, false, "ask"},
		{`eval "$cmd"`, false, protocol.ApprovalOnRequest, protocol.SandboxDangerFullAccess, nil, []string{`eval "$cmd"`}, false, "run"},
		// A read-only turn: no escalation, and without a kernel sandbox only
		// what the rules allow.
		{"make", true, protocol.ApprovalOnRequest, protocol.SandboxDangerFullAccess, kernelSandbox, nil, true, "refuse"},
		{"npm install", false, protocol.ApprovalOnRequest, protocol.SandboxDangerFullAccess, noSandbox, nil, true, "refuse"},
		{"make", false, protocol.ApprovalOnRequest, protocol.SandboxDangerFullAccess, noSandbox, nil, true, "run"},
		{"npm install", false, protocol.ApprovalOnRequest, protocol.SandboxDangerFullAccess, kernelSandbox, nil, true, "runSandboxed"},
	}
	for _, tc := range tests {
		j, _ := testJudge(t, userRules, tc.approval, tc.mode, tc.probe)
		j.ReadOnly = tc.readOnly
		for _, k := range tc.approved {
			j.Approved[k] = true
		}
		p := j.PlanCommand(tc.cmd, tc.escalated)
		if got := p.Effective(); got != tc.want {
			t.Errorf("PlanCommand(%q, escalated %v) under %s/%s, approved %q, read-only %v = %s (%s; %s), want %s",
				tc.cmd, tc.escalated, tc.approval, tc.mode, tc.approved, tc.readOnly, got, p.Reason(), p.Refuse, tc.want)
		}
		if p.Escalated != tc.escalated {
			t.Errorf("PlanCommand(%q, %v).Escalated = %v", tc.cmd, tc.escalated, p.Escalated)
		}
		if tc.readOnly && p.Sandbox != nil && p.Sandbox.Mode != sandbox.Mode(protocol.SandboxReadOnly) {
			t.Errorf("PlanCommand(%q) in a read-only turn runs in a %s sandbox", tc.cmd, p.Sandbox.Mode)
		}
	}
}

// TestPlanCommandWorkspaceRules: an untrusted workspace's rules file may
// only make commands stricter; the cache reloads it when it changes.
func TestPlanCommandWorkspaceRules(t *testing.T) {
	j, warns := testJudge(t, "", protocol.ApprovalUntrusted, protocol.SandboxWorkspaceWrite, kernelSandbox)
	ws := filepath.Join(j.Settings.Cwd, WorkspaceRulesFile)
	if err := os.MkdirAll(filepath.Dir(ws), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ws, []byte("allow npm install\nforbidden go test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p := j.PlanCommand("npm install", false); p.Effective() != "ask" {
		t.Errorf("an untrusted workspace's allow rule: plan %s, want ask", p.Effective())
	}
	if p := j.PlanCommand("go test ./...", false); !p.Forbidden() || p.RuleName() != "forbidden go test ("+ws+":2)" {
		t.Errorf("a workspace's forbidden rule: forbidden %v, rule %q", p.Forbidden(), p.RuleName())
	}
	if len(*warns) != 1 || !strings.Contains((*warns)[0], "allow rules ignored") {
		t.Errorf("warnings %q, want one naming the ignored allow rules (the second plan reads the cache)", *warns)
	}
	if err := os.WriteFile(ws, []byte("forbidden go test\nbad line here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A later mtime, whatever the file system's resolution.
	fi, err := os.Stat(ws)
	if err != nil {
		t.Fatal(err)
	}
	later := fi.ModTime().Add(2e9)
	if err := os.Chtimes(ws, later, later); err != nil {
		t.Fatal(err)
	}
	if p := j.PlanCommand("go test ./...", false); p.Forbidden() || p.Effective() != "runSandboxed" {
		t.Errorf("after the workspace file broke: forbidden %v, plan %s; want the built-in allow", p.Forbidden(), p.Effective())
	}
	if n := len(*warns); n != 2 || !strings.Contains((*warns)[1], "command rules not loaded") {
		t.Errorf("warnings %q, want a second one naming the file that failed", *warns)
	}
}

// TestPlanCommandTrusted: a trusted project's workspace allow rules apply.
func TestPlanCommandTrusted(t *testing.T) {
	j, warns := testJudge(t, "", protocol.ApprovalUntrusted, protocol.SandboxWorkspaceWrite, kernelSandbox)
	real, err := filepath.EvalSymlinks(j.Settings.Cwd)
	if err != nil {
		t.Fatal(err)
	}
	j.Config.Projects = map[string]string{real: config.TrustTrusted}
	ws := filepath.Join(j.Settings.Cwd, WorkspaceRulesFile)
	if err := os.MkdirAll(filepath.Dir(ws), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ws, []byte("allow npm install\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p := j.PlanCommand("npm install", false); p.Effective() != "runSandboxed" || len(*warns) != 0 {
		t.Errorf("a trusted workspace's allow rule: plan %s, warnings %q; want runSandboxed, none", p.Effective(), *warns)
	}
}

func TestSandboxPolicyWarnsOnce(t *testing.T) {
	j, warns := testJudge(t, "", protocol.ApprovalOnRequest, protocol.SandboxWorkspaceWrite, noSandbox)
	j.Config.SandboxWritableRoots = []string{"/extra"}
	for range 2 {
		if p, err := j.SandboxPolicy(false); p != nil || err == nil {
			t.Fatalf("SandboxPolicy without a kernel sandbox = %v, %v; want an error", p, err)
		}
	}
	if len(*warns) != 1 || !*j.SandboxWarned {
		t.Errorf("warnings %q, want exactly one", *warns)
	}
	j.Probe = kernelSandbox
	p, err := j.SandboxPolicy(false)
	if err != nil || p == nil || !slices.Equal(p.WritableRoots, []string{j.Settings.Cwd, "/extra"}) || !p.AllowTmp {
		t.Errorf("SandboxPolicy = %+v, %v; want the cwd and the extra root writable", p, err)
	}
	if p, err := j.SandboxPolicy(true); p != nil || err != nil {
		t.Errorf("SandboxPolicy(escalated) = %v, %v; want none", p, err)
	}
}

func TestFileChangePlan(t *testing.T) {
	tests := []struct {
		approval protocol.ApprovalPolicy
		mode     protocol.SandboxMode
		inside   bool
		approved bool
		want     string
	}{
		{protocol.ApprovalNever, protocol.SandboxReadOnly, true, false, FileRefuse},
		{protocol.ApprovalNever, protocol.SandboxReadOnly, true, true, FileWrite},
		{protocol.ApprovalNever, protocol.SandboxWorkspaceWrite, false, false, FileWrite},
		{protocol.ApprovalUntrusted, protocol.SandboxDangerFullAccess, true, false, FileAsk},
		{protocol.ApprovalOnRequest, protocol.SandboxDangerFullAccess, false, false, FileWrite},
		{protocol.ApprovalOnRequest, protocol.SandboxReadOnly, true, false, FileAsk},
		{protocol.ApprovalOnRequest, protocol.SandboxWorkspaceWrite, false, false, FileAsk},
		{protocol.ApprovalOnRequest, protocol.SandboxWorkspaceWrite, true, false, FileWrite},
		{protocol.ApprovalUntrusted, protocol.SandboxWorkspaceWrite, true, true, FileWrite},
	}
	for _, tc := range tests {
		j, _ := testJudge(t, "", tc.approval, tc.mode, kernelSandbox)
		if tc.approved {
			j.ApprovedPaths["a.go"], j.ApprovedPaths["b/c.go"] = true, true
		}
		if got := j.FileChangePlan([]string{"a.go", "b/c.go"}, tc.inside); got != tc.want {
			t.Errorf("FileChangePlan(%s, %s, inside %v, approved %v) = %s, want %s", tc.approval, tc.mode, tc.inside, tc.approved, got, tc.want)
		}
	}
	j, _ := testJudge(t, "", protocol.ApprovalUntrusted, protocol.SandboxWorkspaceWrite, kernelSandbox)
	j.ApprovedPaths["a.go"] = true
	if got := j.FileChangePlan([]string{"a.go", "b.go"}, true); got != FileAsk {
		t.Errorf("FileChangePlan with one path of two approved = %s, want ask", got)
	}
}

func TestPathKey(t *testing.T) {
	tests := []struct{ cwd, p, want string }{
		{"/ws", "/ws/a/b.go", "a/b.go"},
		{"/ws", "a/./b.go", "a/b.go"},
		{"/ws", "a/../b.go", "b.go"},
		{"/ws", "/other/x", "../other/x"},
	}
	for _, tc := range tests {
		if got := PathKey(tc.cwd, tc.p); got != tc.want {
			t.Errorf("PathKey(%q, %q) = %q, want %q", tc.cwd, tc.p, got, tc.want)
		}
	}
}

func TestPlanNames(t *testing.T) {
	r := &rules.Rule{Decision: rules.Prompt, Prefix: []string{"git", "push"}, Source: "rules", Line: 3}
	tests := []struct {
		p                            Plan
		effective, rule, decision    string
		sandboxed, sessionApprovable bool
	}{
		{Plan{Refuse: "no", Ask: true}, "refuse", "default", "allow", false, true},
		{Plan{Ask: true, Verdict: rules.Verdict{Decision: rules.Prompt, Rule: r}}, "ask", "prompt git push (rules:3)", "prompt", false, true},
		{Plan{Sandbox: &sandbox.Policy{}, Verdict: rules.Verdict{Opaque: "eval"}}, "runSandboxed", "default", "allow", true, false},
		{Plan{Verdict: rules.Verdict{Decision: rules.Forbidden}}, "run", "default", "forbidden", false, false},
		{Plan{Verdict: rules.Verdict{Privileged: "sudo"}}, "run", "default", "allow", false, false},
	}
	for _, tc := range tests {
		p := tc.p
		if p.Effective() != tc.effective || p.RuleName() != tc.rule || p.RuleDecision() != tc.decision ||
			p.Sandboxed() != tc.sandboxed || p.SessionApprovable() != tc.sessionApprovable {
			t.Errorf("%+v: effective %s, rule %q, decision %s, sandboxed %v, session-approvable %v; want %s, %q, %s, %v, %v",
				p, p.Effective(), p.RuleName(), p.RuleDecision(), p.Sandboxed(), p.SessionApprovable(),
				tc.effective, tc.rule, tc.decision, tc.sandboxed, tc.sessionApprovable)
		}
		var req tools.ExecRequest
		p.Confine(&req)
		if req.Sandbox != p.Sandbox {
			t.Errorf("Confine set sandbox %v, want %v", req.Sandbox, p.Sandbox)
		}
	}
}
