package manager

import (
	"fmt"
	"slices"

	"github.com/apserver/apserver/protocol"
)

// Mode is a project's autonomy.
type Mode string

// Modes, from the least autonomous.
const (
	ModeOff      Mode = "off"       // the manager does nothing
	ModeSuggest  Mode = "suggest"   // proposes the next run; nothing starts without an approval
	ModeSemiAuto Mode = "semi_auto" // starts runs; their plans wait for a human as the runs' trust says
	ModeFullAuto Mode = "full_auto" // starts runs and approves the plans of the runs it started
)

// Valid reports whether m is a known mode.
func (m Mode) Valid() bool {
	switch m {
	case ModeOff, ModeSuggest, ModeSemiAuto, ModeFullAuto:
		return true
	}
	return false
}

// DefaultMaxParallelRuns is max_parallel_runs when unset.
const DefaultMaxParallelRuns = 1

// Budget is a project's daily budget; a zero field is no limit.
type Budget struct {
	TokensPerDay int64   `json:"tokensPerDay"`
	CostPerDay   float64 `json:"costPerDay"`
	RunsPerDay   int     `json:"runsPerDay"`
}

// Settings are a project's (a workspace's) manager settings.
type Settings struct {
	Mode            Mode   `json:"mode"`
	BlueprintID     string `json:"blueprintId"`
	Phase           string `json:"phase"`
	Paused          bool   `json:"paused"`
	MaxParallelRuns int    `json:"maxParallelRuns"`
	Budget          Budget `json:"budget"`
	// DonePhases are the phases the manager marked done.
	DonePhases []string `json:"donePhases,omitempty"`
	// Proposal is suggest's pending proposal (nil when none waits).
	Proposal *Proposal `json:"proposal,omitempty"`
	// Approved are the proposals a human approved (manager/approve) whose
	// run has not started yet.
	Approved []string `json:"approved,omitempty"`
}

// Validate names the first bad field.
func (s Settings) Validate() error {
	switch {
	case !s.Mode.Valid():
		return fmt.Errorf("mode: %q is not one of off, suggest, semi_auto, full_auto", s.Mode)
	case s.MaxParallelRuns < 0:
		return fmt.Errorf("maxParallelRuns: %d is negative", s.MaxParallelRuns)
	case s.Budget.TokensPerDay < 0:
		return fmt.Errorf("budget.tokensPerDay: %d is negative", s.Budget.TokensPerDay)
	case s.Budget.CostPerDay < 0:
		return fmt.Errorf("budget.costPerDay: %v is negative", s.Budget.CostPerDay)
	case s.Budget.RunsPerDay < 0:
		return fmt.Errorf("budget.runsPerDay: %d is negative", s.Budget.RunsPerDay)
	}
	return nil
}

// Spend is what the project used today: the tokens and cost of its runs
// (Cost counts the models with a price; those without are Unpriced, and
// Cost is then a lower bound) and the runs the manager started.
type Spend struct {
	Tokens   int64    `json:"tokens"`
	Cost     float64  `json:"cost"`
	Runs     int      `json:"runs"`
	Unpriced []string `json:"unpriced,omitempty"`
}

// PhaseWork is the active phase as the blueprint has it: its id, its
// ready tasks best first (blueprint.Next) and its tasks counted by status.
type PhaseWork struct {
	Phase  string                      `json:"phase"`
	Ready  []string                    `json:"ready"`
	Counts map[protocol.NodeStatus]int `json:"counts"`
	// Deps are the ready tasks' dependencies (all done in the blueprint).
	Deps map[string][]string `json:"deps,omitempty"`
}

// Open is the number of the phase's tasks that are not done.
func (w PhaseWork) Open() int {
	n := 0
	for s, c := range w.Counts {
		if s != protocol.NodeDone {
			n += c
		}
	}
	return n
}

// Run is a run the manager started: its tasks and where it stands.
type Run struct {
	ID         string                  `json:"id"`
	TaskIDs    []string                `json:"taskIds"`
	Status     protocol.RunStatus      `json:"status"`
	WaitingFor *protocol.RunWaitingFor `json:"waitingFor,omitempty"`
}

