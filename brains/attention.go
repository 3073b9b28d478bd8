package brains

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apserver/apserver/brain"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// SetAttention sets Options.Attention (cmd wires the session's attention
// summary, made after the brain's store). Call it before serving.
func (s *Service) SetAttention(f func(cwd string, it *protocol.AttentionItem)) {
	s.mu.Lock()
	s.opts.Attention = f
	s.mu.Unlock()
}

func (s *Service) attention() func(cwd string, it *protocol.AttentionItem) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts.Attention
}

// attend puts the project's proposed decisions that wait on a human
// (brain.AwaitsHuman) in the attention summary as one item, or takes the
// item out when none waits. It runs after every change of the project's
// decisions, when a run of it ends (Touch) and at start (Restore).
func (s *Service) attend(ctx context.Context, cwd string) {
	set := s.attention()
	if set == nil {
		return
	}
	it, err := s.waiting(ctx, cwd)
	if err != nil {
		s.log.Warn("the brain's attention item", "cwd", cwd, "err", err)
		return
	}
	set(cwd, it)
}

// waiting is the attention item of the project's proposed decisions that
// wait on a human, nil when none does.
func (s *Service) waiting(ctx context.Context, cwd string) (*protocol.AttentionItem, error) {
	ds, err := s.Decisions(ctx, cwd)
	if err != nil {
		return nil, err
	}
	var runs map[string]*protocol.Run
	var names []string
	var since int64
	runID := ""
	for _, d := range ds {
		if d.Status != protocol.DecisionProposed {
			continue
		}
		if d.RunID != "" && runs == nil {
			if runs, err = s.runsByID(ctx); err != nil {
				return nil, err
			}
		}
		if !brain.AwaitsHuman(d, runs[d.RunID]) {
			continue
		}
		names = append(names, fmt.Sprintf("%s %q", d.ID, d.Title))
		if since == 0 || d.CreatedAtMs < since {
			since = d.CreatedAtMs
		}
		if len(names) == 1 {
			runID = d.RunID
		} else if runID != d.RunID {
			runID = ""
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	return &protocol.AttentionItem{Kind: protocol.AttentionApproval, Cwd: cwd, RunID: runID, SinceMs: since,
		Reason: fmt.Sprintf("%d proposed decision(s) of project %s wait for a human to confirm (project/decision/update, status active) or revoke: %s",
			len(names), cwd, clipText(strings.Join(names, ", "), 400))}, nil
}

// runsByID reads every run, by id.
func (s *Service) runsByID(ctx context.Context) (map[string]*protocol.Run, error) {
	st, err := s.store()
	if err != nil {
		return nil, err
	}
	rows, err := st.RunRows(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]*protocol.Run{}
	for _, r := range rows {
		var run protocol.Run
		if json.Unmarshal(r.Run, &run) == nil {
			out[run.ID] = &run
		}
	}
	return out, nil
}

// restoreAttention puts back, at start, the attention items of every
// project with proposed decisions.
func (s *Service) restoreAttention(ctx context.Context, st *store.Store) {
	if s.attention() == nil {
		return
	}
	cwds, err := st.ProposedDecisionProjects(ctx)
	if err != nil {
		s.log.Warn("restoring the brain's attention items", "err", err)
		return
	}
	for _, cwd := range cwds {
		s.attend(ctx, cwd)
	}
}

// threadRun is the run a thread works for — its planner's thread or a
// task's (taskID) — or nil.
func (s *Service) threadRun(ctx context.Context, st *store.Store, threadID string) (run *protocol.Run, taskID string, err error) {
	rows, err := st.RunRows(ctx)
	if err != nil {
		return nil, "", err
	}
	for _, r := range rows {
		var x protocol.Run
		if json.Unmarshal(r.Run, &x) != nil {
			continue
		}
		for _, t := range x.Plan.Tasks {
			if t.ThreadID != nil && *t.ThreadID == threadID {
				return &x, t.ID, nil
			}
		}
		if x.PlannerThreadID != nil && *x.PlannerThreadID == threadID {
			return &x, "", nil
		}
	}
	return nil, "", nil
}
