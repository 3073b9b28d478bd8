package runner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/brains"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runs"
	"github.com/apserver/apserver/store"
)

// A stage's instructions carry the project's context block: the
// decisions whose scope matches the task first, within the budget.
func TestStageInstructionsCarryTheContext(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "a.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	br := brains.New(brains.Options{Store: func() (*store.Store, error) { return st, nil }, Debounce: -1})
	defer br.Close()
	proj := filepath.Join(dir, "repo")
	for _, p := range []protocol.ProjectDecisionAddParams{
		{Cwd: proj, Title: "Use PostgreSQL", Scope: &protocol.DecisionScope{Files: []string{"db/**"}}},
		{Cwd: proj, Title: "Logs in JSON", Scope: &protocol.DecisionScope{Files: []string{"log/**"}}},
	} {
		if _, err := br.AddDecision(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	cfg := runs.Config{Cwd: proj, Worktree: filepath.Join(dir, "wt")}
	task := &protocol.PlanTask{ID: "t1", Title: "Orders table", Acceptance: protocol.TaskAcceptance{Files: []string{"db/orders.sql"}}}

	x := &run{rn: &Runner{}}
	if got := x.withContext(ctx, cfg, "implementer", task, "Do it."); got != "Do it." {
		t.Fatalf("without a brain, instructions = %q", got)
	}
	x.rn.opts.Brain = br
	got := x.withContext(ctx, cfg, "implementer", task, "Do it.")
	pg, logs := strings.Index(got, "Use PostgreSQL"), strings.Index(got, "Logs in JSON")
	if !strings.HasPrefix(got, "Do it.\n\n# Project context for the implementer") || pg < 0 || logs < pg || !strings.Contains(got, "t1 Orders table") {
		t.Fatalf("instructions:\n%s", got)
	}
	want, err := br.ContextPreview(ctx, protocol.ProjectContextPreviewParams{Cwd: proj, Role: "implementer", ThreadID: "x"})
	if err != nil || want.Budget != 8000 {
		t.Fatalf("preview: %+v %v", want, err)
	}
}
