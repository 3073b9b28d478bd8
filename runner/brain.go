package runner

import (
	"context"
	"fmt"
	"strings"

	"github.com/apserver/apserver/brain"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runs"
)

// Brain is the project brain as the runner sees it (brains.Service
// implements it; cmd wires it): the context block each stage gets in its
// instructions, the news that a run ended, so that the projections are
// rewritten, the decisions a run makes, and memory.md, which the brain
// owns in a project that keeps decisions.
type Brain interface {
	// StageContext is the block for a stage of role (planner,
	// implementer, validator) of a run in the project cwd, for task (nil
	// for the planner); "" when there is nothing to say.
	StageContext(ctx context.Context, role, cwd string, task *protocol.PlanTask) string
	// Touch says the project's state changed (a run ended).
	Touch(cwd string)
	// RecordRunDecisions records decisions the run made in the project
	// (the planner's as proposed; a clarification's answer, an approved
	// repair as active), each with the run's id.
	RecordRunDecisions(ctx context.Context, cwd, runID string, ds []protocol.ProjectDecisionAddParams) error
	// ConfirmRunDecisions makes active the run's proposed decisions of
	// the given sources that belong to taskID ("" for the plan's), with
	// by as who confirmed them: the plan's approval, or the run's trust.
	ConfirmRunDecisions(ctx context.Context, cwd, runID, taskID, by string, sources ...string) error
	// OwnsMemory reports whether the brain writes the project's
	// .apserver/memory.md; a run then leaves the file alone and hands its
	// section to RunMemory.
	OwnsMemory(ctx context.Context, cwd string) bool
	// RunMemory stores a finished run's section of memory.md (durably,
	// before it is projected into the file); an error means it is not
	// stored.
	RunMemory(ctx context.Context, cwd, runID, section string) error
}

// withContext returns a stage's instructions with the project's context
// block appended (docs/brain.md): what project/context/preview shows.
func (x *run) withContext(ctx context.Context, cfg runs.Config, role string, task *protocol.PlanTask, instructions string) string {
	b := x.rn.opts.Brain
	if b == nil {
		return instructions
	}
	block := b.StageContext(ctx, role, cfg.Cwd, task)
	if block == "" {
		return instructions
	}
	return instructions + "\n\n" + block
}

// runEnded tells the brain a run of the project ended.
func (rn *Runner) runEnded(cwd string) {
	if rn.opts.Brain != nil {
		rn.opts.Brain.Touch(cwd)
	}
}

// writeRunMemory writes the run's section of .apserver/memory.md: in the
// worktree, committed with the run (memoryText), unless the brain owns
// the project's memory.md — then the section goes to the project's file,
// which is never committed by a run (one owner: a file the brain
// rewrites in the user's checkout, when tracked, would stop the next
// run's merge there).
func (x *run) writeRunMemory(ctx context.Context, cfg runs.Config, s runs.Snapshot) error {
	if b := x.rn.opts.Brain; b != nil && b.OwnsMemory(ctx, cfg.Cwd) {
		return b.RunMemory(ctx, cfg.Cwd, cfg.ID, runs.MemoryEntry(s))
	}
	return writeMemory(cfg.Worktree, s)
}

// Planner decisions: the plan's optional "decisions" list.
const (
	maxPlannerDecisions = 20
	maxDecisionTitle    = 200
	maxDecisionText     = 2000
)

// plannerDecision is one decision the planner states.
type plannerDecision struct {
	Title        string   `json:"title"`
	Text         string   `json:"text"`
	Why          string   `json:"why"`
	Alternatives []string `json:"alternatives"`
	Files        []string `json:"files"`
	Tags         []string `json:"tags"`
}

// plannerDecisions validates the planner's stated decisions: at most 20,
// each with a title (at most 200 bytes) and a text (at most 2,000). The
// valid ones are returned as proposed decisions of source planner; what
// was wrong with the others, naming the field, in problems.
func plannerDecisions(ds []plannerDecision) (out []protocol.ProjectDecisionAddParams, problems []string) {
	proposed := protocol.DecisionProposed
	for i, d := range ds {
		field := fmt.Sprintf("decisions[%d]", i)
		title, text := strings.TrimSpace(d.Title), strings.TrimSpace(d.Text)
		switch {
		case i >= maxPlannerDecisions:
			problems = append(problems, fmt.Sprintf("%s: more than %d decisions", field, maxPlannerDecisions))
			continue
		case title == "":
			problems = append(problems, field+".title: empty")
			continue
		case len(title) > maxDecisionTitle:
			problems = append(problems, fmt.Sprintf("%s.title: longer than %d bytes", field, maxDecisionTitle))
			continue
		case text == "":
			problems = append(problems, field+".text: empty")
			continue
		case len(text) > maxDecisionText:
			problems = append(problems, fmt.Sprintf("%s.text: longer than %d bytes", field, maxDecisionText))
			continue
		}
		p := protocol.ProjectDecisionAddParams{Title: title, Text: text, Why: strings.TrimSpace(d.Why), Alternatives: d.Alternatives,
			Source: "planner", Status: &proposed}
		if len(d.Files) > 0 || len(d.Tags) > 0 {
			p.Scope = &protocol.DecisionScope{Files: d.Files, Tags: d.Tags}
		}
		out = append(out, p)
	}
	return out, problems
}

