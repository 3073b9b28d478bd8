package projects

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apserver/apserver/manager"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// The wire side of the manager (docs/manager.md): project/settings/*,
// manager/tick, manager/explain and project/status.

func wireSettings(st manager.Settings) protocol.ProjectSettings {
	return protocol.ProjectSettings{Mode: string(st.Mode), BlueprintID: st.BlueprintID, Phase: st.Phase, Paused: st.Paused,
		MaxParallelRuns: st.MaxParallelRuns, DonePhases: st.DonePhases,
		Budget: protocol.ProjectBudget{TokensPerDay: st.Budget.TokensPerDay, CostPerDay: st.Budget.CostPerDay, RunsPerDay: st.Budget.RunsPerDay}}
}

func wireDecision(d manager.Decision) protocol.ManagerTickResult {
	return protocol.ManagerTickResult{Result: string(d.Result), Reason: d.Reason, RunID: d.RunID, TaskIDs: d.TaskIDs, ProposalID: d.ProposalID}
}

// SettingsRead implements project/settings/read.
func (s *Service) SettingsRead(ctx context.Context, p protocol.ProjectCwdParams) (protocol.ProjectSettingsResult, error) {
	if err := p.Validate(); err != nil {
		return protocol.ProjectSettingsResult{}, err
	}
	ws, _ := workspace(p.Cwd)
	st, err := s.settings(ctx, ws)
	return protocol.ProjectSettingsResult{Cwd: ws, Settings: wireSettings(st)}, err
}

// SettingsUpdate implements project/settings/update.
func (s *Service) SettingsUpdate(ctx context.Context, p protocol.ProjectSettingsUpdateParams) (protocol.ProjectSettingsResult, error) {
	if p.Cwd == "" {
		return protocol.ProjectSettingsResult{}, invalid("cwd: missing")
	}
	st, err := s.UpdateSettings(ctx, p.Cwd, func(st *manager.Settings) {
		if p.Mode != nil {
			st.Mode = manager.Mode(*p.Mode)
		}
		if p.BlueprintID != nil {
			st.BlueprintID = *p.BlueprintID
		}
		if p.Phase != nil {
			st.Phase = *p.Phase
		}
		if p.Paused != nil {
			st.Paused = *p.Paused
		}
		if p.MaxParallelRuns != nil {
			st.MaxParallelRuns = *p.MaxParallelRuns
		}
		if p.Budget != nil {
			st.Budget = manager.Budget{TokensPerDay: p.Budget.TokensPerDay, CostPerDay: p.Budget.CostPerDay, RunsPerDay: p.Budget.RunsPerDay}
		}
	})
	ws, _ := workspace(p.Cwd)
	return protocol.ProjectSettingsResult{Cwd: ws, Settings: wireSettings(st)}, err
}

// TickWire implements manager/tick.
func (s *Service) TickWire(ctx context.Context, p protocol.ProjectCwdParams) (protocol.ManagerTickResult, error) {
	if err := p.Validate(); err != nil {
		return protocol.ManagerTickResult{}, err
	}
	d, err := s.Tick(ctx, p.Cwd)
	if err != nil {
		return protocol.ManagerTickResult{}, err
	}
	return wireDecision(d), nil
}

// Status implements project/status.
func (s *Service) Status(ctx context.Context, p protocol.ProjectCwdParams) (protocol.ProjectStatusResult, error) {
	var out protocol.ProjectStatusResult
	if err := p.Validate(); err != nil {
		return out, err
	}
	ws, _ := workspace(p.Cwd)
	st, err := s.settings(ctx, ws)
	if err != nil {
		return out, err
	}
	out = protocol.ProjectStatusResult{Cwd: ws, Mode: string(st.Mode), Paused: st.Paused, BlueprintID: st.BlueprintID, Phase: st.Phase,
		Tasks: map[string]int{}, Runs: map[string]int{},
		Spend: protocol.ProjectSpend{Budget: wireSettings(st).Budget}}
	if p := st.Proposal; p != nil {
		out.Proposal = &protocol.ManagerProposal{ID: p.ID, TaskIDs: p.TaskIDs, Phase: p.Phase, SinceMs: p.At}
	}
	db, err := s.opts.Store()
	if err != nil {
		return out, err
	}
	ticks, err := db.ManagerTicks(ctx, ws, recentRows)
	if err != nil {
		return out, err
	}
	var last *manager.Decision
	for i := len(ticks) - 1; i >= 0; i-- {
		if ticks[i].Result == ResultIntent {
			continue
		}
		var r tickReceipt
		if err := json.Unmarshal(ticks[i].Decision, &r); err == nil {
			w := wireDecision(r.Decision)
			w.Error = r.Error
			out.LastTick, out.LastTickMs = &w, ticks[i].At
			last = &r.Decision
		}
		break
	}
	out.Recent = records(ticks, "", maxRecent)
	lastAt := out.LastTickMs
	if w := managerWait(ws, st, last, lastAt); w != nil {
		out.Attention = append(out.Attention, *w)
	}
	if st.BlueprintID != "" {
		in, err := s.state(ctx, ws, manager.Settings{Mode: manager.ModeSuggest, BlueprintID: st.BlueprintID, Phase: st.Phase})
		if err != nil {
			return out, err
		}
		w, err := s.opts.Blueprints.PhaseWork(ctx, st.BlueprintID, st.Phase)
		if err != nil {
			return out, err
		}
		for k, n := range w.Counts {
			out.Tasks[string(k)] = n
		}
		out.Phase = w.Phase
		out.PhaseDone = in.Open == 0 && containsStr(st.DonePhases, w.Phase)
		for _, r := range in.Runs {
			if r.ID != "" {
				out.Runs[string(r.Status)]++
			}
		}
		out.Spend.Runs, out.Spend.Tokens, out.Spend.Cost = in.Spend.Runs, in.Spend.Tokens, in.Spend.Cost
		out.Spend.CostUnknown, out.Spend.UnpricedModels = len(in.Spend.Unpriced) > 0, in.Spend.Unpriced
		out.Spend.Exhausted = manager.Exhausted(st.Budget, in.Spend)
		out.Attention = append(runWaits(in.Runs), out.Attention...)
	}
	return out, nil
}

