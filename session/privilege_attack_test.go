package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
)

// escalationBed adds to an attack bed fake escalation programs that record
// that they ran, then run their command: where sudo needs no password, the
// real one does as much, as root.
func escalationBed(t *testing.T) (*attackBed, func() string) {
	t.Helper()
	b := newAttackBed(t)
	bin := t.TempDir()
	marker := filepath.Join(b.markers, "escalated")
	for _, name := range []string{"sudo", "sudoedit", "su", "doas", "pkexec", "run0", "ksu", "runuser", "gosu", "su-exec",
		"systemd-run", "machinectl", "newgrp", "sg", "please"} {
		script := "#!/bin/sh\necho " + name + " \"$@\" >> " + marker + "\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	ran := func() string {
		data, err := os.ReadFile(marker)
		if err != nil {
			return ""
		}
		_ = os.Remove(marker)
		return strings.TrimSpace(string(data))
	}
	return b, ran
}

// privilegedCorpus is every escalation program, alone and with a command,
// and the ways to reach one: env, wrappers, shells, find, xargs, eval.
var privilegedCorpus = []string{
	`sudo -s`,
	`sudo -i`,
	`sudo bash -c 'id'`,
	`sudo -u nobody id`,
	`sudo -E -H id`,
	`sudo id`,
	`sudoedit /etc/hosts`,
	`env sudo -s`,
	`env -i PATH="$PATH" sudo id`,
	`bash -c 'sudo -s'`,
	`sh -c "sudo id"`,
	`timeout 5 sudo id`,
	`nice sudo id`,
	`command sudo id`,
	`exec sudo -s`,
	`echo secret | sudo -S id`,
	`echo id | xargs sudo`,
	`find . -maxdepth 0 -exec sudo id \;`,
	`eval "sudo -s"`,
	`go version && sudo id`,
	`su`,
	`su -`,
	`su root -c id`,
	`doas -s`,
	`doas id`,
	`pkexec id`,
	`run0`,
	`run0 id`,
	`ksu`,
	`runuser -u root id`,
	`gosu root id`,
	`su-exec root id`,
	`systemd-run --uid=0 id`,
	`machinectl shell root@`,
	`newgrp root`,
	`sg root -c id`,
	`please id`,
	`f() { sudo "$@"; }; f id`,
}

