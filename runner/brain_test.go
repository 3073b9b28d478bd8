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

// The planner's decisions are validated: the valid ones become proposed
// decisions of source planner; each invalid one is named with its field.
func TestPlannerDecisions(t *testing.T) {
	ds := []plannerDecision{
		{Title: " Use PostgreSQL ", Text: "All data in PostgreSQL.", Alternatives: []string{"MySQL"}, Files: []string{"db/**"}},
		{Title: "", Text: "no title"},
		{Title: "No text"},
		{Title: strings.Repeat("x", 201), Text: "t"},
		{Title: "Long", Text: strings.Repeat("y", 2001)},
	}
	for i := 0; i < 20; i++ {
		ds = append(ds, plannerDecision{Title: "d", Text: "t"})
	}
	out, problems := plannerDecisions(ds)
	if len(out) != 16 || out[0].Title != "Use PostgreSQL" || out[0].Source != "planner" || out[0].Status == nil || *out[0].Status != protocol.DecisionProposed ||
		out[0].Scope == nil || out[0].Scope.Files[0] != "db/**" {
		t.Fatalf("plannerDecisions: %d valid, first %+v", len(out), out[0])
	}
	want := []string{"decisions[1].title: empty", "decisions[2].text: empty", "decisions[3].title: longer than 200 bytes", "decisions[4].text: longer than 2000 bytes",
		"decisions[20]: more than 20 decisions"}
	for _, w := range want {
		if !strings.Contains(strings.Join(problems, "\n"), w) {
			t.Errorf("problems %q lack %q", problems, w)
		}
	}
}
