package brains

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apserver/apserver/brain"
	"github.com/apserver/apserver/internal/clock"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// RecordRunDecisions records the decisions a run made in its project
// (runner.Brain): the planner's stated decisions (proposed until the plan
// is approved: ConfirmRunDecisions), a clarification's answer and an
// approved repair (active: a human's word). Each carries the run's id.
func (s *Service) RecordRunDecisions(ctx context.Context, cwd, runID string, ds []protocol.ProjectDecisionAddParams) error {
	var errs []error
	for _, p := range ds {
		p.Cwd = cwd
		if _, err := s.addDecision(ctx, p, runID, ""); err != nil {
			errs = append(errs, fmt.Errorf("recording %q of run %s: %w", p.Title, runID, err))
		}
	}
	return errors.Join(errs...)
}

// ConfirmRunDecisions makes active the run's proposed decisions of the
// given sources that belong to taskID ("" for the run's plan: the
// planner's stated decisions, the model's in the planner's thread), with
// by as who confirmed them (runner.Brain): the plan's approval, or the
// run's trust where it lets the stage go on without a human.
func (s *Service) ConfirmRunDecisions(ctx context.Context, cwd, runID, taskID, by string, sources ...string) error {
	ds, err := s.Decisions(ctx, cwd)
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range ds {
		if d.RunID != runID || d.TaskID != taskID || d.Status != protocol.DecisionProposed || !slices.Contains(sources, d.Source) {
			continue
		}
		if err := s.confirm(ctx, d.ID, by); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// confirm makes a proposed decision active, by whom.
func (s *Service) confirm(ctx context.Context, id, by string) error {
	st, err := s.store()
	if err != nil {
		return err
	}
	s.edit.Lock()
	defer s.edit.Unlock()
	d, err := s.load(ctx, st, id)
	if err != nil || d.Status != protocol.DecisionProposed {
		return err
	}
	_, err = s.change(ctx, st, d.Cwd, map[string]*protocol.ProjectDecision{d.ID: &d},
		[]brain.Event{{Type: brain.EventConfirmed, ID: d.ID, AtMs: clock.Ms(s.opts.Clock), By: by}})
	return err
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

// RunMemory stores a finished run's section ("## Run …",
// runs.MemoryEntry) of the project's .apserver/memory.md, replacing the
// run's earlier one, with the project marked dirty in the same
// transaction; then the projection writes the file at once (so that the
// section is there when the run reports its end), or, after a crash
// between the two, at the next start. An error means the section is not
// stored.
func (s *Service) RunMemory(ctx context.Context, cwd, runID, section string) error {
	cwd = Project(cwd)
	st, err := s.store()
	if err != nil {
		return err
	}
	if err := st.PutRunSection(ctx, cwd, store.RunSection{RunID: runID, Section: section, At: clock.Ms(s.opts.Clock)}); err != nil {
		return err
	}
	s.flushLogged(cwd)
	return nil
}

// runHead starts a run's section in memory.md.
const runHead = "\n## Run "

// fileSections are the runs' sections of a memory.md's text, in order;
// At is their place in the file (1, 2, …), so that adopted ones keep
// their order, before every section stored since.
func fileSections(text string) []store.RunSection {
	var out []store.RunSection
	for {
		i := strings.Index(text, runHead)
		if i < 0 {
			return out
		}
		text = text[i:]
		end := strings.Index(text[len(runHead):], runHead)
		sec := text
		if end >= 0 {
			sec = text[:len(runHead)+end]
		}
		text = text[len(sec):]
		id, _, _ := strings.Cut(sec[len(runHead):], " ")
		if id = strings.TrimSpace(id); id != "" {
			out = append(out, store.RunSection{RunID: id, Section: sec, At: int64(len(out) + 1)})
		}
	}
}

// memorySections are the runs' sections as memory.md holds them (each
// starting "\n## Run "), oldest first.
func memorySections(rs []store.RunSection) string {
	var b strings.Builder
	for _, r := range rs {
		sec := r.Section
		if !strings.HasPrefix(sec, "\n") {
			sec = "\n" + sec
		}
		b.WriteString(strings.TrimRight(sec, "\n") + "\n")
	}
	return b.String()
}