// TestPrivilegeAlwaysNeedsAHuman: a command that runs something as another
// user never runs without a human, in any approval policy, sandbox mode
// and full-auto strategy, not even sandboxed, not when the user accepted
// the same command for the session, and not when the user's rules allow
// it; under approval never it is refused, as forbidden is. Runs outside
// the sandbox are executed for real against fake escalation programs that
// leave a marker.
func TestPrivilegeAlwaysNeedsAHuman(t *testing.T) {
	b, ran := escalationBed(t)
	userRules := filepath.Join(t.TempDir(), "rules")
	if err := os.WriteFile(userRules, []byte("allow sudo\nallow su\nallow doas\nallow pkexec\nallow run0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := attackManager(t)
	m.opts.Config.RulesFile = userRules
	runs := 0
	for _, cmd := range privilegedCorpus {
		for _, approval := range attackApprovals {
			for _, sb := range attackSandboxes {
				for _, strategy := range attackStrategies {
					approved := map[string]bool{approvalKey(cmd, false): true, approvalKey(cmd, true): true}
					th := testThread(m, "t", threadSettings{Cwd: b.ws, ApprovalPolicy: approval, Sandbox: sb}, approved, nil)
					for _, escalated := range []bool{false, true} {
						got, harm := attempt(t, th, b, cmd, escalated, strategy)
						runs++
						if r := ran(); r != "" {
							harm += "; escalation program ran: " + r
						}
						if got == ranSandboxed || got == ranUnconfined || harm != "" {
							t.Errorf("%q (escalated %v) under approval %s, sandbox %s, full auto %q: %v without a human (%s)", cmd, escalated, approval, sb, strategy, got, harm)
						}
						if approval == protocol.ApprovalNever && got != refused {
							t.Errorf("%q under approval never, sandbox %s: %v, want refused", cmd, sb, got)
						}
					}
				}
			}
		}
		// The request a human sees names the reason and offers no
		// approval for the session.
		th := testThread(m, "t", threadSettings{Cwd: b.ws, ApprovalPolicy: protocol.ApprovalOnRequest, Sandbox: protocol.SandboxWorkspaceWrite}, map[string]bool{}, nil)
		run := &commandRun{command: cmd, dir: b.ws, plan: th.planCommand(cmd, false), item: protocol.CommandExecutionItem{ID: "item", Command: cmd}}
		req := th.commandRequest("turn", run, "")
		p := req.Params.(protocol.CommandApprovalParams)
		for _, d := range p.AvailableDecisions {
			if d == protocol.DecisionAcceptForSession {
				t.Errorf("%q: the approval request offers %s", cmd, d)
			}
		}
		if p.Reason == nil || !strings.Contains(*p.Reason, "another user") || req.Privileged == "" {
			t.Errorf("%q: the approval request does not say it runs as another user: %v", cmd, p.Reason)
		}
		// policy/explain says so too.
		if res := th.judge().judgment(protocol.PolicyExplainParams{Command: &cmd}).Command; res.Privileged == "" || res.Effective != "ask" {
			t.Errorf("%q: policy/explain = %s, privileged %q", cmd, res.Effective, res.Privileged)
		}
	}
	t.Logf("%d attempts", runs)
}

// TestGitAliasNeedsAHumanOutsideTheSandbox: a git alias set in any way git
// reads configuration, or a git subcommand the rules cannot see, never runs
// outside the sandbox without a human (the fake git records every run);
// writing alias.* is itself opaque.
func TestGitAliasNeedsAHumanOutsideTheSandbox(t *testing.T) {
	b := newAttackBed(t)
	m := attackManager(t)
	corpus := []string{
		`git config alias.p push && git p origin main`,
		`git config --global alias.p push; git p origin main`,
		`git config --local --add alias.p push`,
		`git config set alias.p push`,
		`git config -f .git/config alias.p '!git push'`,
		`git config include.path ../evil.cfg`,
		`git config includeIf.onbranch:main.path ../evil.cfg`,
		`git config core.hooksPath hooks`,
		`git p origin main`,
		`git -C . p origin main`,
		`git -c alias.p=push p origin main`,
		`git -c include.path=../evil.cfg p`,
		`GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.p GIT_CONFIG_VALUE_0=push git p origin main`,
		`env GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.p GIT_CONFIG_VALUE_0=push git p origin main`,
		`export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.p GIT_CONFIG_VALUE_0=push; git p origin main`,
		`GIT_CONFIG_PARAMETERS="'alias.p=push'" git p origin main`,
		`GIT_CONFIG_GLOBAL=../evil.cfg git p origin main`,
		`bash -c 'git p origin main'`,
		`echo origin | xargs git p`,
		`git submodule foreach 'git push'`,
		`git rebase --exec 'git push' HEAD~1`,
		`git bisect run sh -c 'git push'`,
		`git fetch --upload-pack='git push' origin`,
	}
	for _, cmd := range corpus {
		for _, approval := range attackApprovals {
			for _, sb := range attackSandboxes {
				for _, strategy := range attackStrategies {
					th := testThread(m, "t", threadSettings{Cwd: b.ws, ApprovalPolicy: approval, Sandbox: sb}, map[string]bool{}, nil)
					got, harm := attempt(t, th, b, cmd, false, strategy)
					if got == ranUnconfined || harm != "" {
						t.Errorf("%q under approval %s, sandbox %s, full auto %q: %v without a human (%s)", cmd, approval, sb, strategy, got, harm)
					}
				}
			}
		}
	}
}
