package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestBrainKeys: project_context and [brain] budgets are read, merged
// across files role by role, and a bad role or budget is an error naming
// the key.
func TestBrainKeys(t *testing.T) {
	if got := Default().Brain; got.ProjectContext || len(got.Budgets) != 0 {
		t.Errorf("brain defaults: %+v", got)
	}
	dir := t.TempDir()
	user := writeFile(t, filepath.Join(dir, "user.toml"), `
project_context = true
[brain]
budgets = { implementer = 12000, planner = 4000 }
`)
	ws := filepath.Join(dir, "ws")
	writeFile(t, filepath.Join(ws, ".apserver", "config.toml"), `
[brain.budgets]
reviewer = 3000
planner = 6000
`)
	c, err := Load(LoadOptions{UserFile: user, Workspace: ws, Getenv: env(t)})
	if err != nil {
		t.Fatal(err)
	}
	b := c.Brain
	if !b.ProjectContext || b.Budgets["implementer"] != 12000 || b.Budgets["planner"] != 6000 || b.Budgets["reviewer"] != 3000 || len(b.Budgets) != 3 {
		t.Errorf("brain = %+v", b)
	}
	for _, tc := range []struct{ text, want string }{
		{"[brain]\nbudgets = { coder = 9000 }\n", "brain.budgets.coder: unknown role"},
		{"[brain]\nbudgets = { thread = 10 }\n", "brain.budgets.thread: must be between 500 and 200000"},
		{"project_context = \"yes\"\n", "project_context"},
	} {
		f := writeFile(t, filepath.Join(t.TempDir(), "bad.toml"), tc.text)
		_, err := Load(LoadOptions{UserFile: f, Getenv: env(t)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%q) = %v, want an error with %q", tc.text, err, tc.want)
		}
	}
}