// recordPlannerDecisions records the plan's decisions as proposed (before
// the plan is proposed: its approval confirms them). checkPlan has
// refused a plan with an invalid one, so problems here are a bug, logged.
func (x *run) recordPlannerDecisions(ctx context.Context, cfg runs.Config, ds []plannerDecision) {
	b := x.rn.opts.Brain
	if b == nil || len(ds) == 0 {
		return
	}
	valid, problems := plannerDecisions(ds)
	if len(problems) > 0 {
		x.rn.log.Warn("run: the planner's decisions not recorded", "run", x.id, "problems", strings.Join(problems, "; "))
	}
	if len(valid) == 0 {
		return
	}
	if err := b.RecordRunDecisions(ctx, cfg.Cwd, cfg.ID, valid); err != nil {
		x.rn.log.Warn("run: recording the planner's decisions", "run", x.id, "err", err)
	}
}

// brainSaw records what an event the run stored decided, on the run's
// goroutine: an approved plan confirms the planner's decisions (and,
// under planning trust auto, the model's in the planner's thread); a
// task committed under a trust that needed no human confirms the
// decisions its threads proposed; a
// clarification's answer and an approved repair become active decisions
// (source clarification, repair).
func (x *run) brainSaw(ev runs.Event) {
	b := x.rn.opts.Brain
	if b == nil {
		return
	}
	r := x.m.Run()
	ctx := x.ctx
	var rec []protocol.ProjectDecisionAddParams
	switch ev.Type {
	case runs.EvPlanProposed, runs.EvPlanApproved:
		if !r.Plan.Approved {
			return
		}
		// A human's approval confirms the planner's stated decisions;
		// planning trust auto also those the model recorded in the
		// planner's thread (record_decision), which otherwise wait on a
		// human.
		by, sources := "run/plan/approve", []string{"planner"}
		if ev.Type == runs.EvPlanProposed {
			by, sources = brain.ByPlanningTrust, []string{"planner", "model"}
		}
		if err := b.ConfirmRunDecisions(ctx, r.Cwd, r.ID, "", by, sources...); err != nil {
			x.rn.log.Warn("run: confirming the plan's decisions", "run", x.id, "err", err)
		}
		return
	case runs.EvTaskCommitted:
		// The task's threads' record_decision calls: confirmed by the
		// run's trust when it let the task go on without a human.
		for _, t := range r.Plan.Tasks {
			if t.ID == ev.TaskID && brain.TaskTrusted(r, t) {
				if err := b.ConfirmRunDecisions(ctx, r.Cwd, r.ID, t.ID, brain.ByImplementationTrust, "model"); err != nil {
					x.rn.log.Warn("run: confirming the task's decisions", "run", x.id, "task", t.ID, "err", err)
				}
			}
		}
		return
	case runs.EvClarificationAnswered:
		for _, c := range r.Clarifications {
			if c.Answer != nil && c.AnsweredAtMs != nil && *c.AnsweredAtMs == ev.AtMs && *c.Answer == ev.Text {
				rec = append(rec, protocol.ProjectDecisionAddParams{Title: clip(oneLine(c.Question), maxDecisionTitle),
					Text: clip(ev.Text, maxDecisionText), Why: "the user's answer to a clarification of run " + r.ID + " (" + c.ID + ")", Source: "clarification"})
			}
		}
	case runs.EvRepairApproved:
		for _, t := range r.Plan.Tasks {
			if t.ID != ev.TaskID || len(t.Dependencies) == 0 {
				continue
			}
			fixID := t.Dependencies[len(t.Dependencies)-1]
			for _, f := range r.Plan.Tasks {
				if f.ID == fixID {
					rec = append(rec, protocol.ProjectDecisionAddParams{Title: clip("Repair: "+oneLine(f.Title), maxDecisionTitle),
						Text: clip(f.Description, maxDecisionText), Why: fmt.Sprintf("a repair of task %s approved in run %s", t.ID, r.ID), Source: "repair",
						Scope: &protocol.DecisionScope{Files: f.Acceptance.Files}})
				}
			}
		}
	}
	if len(rec) == 0 {
		return
	}
	for i := range rec {
		if strings.TrimSpace(rec[i].Text) == "" {
			rec[i].Text = rec[i].Title
		}
	}
	if err := b.RecordRunDecisions(ctx, r.Cwd, r.ID, rec); err != nil {
		x.rn.log.Warn("run: recording a decision", "run", x.id, "event", ev.Type, "err", err)
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