// Active reports whether the run still holds a slot.
func (r Run) Active() bool {
	switch r.Status {
	case protocol.RunCompleted, protocol.RunFailed, protocol.RunCancelled:
		return false
	}
	return true
}

func (r Run) waits(w protocol.RunWaitingFor) bool {
	return r.WaitingFor != nil && *r.WaitingFor == w
}

// State is a tick's input.
type State struct {
	Settings Settings `json:"settings"`
	// Phase is the active phase's id (Next's answer).
	Phase string `json:"phase"`
	// Ready are the tasks that can start now, best first (blueprint.Next).
	Ready []string `json:"ready"`
	// Deps are the ready tasks' dependencies: a task waits while a run
	// that carried one of them is still active (its work is not merged).
	Deps map[string][]string `json:"deps,omitempty"`
	// Open is the number of the phase's tasks that are not done.
	Open int `json:"open"`
	// PhaseDone: the phase was already marked done.
	PhaseDone bool `json:"phaseDone"`
	// Runs are the runs the manager started for this blueprint.
	Runs  []Run `json:"runs"`
	Spend Spend `json:"spend"`
}

// Result is a tick's answer.
type Result string

// Results.
const (
	ResultIdle               Result = "idle"
	ResultWaitingForApproval Result = "waiting_for_approval"
	ResultAdvancedRun        Result = "advanced_run"
	ResultStartedRun         Result = "started_run"
	ResultNothingToDo        Result = "nothing_to_do"
	ResultBudgetExhausted    Result = "budget_exhausted"
)

// EffectKind is what the driver does for a decision.
type EffectKind string

// Effects.
const (
	EffStartRun      EffectKind = "start_run"       // run/start with blueprint {blueprintId, taskIds}
	EffApprovePlan   EffectKind = "approve_plan"    // run/plan/approve of RunID
	EffMarkPhaseDone EffectKind = "mark_phase_done" // record that Phase is done
	EffPropose       EffectKind = "propose"         // (suggest) record the proposal ProposalID of TaskIDs for a human
)

// Effect is one thing for the driver to do.
type Effect struct {
	Kind        EffectKind `json:"kind"`
	BlueprintID string     `json:"blueprintId,omitempty"`
	Phase       string     `json:"phase,omitempty"`
	TaskIDs     []string   `json:"taskIds,omitempty"`
	RunID       string     `json:"runId,omitempty"`
	ProposalID  string     `json:"proposalId,omitempty"`
}

// Decision is a tick's result, why, and its effects.
type Decision struct {
	Result  Result   `json:"result"`
	Reason  string   `json:"reason"`
	TaskIDs []string `json:"taskIds,omitempty"` // started, or suggested
	RunID   string   `json:"runId,omitempty"`   // advanced (the driver fills a started run's)
	// ProposalID is suggest's proposal waiting for manager/approve, or
	// the approved proposal a run starts for.
	ProposalID string   `json:"proposalId,omitempty"`
	Effects    []Effect `json:"effects,omitempty"`
}

