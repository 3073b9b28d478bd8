package instructions

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
)

// TestSystemOrder: the base prompt (or the thread's own), the workspace,
// AGENTS.md (cut to MaxAgentsBytes), the extra and the developer
// instructions come in that order; a workspace without AGENTS.md has no
// such section and no instruction sources.
func TestSystemOrder(t *testing.T) {
	cwd := t.TempDir()
	if got := System(cwd, "", "", ""); !strings.HasPrefix(got, Base) || strings.Contains(got, "AGENTS.md") {
		t.Errorf("without AGENTS.md: %q", got)
	}
	if got := Sources(cwd); len(got) != 0 || got == nil {
		t.Errorf("Sources without AGENTS.md = %#v, want an empty list", got)
	}
	agents := "RULE-A\n" + strings.Repeat("x", MaxAgentsBytes)
	if err := os.WriteFile(filepath.Join(cwd, "AGENTS.md"), []byte(agents), 0o644); err != nil {
		t.Fatal(err)
	}
	got := System(cwd, "BASE", "EXTRA", "DEV")
	order := []string{"BASE", "Workspace: " + cwd, "# Instructions from AGENTS.md", "RULE-A", "EXTRA", "DEV"}
	at := 0
	for _, w := range order {
		i := strings.Index(got[at:], w)
		if i < 0 {
			t.Fatalf("%q missing or out of order in the instructions", w)
		}
		at += i + len(w)
	}
	if strings.Contains(got, Base) || len(got) > MaxAgentsBytes+200 {
		t.Errorf("the thread's base replaces the default and AGENTS.md is capped: %d bytes", len(got))
	}
	if s := Sources(cwd); len(s) != 1 || s[0] != filepath.Join(cwd, "AGENTS.md") {
		t.Errorf("Sources = %v", s)
	}
	if SandboxNote(protocol.SandboxDangerFullAccess) != "" || SandboxNote(protocol.SandboxWorkspaceWrite) == "" {
		t.Error("the sandbox note is for sandboxed commands only")
	}
}

// TestProposedPlan: the last <proposed_plan> block is the plan, an
// unclosed one runs to the end, and an empty one is no plan.
func TestProposedPlan(t *testing.T) {
	for in, want := range map[string]string{
		"<proposed_plan>1. old</proposed_plan> then <proposed_plan>\n1. new\n</proposed_plan>": "1. new",
		"text <proposed_plan> 1. open":      "1. open",
		"<proposed_plan>  </proposed_plan>": "",
		"no plan here":                      "",
	} {
		got, ok := ProposedPlan(in)
		if got != want || ok != (want != "") {
			t.Errorf("ProposedPlan(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}
