package brains

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/apserver/apserver/protocol"
)

// RecordRunDecisions records the decisions a run made in its project
// (runner.Brain): the planner's stated decisions (proposed until the plan
// is approved: ConfirmRunDecisions), a clarification's answer and an
// approved repair (active: a human's word). Each carries the run's id.
func (s *Service) RecordRunDecisions(ctx context.Context, cwd, runID string, ds []protocol.ProjectDecisionAddParams) error {
	var errs []error
	for _, p := range ds {
		p.Cwd = cwd
		if _, err := s.addDecision(ctx, p, runID); err != nil {
			errs = append(errs, fmt.Errorf("recording %q of run %s: %w", p.Title, runID, err))
		}
	}
	return errors.Join(errs...)
}

// ConfirmRunDecisions makes active the proposed decisions the run's
// planner stated, once its plan is approved (runner.Brain).
func (s *Service) ConfirmRunDecisions(ctx context.Context, cwd, runID string) error {
	ds, err := s.Decisions(ctx, cwd)
	if err != nil {
		return err
	}
	var errs []error
	active := protocol.DecisionActive
	for _, d := range ds {
		if d.RunID != runID || d.Status != protocol.DecisionProposed || d.Source != "planner" {
			continue
		}
		if _, err := s.UpdateDecision(ctx, protocol.ProjectDecisionUpdateParams{ID: d.ID, Status: &active}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// OwnsMemory reports whether the brain writes the project's
// .apserver/memory.md: it keeps decisions (runner.Brain). A run then
// neither writes nor commits the file (one owner: a file the brain
// rewrites in the checkout would stand in the way of the run's merge) and
// hands its section to RunMemory instead.
func (s *Service) OwnsMemory(ctx context.Context, cwd string) bool {
	ds, err := s.Decisions(ctx, cwd)
	return err == nil && len(ds) > 0
}

// RunMemory puts a finished run's section ("## Run …", runs.MemoryEntry)
// into the project's .apserver/memory.md, replacing the run's earlier one;
// the decisions above it are the brain's projection, rewritten after.
func (s *Service) RunMemory(cwd, runID, section string) {
	cwd = Project(cwd)
	s.proj.Lock()
	p := filepath.Join(cwd, filepath.FromSlash(MemoryFile))
	old, err := os.ReadFile(p)
	if err == nil || errors.Is(err, os.ErrNotExist) {
		text := replaceRunSection(string(old), runID, section)
		err = writeAtomic(p, text)
	}
	s.proj.Unlock()
	if err != nil {
		s.log.Warn("writing a run's section of memory.md", "cwd", cwd, "run", runID, "err", err)
	}
	s.Touch(cwd)
}

// replaceRunSection is memory text with the run's section added at the
// end, or put where the run's earlier section was.
func replaceRunSection(text, runID, section string) string {
	head := fmt.Sprintf("\n## Run %s ", runID)
	if i := strings.Index(text, head); i >= 0 {
		end := strings.Index(text[i+len(head):], "\n## Run ")
		if end < 0 {
			text = text[:i]
		} else {
			text = text[:i] + text[i+len(head)+end:]
		}
	}
	if strings.TrimSpace(text) == "" {
		text = "# apserver memory\n"
	}
	return strings.TrimRight(text, "\n") + "\n" + section
}
