package brains

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/apserver/apserver/brain"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
)

// maxCachedVerdicts bounds the verdicts kept; the cache is emptied when
// full and whenever a decision changes.
const maxCachedVerdicts = 4096

func (s *Service) forgetVerdicts() {
	s.mu.Lock()
	s.cache = map[string]cachedVerdict{}
	s.mu.Unlock()
}

// Judge is the alignment check of an action in a project: the rules of
// brain.Check over the project's decisions, then, for an action they
// leave undecided, the validator model (brain.Judge: validated, asked
// again once, risky when it gives no valid answer). Verdicts are cached
// per action, task and decisions.
func (s *Service) Judge(ctx context.Context, cwd string, task brain.Task, a protocol.AlignmentAction) (protocol.AlignmentVerdict, error) {
	ds, err := s.Decisions(ctx, cwd)
	if err != nil {
		return protocol.AlignmentVerdict{}, err
	}
	return s.judge(ctx, cwd, task, a, ds), nil
}

// judge is Judge over decisions already read.
func (s *Service) judge(ctx context.Context, cwd string, task brain.Task, a protocol.AlignmentAction, ds []protocol.ProjectDecision) protocol.AlignmentVerdict {
	v, _ := s.judgeRecorded(ctx, cwd, task, a, ds)
	return v
}

// judgeRecorded is judge, and the record of what the verdict was judged
// from: a cached verdict comes with the record it was first judged from,
// so that replaying it gives it again.
func (s *Service) judgeRecorded(ctx context.Context, cwd string, task brain.Task, a protocol.AlignmentAction, ds []protocol.ProjectDecision) (protocol.AlignmentVerdict, brain.Record) {
	key := Project(cwd) + "\x00" + brain.Key(a, task, ds)
	s.mu.Lock()
	c, ok := s.cache[key]
	s.mu.Unlock()
	if ok {
		return c.verdict, c.record
	}
	v, rec := brain.JudgeRecorded(a, task, ds, func(prompt string) (string, error) { return s.ask(ctx, prompt) })
	s.mu.Lock()
	if len(s.cache) >= maxCachedVerdicts {
		s.cache = map[string]cachedVerdict{}
	}
	s.cache[key] = cachedVerdict{v, rec}
	s.mu.Unlock()
	return v, rec
}

// cachedVerdict is a verdict and its record.
type cachedVerdict struct {
	verdict protocol.AlignmentVerdict
	record  brain.Record
}

