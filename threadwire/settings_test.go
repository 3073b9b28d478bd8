package threadwire

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

func sp(s string) *string { return &s }

func invalid(err error, kind error) bool {
	var pe *protocol.Error
	return errors.As(err, &pe) && pe.Kind == kind
}

func TestSettingsFromStore(t *testing.T) {
	def := Settings{Cwd: "/def", Model: "m0", Provider: "p0", ApprovalPolicy: protocol.ApprovalOnRequest, Sandbox: protocol.SandboxWorkspaceWrite}
	raw, _ := json.Marshal(Settings{Cwd: "/json", Model: "mj", Effort: "high", Mode: "plan"})
	got := SettingsFromStore(store.Thread{Settings: raw, Cwd: "/row", ModelProvider: "prow", Sandbox: "read-only"}, def)
	want := Settings{Cwd: "/row", Model: "mj", Provider: "prow", Sandbox: protocol.SandboxReadOnly, Effort: "high", Mode: "plan"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SettingsFromStore = %+v, want %+v", got, want)
	}
	if got := SettingsFromStore(store.Thread{}, def); got != def {
		t.Errorf("SettingsFromStore of an empty row = %+v, want the defaults", got)
	}
}

func TestResolveSettings(t *testing.T) {
	base := Settings{Cwd: "/a", Model: "m", ApprovalPolicy: protocol.ApprovalOnRequest, Sandbox: protocol.SandboxWorkspaceWrite}
	never, ro := protocol.ApprovalNever, protocol.SandboxReadOnly
	got, err := ResolveSettings(base, protocol.ThreadSettings{Cwd: sp("/b/../c"), Model: sp("m2"), ModelProvider: sp("p"), ServiceTier: sp(""),
		ApprovalPolicy: &protocol.AskForApproval{Mode: never}, Sandbox: &ro, BaseInstructions: sp("base"), DeveloperInstructions: sp("dev")})
	want := Settings{Cwd: "/c", Model: "m2", Provider: "p", ApprovalPolicy: never, Sandbox: ro, BaseInstructions: "base", DeveloperInstructions: "dev"}
	if err != nil || got != want {
		t.Errorf("ResolveSettings = %+v, %v; want %+v", got, err, want)
	}
	if got, err := ResolveSettings(base, protocol.ThreadSettings{Cwd: sp(""), Model: sp("")}); err != nil || got != base {
		t.Errorf("empty overrides: %+v, %v; want the base", got, err)
	}
	if _, err := ResolveSettings(base, protocol.ThreadSettings{Cwd: sp("rel")}); !invalid(err, protocol.ErrInvalidParams) {
		t.Errorf("relative cwd: %v, want invalid params", err)
	}
	if _, err := ResolveSettings(base, protocol.ThreadSettings{ApprovalPolicy: &protocol.AskForApproval{Granular: json.RawMessage(`{}`)}}); !invalid(err, protocol.ErrInvalidRequest) {
		t.Errorf("granular approvals: %v, want invalid request", err)
	}
}

func TestApplyTurn(t *testing.T) {
	base := Settings{Cwd: "/a", Model: "m", ApprovalPolicy: protocol.ApprovalOnRequest, Sandbox: protocol.SandboxWorkspaceWrite}
	s := base
	if changed, err := s.ApplyTurn(protocol.TurnStartParams{Cwd: sp("/a"), Model: sp("")}); changed || err != nil || s != base {
		t.Errorf("same and empty overrides: changed %v, %v, %+v", changed, err, s)
	}
	changed, err := s.ApplyTurn(protocol.TurnStartParams{Model: sp("m2"), Effort: sp("low"), Summary: sp("auto"), ServiceTier: sp("fast"),
		ApprovalPolicy: &protocol.AskForApproval{Mode: protocol.ApprovalNever}, SandboxPolicy: &protocol.SandboxPolicy{Type: "readOnly"}})
	want := Settings{Cwd: "/a", Model: "m2", Effort: "low", Summary: "auto", ServiceTier: "fast", ApprovalPolicy: protocol.ApprovalNever, Sandbox: protocol.SandboxReadOnly}
	if !changed || err != nil || s != want {
		t.Errorf("overrides: changed %v, %v, %+v; want %+v", changed, err, s, want)
	}
	s = base
	if _, err := s.ApplyTurn(protocol.TurnStartParams{Cwd: sp("rel"), Model: sp("x")}); !invalid(err, protocol.ErrInvalidParams) || s != base {
		t.Errorf("relative cwd: %v, settings %+v; want invalid params and nothing applied", err, s)
	}
	if _, err := s.ApplyTurn(protocol.TurnStartParams{ApprovalPolicy: &protocol.AskForApproval{Granular: json.RawMessage(`{}`)}}); !invalid(err, protocol.ErrInvalidRequest) {
		t.Errorf("granular approvals: %v, want invalid request", err)
	}
}

func TestUpdated(t *testing.T) {
	base := Settings{Cwd: "/a", Model: "m", Mode: "plan", ApprovalPolicy: protocol.ApprovalOnRequest, Sandbox: protocol.SandboxWorkspaceWrite}
	got, err := base.Updated(protocol.ThreadSettingsUpdateParams{Model: sp("m2"), Summary: sp("ignored"), CollaborationMode: &protocol.CollaborationMode{Mode: protocol.ModeDefault},
		SandboxPolicy: &protocol.SandboxPolicy{Type: "dangerFullAccess"}, ApprovalPolicy: &protocol.AskForApproval{}})
	want := Settings{Cwd: "/a", Model: "m2", ApprovalPolicy: protocol.ApprovalOnRequest, Sandbox: protocol.SandboxDangerFullAccess}
	if err != nil || got != want {
		t.Errorf("Updated = %+v, %v; want %+v", got, err, want)
	}
	if _, err := base.Updated(protocol.ThreadSettingsUpdateParams{ApprovalPolicy: &protocol.AskForApproval{Granular: json.RawMessage(`{}`)}}); !invalid(err, protocol.ErrInvalidRequest) {
		t.Errorf("granular approvals: %v, want invalid request", err)
	}
}

func TestNoOverrides(t *testing.T) {
	ro := protocol.SandboxReadOnly
	if !NoOverrides(protocol.ThreadSettings{}) || !NoOverrides(protocol.ThreadSettings{Config: map[string]any{}}) {
		t.Error("NoOverrides of empty settings = false")
	}
	for _, o := range []protocol.ThreadSettings{{Cwd: sp("/a")}, {Model: sp("")}, {Sandbox: &ro}, {Config: map[string]any{"k": 1}},
		{ApprovalPolicy: &protocol.AskForApproval{}}, {Personality: sp("p")}, {ApprovalsReviewer: sp("r")}} {
		if NoOverrides(o) {
			t.Errorf("NoOverrides(%+v) = true", o)
		}
	}
}