// Tick decides what the manager does now. It starts at most one run (of
// one task) per tick, never for a task a run of the manager already
// carried, never for a task that is not ready (its dependencies done), and
// never beyond max_parallel_runs active runs; ticks are called again until
// they answer something other than started_run or advanced_run.
func Tick(s State) Decision {
	st := s.Settings
	if st.Mode == ModeOff || st.Mode == "" {
		return Decision{Result: ResultIdle, Reason: "the project's mode is off"}
	}
	if st.Paused {
		return Decision{Result: ResultIdle, Reason: "the autopilot is paused"}
	}
	if st.BlueprintID == "" {
		return Decision{Result: ResultNothingToDo, Reason: "the project has no active blueprint"}
	}
	var active []Run
	carried := map[string]bool{}
	for _, r := range s.Runs {
		for _, id := range r.TaskIDs {
			carried[id] = true
		}
		if r.Active() {
			active = append(active, r)
		}
	}
	if s.Open == 0 && len(active) == 0 {
		d := Decision{Result: ResultNothingToDo, Reason: fmt.Sprintf("phase %s is done", s.Phase)}
		if !s.PhaseDone && s.Phase != "" {
			d.Effects = []Effect{{Kind: EffMarkPhaseDone, BlueprintID: st.BlueprintID, Phase: s.Phase}}
		}
		return d
	}
	if st.Mode == ModeFullAuto {
		for _, r := range active {
			if r.Status == protocol.RunWaiting && r.waits(protocol.WaitPlanApproval) {
				return Decision{Result: ResultAdvancedRun, Reason: "full_auto approves the plan of run " + r.ID, RunID: r.ID,
					Effects: []Effect{{Kind: EffApprovePlan, RunID: r.ID}}}
			}
		}
	}
	var waiting []string
	for _, r := range active {
		if r.Status == protocol.RunWaiting || r.Status == protocol.RunPaused {
			waiting = append(waiting, r.ID)
		}
	}
	inFlight := map[string]bool{}
	for _, r := range active {
		for _, id := range r.TaskIDs {
			inFlight[id] = true
		}
	}
	var candidates []string
	for _, id := range s.Ready {
		if slices.ContainsFunc(s.Deps[id], func(d string) bool { return inFlight[d] }) {
			continue // its dependency's run has not ended (merged) yet
		}
		if !carried[id] {
			carried[id] = true // once
			candidates = append(candidates, id)
		}
	}
	max := st.MaxParallelRuns
	if max <= 0 {
		max = DefaultMaxParallelRuns
	}
	idle := func() Decision {
		switch {
		case len(waiting) > 0:
			return Decision{Result: ResultWaitingForApproval, Reason: fmt.Sprintf("runs wait for a human: %v", waiting)}
		case len(active) >= max && len(candidates) > 0:
			return Decision{Result: ResultNothingToDo, Reason: fmt.Sprintf("%d runs in progress, max_parallel_runs is %d", len(active), max)}
		case len(active) > 0:
			return Decision{Result: ResultNothingToDo, Reason: fmt.Sprintf("%d runs in progress; no other task is ready", len(active))}
		}
		return Decision{Result: ResultNothingToDo, Reason: fmt.Sprintf("%d tasks of phase %s are not done, none is ready", s.Open, s.Phase)}
	}
	if len(candidates) == 0 || len(active) >= max {
		return idle()
	}
	if why := Exhausted(st.Budget, s.Spend); why != "" {
		return Decision{Result: ResultBudgetExhausted, Reason: why}
	}
	task := []string{candidates[0]}
	if st.Mode == ModeSuggest {
		id := ProposalID(st.BlueprintID, task)
		if !slices.Contains(st.Approved, id) {
			d := Decision{Result: ResultWaitingForApproval, Reason: fmt.Sprintf("suggest: proposes a run for task %s; approve proposal %s (manager/approve) to start it", task[0], id),
				TaskIDs: task, ProposalID: id}
			if st.Proposal == nil || st.Proposal.ID != id {
				d.Effects = []Effect{{Kind: EffPropose, BlueprintID: st.BlueprintID, Phase: s.Phase, TaskIDs: task, ProposalID: id}}
			}
			return d
		}
		return Decision{Result: ResultStartedRun, Reason: fmt.Sprintf("task %s: proposal %s was approved", task[0], id), TaskIDs: task, ProposalID: id,
			Effects: []Effect{{Kind: EffStartRun, BlueprintID: st.BlueprintID, Phase: s.Phase, TaskIDs: task, ProposalID: id}}}
	}
	return Decision{Result: ResultStartedRun, Reason: fmt.Sprintf("task %s is ready (%d of %d runs in progress)", task[0], len(active), max), TaskIDs: task,
		Effects: []Effect{{Kind: EffStartRun, BlueprintID: st.BlueprintID, Phase: s.Phase, TaskIDs: task}}}
}