// verdictSchema is the validator's structured output.
var verdictSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["status","score","reasons","decisions"],
"properties":{"status":{"type":"string","enum":["aligned","risky","conflicting"]},"score":{"type":"number"},
"reasons":{"type":"array","items":{"type":"string"}},"decisions":{"type":"array","items":{"type":"string"}}}}`)

const validatorInstructions = "You are the alignment validator of apserver. Judge one action against the task and the project's recorded decisions. Answer with the JSON object asked for, nothing else."

// ask sends one prompt to the validator (the "validator" role's model).
func (s *Service) ask(ctx context.Context, prompt string) (string, error) {
	if s.opts.Ask != nil {
		return s.opts.Ask(ctx, prompt)
	}
	name, prov, err := s.opts.Config.ResolveModel("validator", "")
	if err != nil {
		return "", err
	}
	mc := model.NewClient(prov, nil)
	req := model.Request{
		Model:        name,
		Instructions: validatorInstructions,
		Input:        []model.Entry{{Kind: model.EntryUser, Text: prompt}},
		OutputSchema: &model.OutputSchema{Name: "alignment_verdict", Schema: verdictSchema, Strict: true},
	}
	var deltas strings.Builder
	whole := ""
	err = mc.Stream(ctx, req, func(ev model.Event) {
		switch ev.Kind {
		case model.EvTextDelta:
			deltas.WriteString(ev.Text)
		case model.EvMessageDone:
			if ev.Text != "" {
				whole = ev.Text
			}
		}
	})
	if err != nil {
		return "", err
	}
	if whole == "" {
		whole = deltas.String()
	}
	return whole, nil
}

// TaskOf is the brain's view of a run's task.
func TaskOf(t protocol.PlanTask) brain.Task {
	text := t.Description
	if len(t.Acceptance.Criteria) > 0 {
		text += "\nAcceptance: " + strings.Join(t.Acceptance.Criteria, "; ")
	}
	return brain.Task{ID: t.ID, Title: t.Title, Text: text, Files: t.Acceptance.Files}
}

// StageContext is the context block of a run's stage (role planner,
// implementer, reviewer) in a project, within the role's budget: what the
// runner appends to the stage's instructions. A project without decisions
// and blueprint gets "", and so does an error (logged): a run never fails
// for its context.
func (s *Service) StageContext(ctx context.Context, role, cwd string, task *protocol.PlanTask) string {
	in, err := s.input(ctx, role, cwd, 0)
	if err != nil {
		s.log.Warn("building a stage's context", "cwd", cwd, "role", role, "err", err)
		return ""
	}
	if len(in.Decisions) == 0 && in.Snapshot == "" {
		return ""
	}
	if task != nil {
		in.Task = TaskOf(*task)
	}
	return brain.Build(in)
}

// budget is a role's token budget: Options.Budgets, else the
// configuration's ([brain] budgets), else brain.DefaultBudget.
func (s *Service) budget(role string, override int) int {
	if override > 0 {
		return override
	}
	if b, ok := s.opts.Budgets[role]; ok && b > 0 {
		return b
	}
	if b, ok := s.opts.Config.Brain.Budgets[role]; ok && b > 0 {
		return b
	}
	return brain.DefaultBudget
}

// input is the builder's input for a project, without the task.
func (s *Service) input(ctx context.Context, role, cwd string, budget int) (brain.Input, error) {
	state, err := s.State(ctx, cwd)
	if err != nil {
		return brain.Input{}, err
	}
	in := brain.Input{Role: role, Budget: s.budget(role, budget), Decisions: state.Decisions}
	if len(state.Decisions) > 0 || state.Blueprint != nil || len(state.Runs) > 0 {
		in.Snapshot = brain.Snapshot(state)
		if in.Summaries, err = s.summaries(ctx, cwd); err != nil {
			return brain.Input{}, err
		}
	}
	if len(state.Decisions) > 0 {
		if in.Memory, err = s.runSections(ctx, cwd); err != nil {
			return brain.Input{}, err
		}
	}
	return in, nil
}

// runSections are the finished runs' sections of the project's
// memory.md ("## Run …"), from the store: in a project that keeps
// decisions the brain owns the file and runs no longer commit it, so
// stages read the runs' history in their context block's Memory section.
// "" when there is none.
func (s *Service) runSections(ctx context.Context, cwd string) (string, error) {
	st, err := s.store()
	if err != nil {
		return "", err
	}
	rs, err := st.RunSections(ctx, Project(cwd))
	if err != nil || len(rs) == 0 {
		return "", err
	}
	// A level lower: they sit under the block's "## Memory".
	return strings.TrimSpace(strings.ReplaceAll(memorySections(rs), runHead, "\n### Run ")), nil
}

// ContextPreview implements project/context/preview: exactly the block a
// stage of the role would get for the blueprint task (its node and source
// excerpt, the decisions ranked for its files and nodes) or thread.
func (s *Service) ContextPreview(ctx context.Context, p protocol.ProjectContextPreviewParams) (protocol.ProjectContextPreviewResult, error) {
	var res protocol.ProjectContextPreviewResult
	if err := p.Validate(); err != nil {
		return res, err
	}
	in, err := s.input(ctx, p.Role, p.Cwd, p.Budget)
	if err != nil {
		return res, err
	}
	in.ThreadID = p.ThreadID
	if p.TaskID != "" {
		st, err := s.store()
		if err != nil {
			return res, err
		}
		bps, err := st.Blueprints(ctx, Project(p.Cwd))
		if err != nil {
			return res, err
		}
		found := false
		for _, bp := range bps {
			if p.BlueprintID != "" && bp.ID != p.BlueprintID {
				continue
			}
			_, nodes, tasks, err := blueprintOf(ctx, st, bp)
			if err != nil {
				return res, err
			}
			for _, t := range tasks {
				if t.ID != p.TaskID {
					continue
				}
				found = true
				in.Task = brain.Task{ID: t.ID, Title: t.Title, Text: strings.Join(t.Acceptance.Criteria, "\n"), Files: t.Acceptance.Files, Nodes: []string{t.NodeID}}
				in.Excerpt = t.ExcerptText
				for i := range nodes {
					if nodes[i].ID == t.NodeID {
						in.Node = &nodes[i]
					}
				}
				break
			}
			if found {
				break
			}
		}
		if !found {
			return res, invalid("taskId: no blueprint task " + p.TaskID + " in this project")
		}
	}
	res.Context = brain.Build(in)
	res.Tokens = brain.Tokens(res.Context)
	res.Budget = in.Budget
	return res, nil
}

// ThreadContext is the context block of a plain thread in the project
// cwd (session.ProjectContexter, under project_context = true): the
// "thread" role's budget, the thread's summaries first among the
// project's. A run's task thread gets "" (its stage's instructions
// already hold the block), and so does a directory that is not a project
// (no decisions, blueprint or runs) or an error (logged).
func (s *Service) ThreadContext(ctx context.Context, threadID, cwd string) string {
	if _, task, err := s.ThreadScope(ctx, threadID); err == nil && task.ID != "" {
		return ""
	}
	in, err := s.input(ctx, "thread", cwd, 0)
	if err != nil {
		s.log.Warn("building a thread's context", "thread", threadID, "cwd", cwd, "err", err)
		return ""
	}
	if len(in.Decisions) == 0 && in.Snapshot == "" {
		return ""
	}
	in.ThreadID = threadID
	return brain.Build(in)
}
