package instructions

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tools/files"
)

// TestSystemOrder: the base prompt (or the thread's own), the workspace,
// AGENTS.md (cut to MaxAgentsBytes), the extra and the developer
// instructions come in that order; a workspace without AGENTS.md has no
// such section and no instruction sources.
func TestSystemOrder(t *testing.T) {
	cwd := t.TempDir()
	none := ReadAgents(nil, cwd)
	if got := System(cwd, "", none.Text, "", ""); !strings.HasPrefix(got, Base) || strings.Contains(got, "AGENTS.md") {
		t.Errorf("without AGENTS.md: %q", got)
	}
	if got := Sources(none); len(got) != 0 || got == nil || none.Skipped != "" {
		t.Errorf("Sources without AGENTS.md = %#v (skipped %q), want an empty list", got, none.Skipped)
	}
	agents := "RULE-A\n" + strings.Repeat("x", MaxAgentsBytes)
	if err := os.WriteFile(filepath.Join(cwd, "AGENTS.md"), []byte(agents), 0o644); err != nil {
		t.Fatal(err)
	}
	a := ReadAgents(nil, cwd)
	got := System(cwd, "BASE", a.Text, "EXTRA", "DEV")
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
	if s := Sources(a); len(s) != 1 || s[0] != filepath.Join(cwd, "AGENTS.md") {
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

// TestAgentsLinkOutOfTheWorkspace: an AGENTS.md that is a symbolic link
// out of the workspace (a command could make one, a cloned repository
// could ship one) is not read into the prompt, is no instruction source,
// and says why (for the user); one that links to a file inside the
// workspace is read, and so is one that links into a configured readable
// root, which read_file could read too (a shared instructions file).
func TestAgentsLinkOutOfTheWorkspace(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "id_rsa")
	if err := os.WriteFile(outside, []byte("PRIVATE-KEY-CANARY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The workspaces sit beside the key's directory: an absolute link and
	// a relative one out of them.
	for name, target := range map[string]string{"abs": outside, "rel": "../" + filepath.Base(filepath.Dir(outside)) + "/id_rsa"} {
		cwd := filepath.Join(filepath.Dir(filepath.Dir(outside)), "ws-"+name)
		if err := os.MkdirAll(cwd, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(cwd, "AGENTS.md")); err != nil {
			t.Fatal(err)
		}
		if _, err := os.ReadFile(filepath.Join(cwd, "AGENTS.md")); err != nil {
			t.Fatalf("the link %s does not lead to the file: %v", target, err)
		}
		// A readable root that is not where the link goes changes nothing.
		ws, err := files.NewWorkspace(cwd, nil, []string{t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []*files.Workspace{nil, ws} {
			a := ReadAgents(w, cwd)
			if got := System(cwd, "", a.Text, "", ""); strings.Contains(got, "PRIVATE-KEY-CANARY") || strings.Contains(got, "# Instructions from AGENTS.md") {
				t.Errorf("AGENTS.md -> %s: read into the prompt:\n%s", target, got)
			}
			if got := Sources(a); len(got) != 0 {
				t.Errorf("AGENTS.md -> %s: Sources = %v, want none", target, got)
			}
			if !strings.Contains(a.Skipped, "outside the workspace") || !strings.Contains(a.Skipped, "readable_roots") {
				t.Errorf("AGENTS.md -> %s: Skipped = %q, want why and what to do", target, a.Skipped)
			}
		}
		// Once the key's directory is a readable root, read_file could read
		// it, and so AGENTS.md is followed there.
		ws, err = files.NewWorkspace(cwd, nil, []string{filepath.Dir(outside)})
		if err != nil {
			t.Fatal(err)
		}
		if a := ReadAgents(ws, cwd); a.Text != "PRIVATE-KEY-CANARY" || len(Sources(a)) != 1 || a.Skipped != "" {
			t.Errorf("AGENTS.md -> %s in a readable root: %+v, want it read", target, a)
		}
	}
	cwd := t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "rules.md"), []byte("RULE-INSIDE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("rules.md", filepath.Join(cwd, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	a := ReadAgents(nil, cwd)
	if got := System(cwd, "", a.Text, "", ""); !strings.Contains(got, "RULE-INSIDE") {
		t.Errorf("AGENTS.md -> rules.md inside the workspace was not read:\n%s", got)
	}
	if got := Sources(a); len(got) != 1 {
		t.Errorf("Sources with a link inside = %v, want AGENTS.md", got)
	}
	// Something that is not a file is not read, and the user is told.
	fifo := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(fifo, "AGENTS.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	if a := ReadAgents(nil, fifo); a.Text != "" || len(a.Paths) != 0 || a.Skipped == "" {
		t.Errorf("AGENTS.md as a named pipe: %+v, want skipped with a reason", a)
	}
}

// TestAgentsFromTheRepositoryRoot: as in Codex, the AGENTS.md files from
// the repository's root down to the workspace all apply, the root's first;
// in each directory AGENTS.override.md wins over AGENTS.md; empty files
// add nothing; outside a repository only the workspace's own counts. A
// directory above the workspace gives its own plain file, but a link
// there is followed only where read_file could go.
func TestAgentsFromTheRepositoryRoot(t *testing.T) {
	repo := t.TempDir()
	cwd := filepath.Join(repo, "svc", "api")
	outside := filepath.Join(t.TempDir(), "id_rsa")
	for p, text := range map[string]string{
		".git/HEAD":                "ref: refs/heads/main\n",
		"AGENTS.md":                "ROOT-RULE\n",
		"svc/AGENTS.md":            "SVC-SHARED\n",
		"svc/AGENTS.override.md":   "SVC-OVERRIDE\n",
		"svc/api/AGENTS.md":        "API-RULE\n",
		"svc/api/deeper/AGENTS.md": "BELOW-THE-WORKSPACE\n",
		"svc/other/AGENTS.md":      "SIBLING\n",
	} {
		full := filepath.Join(repo, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(outside, []byte("PRIVATE-KEY-CANARY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := ReadAgents(nil, cwd)
	if want := "ROOT-RULE\n\nSVC-OVERRIDE\n\nAPI-RULE"; a.Text != want {
		t.Errorf("Text = %q, want %q", a.Text, want)
	}
	want := []string{filepath.Join(repo, "AGENTS.md"), filepath.Join(repo, "svc", "AGENTS.override.md"), filepath.Join(cwd, "AGENTS.md")}
	if got := Sources(a); !slices.Equal(got, want) || a.Skipped != "" {
		t.Errorf("Sources = %q (skipped %q), want %q", got, a.Skipped, want)
	}
	if got := System(cwd, "", a.Text, "", ""); !strings.Contains(got, "ROOT-RULE") || strings.Contains(got, "SIBLING") || strings.Contains(got, "BELOW") {
		t.Errorf("System:\n%s", got)
	}

	// An empty override hides the directory's AGENTS.md and adds nothing.
	if err := os.WriteFile(filepath.Join(repo, "svc", "AGENTS.override.md"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if a := ReadAgents(nil, cwd); a.Text != "ROOT-RULE\n\nAPI-RULE" || len(a.Paths) != 2 {
		t.Errorf("with an empty override: %+v", a)
	}

	// The root's AGENTS.md as a link to a private file: not read, and the
	// user is told; read once its directory is a readable root.
	root := filepath.Join(repo, "AGENTS.md")
	if err := os.Remove(root); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, root); err != nil {
		t.Fatal(err)
	}
	a = ReadAgents(nil, cwd)
	if strings.Contains(a.Text, "PRIVATE") || slices.Contains(a.Paths, root) || !strings.Contains(a.Skipped, root) {
		t.Errorf("root AGENTS.md linked out: %+v", a)
	}
	ws, err := files.NewWorkspace(cwd, nil, []string{filepath.Dir(outside)})
	if err != nil {
		t.Fatal(err)
	}
	if a := ReadAgents(ws, cwd); !strings.HasPrefix(a.Text, "PRIVATE-KEY-CANARY") || a.Skipped != "" {
		t.Errorf("root AGENTS.md linked into a readable root: %+v", a)
	}

	// Outside a repository only the workspace's own file counts.
	if err := os.RemoveAll(filepath.Join(repo, ".git")); err != nil {
		t.Fatal(err)
	}
	if a := ReadAgents(nil, cwd); a.Text != "API-RULE" || len(a.Paths) != 1 {
		t.Errorf("outside a repository: %+v", a)
	}

	// The budget holds across files, cut at a character boundary.
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(root); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(root, []byte("x"+strings.Repeat("é", MaxAgentsBytes)), 0o644); err != nil {
		t.Fatal(err)
	}
	if a := ReadAgents(nil, cwd); len(a.Text) > MaxAgentsBytes || !utf8.ValidString(a.Text) || len(a.Paths) != 1 {
		t.Errorf("over the budget: %d bytes, valid %v, paths %q", len(a.Text), utf8.ValidString(a.Text), a.Paths)
	}
}