func containsStr(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Explain implements manager/explain.
func (s *Service) Explain(ctx context.Context, p protocol.ProjectCwdParams) (protocol.ManagerExplainResult, error) {
	var out protocol.ManagerExplainResult
	if err := p.Validate(); err != nil {
		return out, err
	}
	ws, _ := workspace(p.Cwd)
	st, err := s.settings(ctx, ws)
	if err != nil {
		return out, err
	}
	if st.BlueprintID == "" {
		out.Summary = "The project has no active blueprint: set one with project/settings/update."
		return out, nil
	}
	mode := st.Mode
	st.Mode = manager.ModeSuggest // read the state even when off
	in, err := s.state(ctx, ws, st)
	if err != nil {
		return out, err
	}
	st.Mode = mode
	in.Settings = st
	out.Phase = in.Phase
	carried := map[string]bool{}
	for _, r := range in.Runs {
		for _, id := range r.TaskIDs {
			carried[id] = true
		}
		if r.ID == "" || !r.Active() {
			continue
		}
		ref := protocol.ProjectRunRef{RunID: r.ID, TaskIDs: r.TaskIDs, Status: r.Status, WaitingFor: r.WaitingFor}
		out.Runs = append(out.Runs, ref)
		if r.Status == protocol.RunWaiting || r.Status == protocol.RunPaused {
			out.Waiting = append(out.Waiting, ref)
		}
	}
	for _, id := range in.Ready {
		if !carried[id] {
			out.Next = append(out.Next, id)
		}
	}
	db, err := s.opts.Store()
	if err != nil {
		return out, err
	}
	rows, err := db.ManagerTicks(ctx, ws, recentRows)
	if err != nil {
		return out, err
	}
	out.Intents = records(rows, ResultIntent, maxRecent)
	d := manager.Tick(in)
	var b strings.Builder
	fmt.Fprintf(&b, "Mode %s, phase %s: %d tasks not done, %d ready (in the order blueprint/next gives: in-progress nodes, longest chain, priority, estimate), %d runs in progress, %d waiting for a human. ",
		mode, in.Phase, in.Open, len(out.Next), len(out.Runs), len(out.Waiting))
	fmt.Fprintf(&b, "A tick now would answer %s: %s.", d.Result, d.Reason)
	out.Summary = b.String()
	return out, nil
}

// recentRows is how many stored rows status and explain read back;
// maxRecent how many records they report.
const (
	recentRows = 100
	maxRecent  = 10
)

// records are the newest rows (ticks and intent routings; only those of
// result only when it is set) as the wire reports them, newest first.
func records(rows []store.ManagerTick, only string, max int) []protocol.ManagerRecord {
	var out []protocol.ManagerRecord
	for i := len(rows) - 1; i >= 0 && len(out) < max; i-- {
		t := rows[i]
		if only != "" && t.Result != only {
			continue
		}
		rec := protocol.ManagerRecord{Kind: "tick", Seq: t.Seq, AtMs: t.At}
		if t.Result == ResultIntent {
			var in intentInput
			var r intentReceipt
			if json.Unmarshal(t.Input, &in) != nil || json.Unmarshal(t.Decision, &r) != nil {
				continue
			}
			rec.Kind, rec.ThreadID, rec.Message, rec.Error = "intent", in.ThreadID, r.Message, r.Error
			rec.Intent, rec.Reason, rec.Result = string(r.Routing.Intent), r.Routing.Reason, r.Routing.Action
			if c := r.Classification; c != nil {
				rec.Confidence, rec.Target = c.Confidence, c.Target
			}
		} else {
			var r tickReceipt
			if json.Unmarshal(t.Decision, &r) != nil {
				continue
			}
			rec.Result, rec.Reason, rec.Error = string(r.Decision.Result), r.Decision.Reason, r.Error
			rec.RunID, rec.TaskIDs = r.Decision.RunID, r.Decision.TaskIDs
		}
		out = append(out, rec)
	}
	return out
}
