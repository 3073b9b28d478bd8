package commandpolicy

import (
	"slices"
	"testing"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tools/rules"
)

func TestProposedPrefix(t *testing.T) {
	tests := []struct {
		cmd  string
		want []string
	}{
		{"go test ./...", []string{"go", "test"}},
		{"make", []string{"make"}},
		{"git  status", []string{"git", "status"}},
		{"make && make install", nil},
		{"ls | wc -l", nil},
		{"echo $(id)", nil},
		{"cat a > b", nil},
		{"a; b", nil},
		{"echo `id`", nil},
		{"make\nrm x", nil},
	}
	for _, tc := range tests {
		if got := ProposedPrefix(tc.cmd); !slices.Equal(got, tc.want) {
			t.Errorf("ProposedPrefix(%q) = %q, want %q", tc.cmd, got, tc.want)
		}
	}
}

func TestCommandActions(t *testing.T) {
	str := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	got := CommandActions("cat a.go")
	if len(got) != 1 || got[0].Type != "read" || str(got[0].Path) != "a.go" || got[0].Query != nil {
		t.Errorf("CommandActions(cat a.go) = %+v, want one read of a.go", got)
	}
	got = CommandActions("ls")
	if len(got) != 1 || got[0].Type != "listFiles" || got[0].Path != nil {
		t.Errorf("CommandActions(ls) = %+v, want one listFiles without a path", got)
	}
	got = CommandActions("grep -n foo src")
	if len(got) != 1 || got[0].Type != "search" || str(got[0].Query) != "foo" || str(got[0].Path) != "src" {
		t.Errorf("CommandActions(grep -n foo src) = %+v, want a search for foo in src", got)
	}
	got = CommandActions("make build")
	if len(got) != 1 || got[0].Type != "unknown" || got[0].Command != "make build" || got[0].Path != nil {
		t.Errorf("CommandActions(make build) = %+v, want one unknown action", got)
	}
}

func TestPlanRequest(t *testing.T) {
	all := []protocol.Decision{protocol.DecisionAccept, protocol.DecisionAcceptForSession, protocol.DecisionCancel}
	once := []protocol.Decision{protocol.DecisionAccept, protocol.DecisionCancel}
	tests := []struct {
		name      string
		plan      Plan
		cmd       string
		agent     string
		reason    string // "" none
		amendment []string
		decisions []protocol.Decision
	}{
		{"plain", Plan{Ask: true}, "npm install", "", "", []string{"npm", "install"}, all},
		{"plain, the agent's reason", Plan{Ask: true}, "npm install x", "needs deps", "needs deps", []string{"npm", "install"}, all},
		{"forbidden", Plan{Ask: true, Verdict: rules.Verdict{Decision: rules.Forbidden, Reason: "pushing publishes work"}}, "git push", "ship it",
			"pushing publishes work. The agent says: ship it", nil, once},
		{"privileged", Plan{Ask: true, Verdict: rules.Verdict{Privileged: "sudo runs as root"}}, "sudo make", "",
			"This command runs something as another user: sudo runs as root", nil, once},
		{"opaque", Plan{Ask: true, Verdict: rules.Verdict{Opaque: "eval of a variable"}}, `eval "$x"`, "",
			"The rules cannot read this command fully: eval of a variable", nil, once},
	}
	for _, tc := range tests {
		params := protocol.CommandApprovalParams{ThreadID: "t", ItemID: "i"}
		tc.plan.Request(&params, tc.cmd, tc.agent)
		reason := ""
		if params.Reason != nil {
			reason = *params.Reason
		}
		if reason != tc.reason || !slices.Equal(params.ProposedExecpolicyAmendment, tc.amendment) ||
			!slices.Equal(params.AvailableDecisions, tc.decisions) || params.ThreadID != "t" || params.ItemID != "i" {
			t.Errorf("%s: Request = reason %q, amendment %q, decisions %v; want %q, %q, %v",
				tc.name, reason, params.ProposedExecpolicyAmendment, params.AvailableDecisions, tc.reason, tc.amendment, tc.decisions)
		}
	}
}
