package brains

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/apserver/apserver/brain"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// ThreadScope is the project and task of a thread: a run's task thread
// belongs to the run's repository and its task; another thread to its own
// directory, with no task.
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
