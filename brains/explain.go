package brains

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/apserver/apserver/brain"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// ThreadScope is the project and task of a thread: a run's task thread
// belongs to the run's repository and its task, its planner's thread to
// the run's repository; another thread to its own directory, with no
// task.
func (s *Service) ThreadScope(ctx context.Context, threadID string) (string, brain.Task, error) {
	st, err := s.store()
	if err != nil {
		return "", brain.Task{}, err
	}
	rows, err := st.RunRows(ctx)
	if err != nil {
		return "", brain.Task{}, err
	}
	for _, r := range rows {
		var run protocol.Run
		if json.Unmarshal(r.Run, &run) != nil {
			continue
		}
		for _, t := range run.Plan.Tasks {
			if t.ThreadID != nil && *t.ThreadID == threadID {
				return Project(run.Cwd), TaskOf(t.PlanTask), nil
			}
		}
		if run.PlannerThreadID != nil && *run.PlannerThreadID == threadID {
			return Project(run.Cwd), brain.Task{}, nil
		}
	}
	th, err := st.GetThread(ctx, threadID)
	if errors.Is(err, store.ErrNotFound) {
		return "", brain.Task{}, invalid("threadId: no thread " + threadID)
	}
	if err != nil {
		return "", brain.Task{}, err
	}
	return Project(th.Cwd), brain.Task{}, nil
}

// Explain implements alignment/explain: the verdict the thread's
// alignment check gives the action (the rules, then the validator for
// what they leave undecided).
func (s *Service) Explain(ctx context.Context, p protocol.AlignmentExplainParams) (protocol.AlignmentExplainResult, error) {
	var res protocol.AlignmentExplainResult
	if err := p.Validate(); err != nil {
		return res, err
	}
	cwd, task, err := s.ThreadScope(ctx, p.ThreadID)
	if p.Cwd != "" {
		cwd, err = Project(p.Cwd), nil
	}
	if err != nil {
		return res, err
	}
	res.Verdict, err = s.Judge(ctx, cwd, task, p.Action)
	return res, err
}

// AlignThread is the session's alignment hook (session.Aligner): the
// verdict of an action of the thread in its project, and the record it
// was judged from (a brain.Record, replayed by apserver replay); ok is
// false when the project has no active decision to judge by, or the
// thread is unknown.
func (s *Service) AlignThread(ctx context.Context, threadID string, a protocol.AlignmentAction) (protocol.AlignmentVerdict, json.RawMessage, bool) {
	cwd, task, err := s.ThreadScope(ctx, threadID)
	if err != nil {
		return protocol.AlignmentVerdict{}, nil, false
	}
	ds, err := s.Decisions(ctx, cwd)
	if err != nil || len(brain.Active(ds)) == 0 {
		return protocol.AlignmentVerdict{}, nil, false
	}
	v, rec := s.judgeRecorded(ctx, cwd, task, a, ds) // the decisions read above, not a second time
	s.log.Info("alignment verdict", "thread", threadID, "status", v.Status, "pass", v.Pass, "reasons", v.Reasons)
	// The thread's receipts hold a set of decisions once: a record whose
	// set the thread's previous record held names it by its hash only.
	s.mu.Lock()
	if s.sentSets[threadID] == rec.DecisionsHash {
		rec.Decisions = nil
	} else {
		if len(s.sentSets) >= maxCachedVerdicts {
			s.sentSets = map[string]string{}
		}
		s.sentSets[threadID] = rec.DecisionsHash
	}
	s.mu.Unlock()
	raw, err := json.Marshal(rec)
	if err != nil {
		s.log.Error("bug: an alignment record does not encode", "thread", threadID, "err", err)
		raw = nil
	}
	return v, raw, true
}

// AlignmentApproved records a human's approval of an action the check
// stopped (session.Aligner): a decision (source "alignment") that
// supersedes the first decision the verdict named, saying what was
// approved and why it was stopped. A verdict naming no decision records
// nothing.
func (s *Service) AlignmentApproved(ctx context.Context, threadID string, a protocol.AlignmentAction, v protocol.AlignmentVerdict) {
	if len(v.Decisions) == 0 {
		return
	}
	cwd, _, err := s.ThreadScope(ctx, threadID)
	if err != nil {
		s.log.Warn("recording an approved alignment stop", "thread", threadID, "err", err)
		return
	}
	what := a.Command
	if a.Kind != protocol.ActionCommand {
		what = string(a.Kind) + " " + a.Path
	}
	old := v.Decisions[0]
	_, err = s.AddDecision(ctx, protocol.ProjectDecisionAddParams{
		Cwd:        cwd,
		Title:      "Approved against " + old.Title + ": " + clipText(what, 120),
		Text:       "A human approved `" + clipText(what, 400) + "`, which the alignment check judged " + string(v.Status) + ": " + strings.Join(v.Reasons, "; "),
		Why:        "approved in thread " + threadID,
		Source:     "alignment",
		Supersedes: old.ID,
	})
	if err != nil {
		s.log.Warn("recording an approved alignment stop", "thread", threadID, "err", err)
	}
}

func clipText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// RecordDecision records a decision in the thread's project
// (session.Aligner: the model's record_decision tool, as proposed). In a
// run's planner or task thread it carries the run's id (and the task's):
// the run's trust confirms it where it lets the stage go on without a
// human (runner: ConfirmRunDecisions), else it waits on a human, in the
// attention summary.
func (s *Service) RecordDecision(ctx context.Context, threadID string, p protocol.ProjectDecisionAddParams) (protocol.ProjectDecision, error) {
	st, err := s.store()
	if err != nil {
		return protocol.ProjectDecision{}, err
	}
	run, taskID, err := s.threadRun(ctx, st, threadID)
	if err != nil {
		return protocol.ProjectDecision{}, err
	}
	if run != nil {
		p.Cwd = Project(run.Cwd)
		r, err := s.addDecision(ctx, p, run.ID, taskID)
		return r.Decision, err
	}
	cwd, _, err := s.ThreadScope(ctx, threadID)
	if err != nil {
		return protocol.ProjectDecision{}, err
	}
	p.Cwd = cwd
	r, err := s.AddDecision(ctx, p)
	return r.Decision, err
}
