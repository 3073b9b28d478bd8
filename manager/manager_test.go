package manager

import (
	"reflect"
	"testing"

	"github.com/apserver/apserver/protocol"
)

func wait(w protocol.RunWaitingFor) *protocol.RunWaitingFor { return &w }

func TestTick(t *testing.T) {
	full := Settings{Mode: ModeFullAuto, BlueprintID: "bp", MaxParallelRuns: 2}
	with := func(f func(*Settings)) Settings { s := full; f(&s); return s }
	running := func(id string, tasks ...string) Run {
		return Run{ID: id, TaskIDs: tasks, Status: protocol.RunRunning}
	}
	tests := []struct {
		name    string
		in      State
		result  Result
		tasks   []string
		effects []Effect
	}{
		{"off is idle", State{Settings: with(func(s *Settings) { s.Mode = ModeOff }), Ready: []string{"a"}, Open: 1}, ResultIdle, nil, nil},
		{"unset mode is idle", State{Settings: Settings{BlueprintID: "bp"}, Ready: []string{"a"}, Open: 1}, ResultIdle, nil, nil},
		{"paused is idle", State{Settings: with(func(s *Settings) { s.Paused = true }), Ready: []string{"a"}, Open: 1}, ResultIdle, nil, nil},
		{"no blueprint", State{Settings: with(func(s *Settings) { s.BlueprintID = "" }), Ready: []string{"a"}, Open: 1}, ResultNothingToDo, nil, nil},
		{"starts the best ready task", State{Settings: full, Phase: "p1", Ready: []string{"b", "a"}, Open: 4}, ResultStartedRun, []string{"b"},
			[]Effect{{Kind: EffStartRun, BlueprintID: "bp", Phase: "p1", TaskIDs: []string{"b"}}}},
		{"never twice the same task", State{Settings: full, Phase: "p1", Ready: []string{"b", "a"}, Open: 4, Runs: []Run{running("r1", "b")}}, ResultStartedRun, []string{"a"},
			[]Effect{{Kind: EffStartRun, BlueprintID: "bp", Phase: "p1", TaskIDs: []string{"a"}}}},
		{"a failed run's task is not retried", State{Settings: full, Phase: "p1", Ready: []string{"b"}, Open: 4, Runs: []Run{{ID: "r1", TaskIDs: []string{"b"}, Status: protocol.RunFailed}}}, ResultNothingToDo, nil, nil},
		{"max parallel runs", State{Settings: full, Phase: "p1", Ready: []string{"c"}, Open: 4, Runs: []Run{running("r1", "a"), running("r2", "b")}}, ResultNothingToDo, nil, nil},
		{"default max is one", State{Settings: with(func(s *Settings) { s.MaxParallelRuns = 0 }), Phase: "p1", Ready: []string{"c"}, Open: 4, Runs: []Run{running("r1", "a")}}, ResultNothingToDo, nil, nil},
		{"finished runs free their slot", State{Settings: full, Phase: "p1", Ready: []string{"c"}, Open: 2, Runs: []Run{{ID: "r1", TaskIDs: []string{"a"}, Status: protocol.RunCompleted}, running("r2", "b")}}, ResultStartedRun, []string{"c"},
			[]Effect{{Kind: EffStartRun, BlueprintID: "bp", Phase: "p1", TaskIDs: []string{"c"}}}},
		{"nothing ready: dependencies not done", State{Settings: full, Phase: "p1", Open: 3}, ResultNothingToDo, nil, nil},
		{"phase done is marked once", State{Settings: full, Phase: "p1", Open: 0}, ResultNothingToDo, nil,
			[]Effect{{Kind: EffMarkPhaseDone, BlueprintID: "bp", Phase: "p1"}}},
		{"phase already marked", State{Settings: full, Phase: "p1", Open: 0, PhaseDone: true}, ResultNothingToDo, nil, nil},
		{"phase not done while a run is active", State{Settings: full, Phase: "p1", Open: 0, Runs: []Run{running("r1", "a")}}, ResultNothingToDo, nil, nil},
		{"full_auto approves its run's plan", State{Settings: full, Phase: "p1", Ready: []string{"c"}, Open: 3,
			Runs: []Run{{ID: "r1", TaskIDs: []string{"a"}, Status: protocol.RunWaiting, WaitingFor: wait(protocol.WaitPlanApproval)}}}, ResultAdvancedRun, nil,
			[]Effect{{Kind: EffApprovePlan, RunID: "r1"}}},
		{"semi_auto leaves the plan to a human", State{Settings: with(func(s *Settings) { s.Mode = ModeSemiAuto; s.MaxParallelRuns = 1 }), Phase: "p1", Ready: []string{"c"}, Open: 3,
			Runs: []Run{{ID: "r1", TaskIDs: []string{"a"}, Status: protocol.RunWaiting, WaitingFor: wait(protocol.WaitPlanApproval)}}}, ResultWaitingForApproval, nil, nil},
		{"a high-risk task waits for a human", State{Settings: with(func(s *Settings) { s.MaxParallelRuns = 1 }), Phase: "p1", Ready: []string{"c"}, Open: 3,
			Runs: []Run{{ID: "r1", TaskIDs: []string{"a"}, Status: protocol.RunWaiting, WaitingFor: wait(protocol.WaitTaskApproval)}}}, ResultWaitingForApproval, nil, nil},
		{"suggest starts nothing: it proposes", State{Settings: with(func(s *Settings) { s.Mode = ModeSuggest }), Phase: "p1", Ready: []string{"a"}, Open: 1}, ResultWaitingForApproval, []string{"a"},
			[]Effect{{Kind: EffPropose, BlueprintID: "bp", Phase: "p1", TaskIDs: []string{"a"}, ProposalID: ProposalID("bp", []string{"a"})}}},
		{"suggest proposes once", State{Settings: with(func(s *Settings) {
			s.Mode = ModeSuggest
			s.Proposal = &Proposal{ID: ProposalID("bp", []string{"a"}), TaskIDs: []string{"a"}}
		}), Phase: "p1", Ready: []string{"a"}, Open: 1}, ResultWaitingForApproval, []string{"a"}, nil},
		{"suggest: another task's approval starts nothing", State{Settings: with(func(s *Settings) {
			s.Mode = ModeSuggest
			s.Approved = []string{ProposalID("bp", []string{"b"}), ProposalID("bp2", []string{"a"})}
		}), Phase: "p1", Ready: []string{"a"}, Open: 1}, ResultWaitingForApproval, []string{"a"},
			[]Effect{{Kind: EffPropose, BlueprintID: "bp", Phase: "p1", TaskIDs: []string{"a"}, ProposalID: ProposalID("bp", []string{"a"})}}},
		{"suggest starts an approved proposal", State{Settings: with(func(s *Settings) {
			s.Mode = ModeSuggest
			s.Approved = []string{ProposalID("bp", []string{"a"})}
		}), Phase: "p1", Ready: []string{"a"}, Open: 1}, ResultStartedRun, []string{"a"},
			[]Effect{{Kind: EffStartRun, BlueprintID: "bp", Phase: "p1", TaskIDs: []string{"a"}, ProposalID: ProposalID("bp", []string{"a"})}}},
		{"suggest: an approved proposal waits for a budget", State{Settings: with(func(s *Settings) {
			s.Mode = ModeSuggest
			s.Budget.RunsPerDay = 1
			s.Approved = []string{ProposalID("bp", []string{"a"})}
		}), Phase: "p1", Ready: []string{"a"}, Open: 1, Spend: Spend{Runs: 1}}, ResultBudgetExhausted, nil, nil},
		{"runs per day", State{Settings: with(func(s *Settings) { s.Budget.RunsPerDay = 3 }), Phase: "p1", Ready: []string{"a"}, Open: 1, Spend: Spend{Runs: 3}}, ResultBudgetExhausted, nil, nil},
		{"tokens per day", State{Settings: with(func(s *Settings) { s.Budget.TokensPerDay = 100 }), Phase: "p1", Ready: []string{"a"}, Open: 1, Spend: Spend{Tokens: 100}}, ResultBudgetExhausted, nil, nil},
		{"cost per day", State{Settings: with(func(s *Settings) { s.Budget.CostPerDay = 1.5 }), Phase: "p1", Ready: []string{"a"}, Open: 1, Spend: Spend{Cost: 2}}, ResultBudgetExhausted, nil, nil},
		{"a dependency's run still active", State{Settings: full, Phase: "p1", Ready: []string{"b"}, Deps: map[string][]string{"b": {"a"}}, Open: 2,
			Runs: []Run{running("r1", "a")}}, ResultNothingToDo, nil, nil},
		{"under budget starts", State{Settings: with(func(s *Settings) { s.Budget.RunsPerDay = 3 }), Phase: "p1", Ready: []string{"a"}, Open: 1, Spend: Spend{Runs: 2}}, ResultStartedRun, []string{"a"},
			[]Effect{{Kind: EffStartRun, BlueprintID: "bp", Phase: "p1", TaskIDs: []string{"a"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Tick(tt.in)
			if d.Result != tt.result || !reflect.DeepEqual(d.TaskIDs, tt.tasks) || !reflect.DeepEqual(d.Effects, tt.effects) {
				t.Errorf("Tick(%+v) = %+v, want %s %v %v", tt.in, d, tt.result, tt.tasks, tt.effects)
			}
			if d.Reason == "" {
				t.Errorf("Tick(%+v): no reason", tt.in)
			}
		})
	}
}

// TestTickDiamond drives the core through a dependency diamond (a → b, c
// → d) with a fake blueprint: runs start in dependency order, never more
// than two at once, each task once, and the phase is marked done at the end.
func TestTickDiamond(t *testing.T) {
	deps := map[string][]string{"a": nil, "b": {"a"}, "c": {"a"}, "d": {"b", "c"}}
	order := []string{"a", "b", "c", "d"}
	done := map[string]bool{}
	var runs []Run
	started := map[string]int{}
	st := Settings{Mode: ModeFullAuto, BlueprintID: "bp", MaxParallelRuns: 2}
	state := func() State {
		s := State{Settings: st, Phase: "p1", Runs: runs}
		for _, id := range order {
			if done[id] {
				continue
			}
			s.Open++
			ok := true
			for _, d := range deps[id] {
				ok = ok && done[d]
			}
			if ok {
				s.Ready = append(s.Ready, id)
			}
		}
		return s
	}
	marked := false
	for step := 0; step < 50 && !marked; step++ {
		d := Tick(state())
		switch d.Result {
		case ResultStartedRun:
			id := d.TaskIDs[0]
			for _, dep := range deps[id] {
				if !done[dep] {
					t.Fatalf("started %s before its dependency %s is done", id, dep)
				}
			}
			started[id]++
			runs = append(runs, Run{ID: "r" + id, TaskIDs: d.TaskIDs, Status: protocol.RunRunning})
			n := 0
			for _, r := range runs {
				if r.Active() {
					n++
				}
			}
			if n > 2 {
				t.Fatalf("%d runs at once", n)
			}
		case ResultNothingToDo:
			if len(d.Effects) == 1 && d.Effects[0].Kind == EffMarkPhaseDone {
				marked = true
				break
			}
			// Finish the oldest active run: its task is done.
			for i := range runs {
				if runs[i].Active() {
					runs[i].Status = protocol.RunCompleted
					done[runs[i].TaskIDs[0]] = true
					break
				}
			}
		default:
			t.Fatalf("step %d: %+v", step, d)
		}
	}
	if !marked {
		t.Fatal("the phase was never marked done")
	}
	for _, id := range order {
		if started[id] != 1 || !done[id] {
			t.Errorf("task %s started %d times, done %v", id, started[id], done[id])
		}
	}
}

func TestSettingsValidate(t *testing.T) {
	for _, s := range []Settings{{Mode: "fast"}, {Mode: ModeOff, MaxParallelRuns: -1}, {Mode: ModeOff, Budget: Budget{RunsPerDay: -1}}} {
		if err := s.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", s)
		}
	}
	if err := (Settings{Mode: ModeFullAuto, MaxParallelRuns: 2}).Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}
