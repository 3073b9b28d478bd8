package blueprints

import (
	"context"
	"os"
	"path/filepath"

	"github.com/apserver/apserver/blueprint"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// PlanFile is where a blueprint's readable projection is written, under
// its cwd.
func PlanFile(cwd, bpID string) string {
	return filepath.Join(cwd, ".apserver", "blueprints", bpID, "plan.md")
}

// writePlan regenerates the blueprint's plan.md from the store (primary
// version, tasks, coverage) when it has a cwd that exists. Failures are
// logged: the store is the truth, the file only shows it.
func (s *Service) writePlan(ctx context.Context, st *store.Store, bpID string) {
	s.planMu.Lock()
	defer s.planMu.Unlock()
	b, v, err := s.version(ctx, st, bpID, "")
	if err != nil || v.Status != string(protocol.JobReady) || b.Cwd == "" || !filepath.IsAbs(b.Cwd) {
		return
	}
	if fi, err := os.Stat(b.Cwd); err != nil || !fi.IsDir() {
		return
	}
	t, err := s.tree(ctx, st, v)
	if err != nil {
		s.log.Warn("blueprints: plan.md", "blueprint", bpID, "err", err)
		return
	}
	tasks, err := s.tasks(ctx, st, v.ID)
	if err != nil {
		s.log.Warn("blueprints: plan.md", "blueprint", bpID, "err", err)
		return
	}
	var cov *blueprint.Coverage
	if full, err := st.BlueprintVersion(ctx, v.ID); err == nil {
		if d, err := blueprint.Parse(full.Document); err == nil {
			cov = blueprint.Measure(d, t)
		}
	}
	text := blueprint.RenderPlan(blueprint.PlanInfo{BlueprintID: b.ID, Title: b.Title, VersionID: v.ID, Version: v.Number}, t, tasks, cov)
	path := PlanFile(b.Cwd, b.ID)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		s.log.Warn("blueprints: plan.md", "blueprint", bpID, "err", err)
		return
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		s.log.Warn("blueprints: plan.md", "blueprint", bpID, "err", err)
		return
	}
	if err := os.Rename(tmp, path); err != nil {
		s.log.Warn("blueprints: plan.md", "blueprint", bpID, "err", err)
	}
}
