package brains

import (
	"context"
	"strings"

	"github.com/apserver/apserver/brain"
	"github.com/apserver/apserver/internal/clock"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// maxSummaryBytes bounds a stored summary.
const maxSummaryBytes = 8 << 10

// isProject reports whether cwd is a project: it keeps decisions, a
// blueprint or runs.
func (s *Service) isProject(ctx context.Context, cwd string) bool {
	state, err := s.State(ctx, cwd)
	return err == nil && (len(state.Decisions) > 0 || state.Blueprint != nil || len(state.Runs) > 0)
}

// SummaryDue reports whether a thread's rolling summary is to be
// rewritten (session.Summarizer): the thread is a plain thread (not a
// run's task) of a project, and has turns its summary does not cover;
// turns is how many it has.
func (s *Service) SummaryDue(ctx context.Context, threadID, cwd string) (turns int, due bool) {
	if _, task, err := s.ThreadScope(ctx, threadID); err != nil || task.ID != "" {
		return 0, false
	}
	if !s.isProject(ctx, cwd) {
		return 0, false
	}
	st, err := s.store()
	if err != nil {
		return 0, false
	}
	ts, err := st.Turns(ctx, threadID)
	if err != nil || len(ts) == 0 {
		return 0, false
	}
	if prev, err := st.GetThreadSummary(ctx, threadID); err == nil && prev.Turns >= len(ts) {
		return len(ts), false
	}
	return len(ts), true
}

// SaveSummary stores a thread's rolling summary, covering turns turns,
// in its project (session.Summarizer).
func (s *Service) SaveSummary(ctx context.Context, threadID, cwd, summary string, turns int) error {
	st, err := s.store()
	if err != nil {
		return err
	}
	summary = strings.TrimSpace(summary)
	if len(summary) > maxSummaryBytes {
		summary = clipText(summary, maxSummaryBytes)
	}
	return st.PutThreadSummary(ctx, store.ThreadSummary{ThreadID: threadID, Cwd: Project(cwd), Summary: summary, Turns: turns, UpdatedAt: clock.Ms(s.opts.Clock)})
}

// summaries are a project's thread summaries for the context builder.
func (s *Service) summaries(ctx context.Context, cwd string) ([]brain.Summary, error) {
	st, err := s.store()
	if err != nil {
		return nil, err
	}
	rows, err := st.ThreadSummaries(ctx, Project(cwd))
	if err != nil {
		return nil, err
	}
	out := make([]brain.Summary, 0, len(rows))
	for _, r := range rows {
		out = append(out, brain.Summary{ThreadID: r.ThreadID, Text: r.Summary, AtMs: r.UpdatedAt})
	}
	return out, nil
}

// ListSummaries implements project/summary/list: the rolling summaries of
// the project's threads, the most recent first.
func (s *Service) ListSummaries(ctx context.Context, p protocol.ProjectSummaryListParams) (protocol.ProjectSummaryListResult, error) {
	res := protocol.ProjectSummaryListResult{Summaries: []protocol.ProjectThreadSummary{}}
	if err := p.Validate(); err != nil {
		return res, err
	}
	st, err := s.store()
	if err != nil {
		return res, err
	}
	rows, err := st.ThreadSummaries(ctx, Project(p.Cwd))
	if err != nil {
		return res, err
	}
	for _, r := range rows {
		res.Summaries = append(res.Summaries, protocol.ProjectThreadSummary{ThreadID: r.ThreadID, Cwd: r.Cwd, Summary: r.Summary, Turns: r.Turns, UpdatedAtMs: r.UpdatedAt})
	}
	return res, nil
}
