package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/apserver/apserver/manager"
	"github.com/apserver/apserver/protocol"

	"github.com/apserver/apserver/blueprints"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/projects"
	"github.com/apserver/apserver/runner"
	"github.com/apserver/apserver/server"
	"github.com/apserver/apserver/session"
)

// newProjects makes the manager's driver (docs/manager.md) over the
// runner and the blueprints service; its notifications go to c.
func newProjects(cfg config.Config, mgr *session.Manager, rn *runner.Runner, bs *blueprints.Service, c interface{ Notify(string, any) }, log *slog.Logger) *projects.Service {
	ps := projects.New(projects.Options{Store: mgr.Store, Runs: server.RunnerRuns{Runner: rn}, Usage: rn, Blueprints: bs, Notify: c.Notify, Log: log,
		Intent: projects.IntentOptions{Tree: bs, Config: cfg}, Attention: mgr.SetProjectAttention, Prices: managerPrices(cfg)})
	mgr.SetIntentRouter(ps) // intent from chat in project threads
	rn.SetOnChange(ps.Wake) // a run's change wakes the heartbeat
	return ps
}

// managerPrices are the configuration's [prices] as the manager counts a
// cost budget with them.
func managerPrices(cfg config.Config) map[string]manager.Price {
	out := make(map[string]manager.Price, len(cfg.Prices))
	for m, p := range cfg.Prices {
		out[m] = manager.Price{InputPerMTok: p.InputPerMTok, CachedInputPerMTok: p.CachedInputPerMTok, OutputPerMTok: p.OutputPerMTok}
	}
	return out
}

// runProjectManager is `apserver project status|tick|autopilot` (the
// manager's verbs; docs/manager.md). It returns handled false for other
// verbs, so that the project command's other verbs can live elsewhere.
func runProjectManager(args []string) (handled bool, err error) {
	if len(args) == 0 {
		return false, nil
	}
	verb := args[0]
	switch verb {
	case "status", "tick", "autopilot", "replay", "approve":
	default:
		return false, nil
	}
	fs := flag.NewFlagSet("project "+verb, flag.ContinueOnError)
	var f serveFlags
	f.register(fs)
	cd := fs.String("cd", "", "the project's directory (default: the current directory)")
	mode := fs.String("mode", "", "autopilot: set the project's mode first (off, suggest, semi_auto, full_auto)")
	phase := fs.String("phase", "", "autopilot: build this phase (a phase's id or title)")
	bpID := fs.String("blueprint", "", "autopilot: the blueprint (default: the project's, else the newest of the directory)")
	maxPar := fs.Int("max-parallel-runs", 0, "autopilot: set max_parallel_runs first")
	runsPerDay := fs.Int("runs-per-day", -1, "autopilot: set the budget of runs a day first (0: no limit)")
	tokensPerDay := fs.Int64("tokens-per-day", -1, "autopilot: set the budget of tokens a day first (0: no limit)")
	costPerDay := fs.Float64("cost-per-day", -1, "autopilot: set the budget of cost (USD) a day first (0: no limit)")
	every := fs.Duration("interval", 500*time.Millisecond, "autopilot: how often to look at the runs while they work")
	jsonOut := fs.Bool("json", false, "status and tick: print the answer as JSON")
	fs.SetOutput(io.Discard)
	rest, err := parseInterspersed(fs, args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Print(`Usage: apserver project status|tick|autopilot [flags]

status     the project's mode, phase, last tick, tasks and runs by status, spend
tick       one tick of the manager (manager/tick)
approve    PROPOSAL_ID: approve suggest mode's pending proposal, then tick
           (manager/approve)
replay     decide again on every stored tick's input: exit 0 when every
           decision is the one stored, 1 listing those that differ
autopilot  [--mode full_auto] [--phase ID] [--blueprint ID] [--max-parallel-runs N]
           [--runs-per-day N] [--tokens-per-day N] [--cost-per-day USD]:
           ticks until the phase is done (exit 0) or needs a human (exit 5:
           a run waits, a budget is exhausted, the mode is off or paused) or
           cannot go on (exit 6: a run failed, tasks are blocked)

`)
			printFlags(os.Stdout, fs)
			return true, nil
		}
		fmt.Fprintf(os.Stderr, "apserver project %s: %s\n", verb, flagError(err))
		return true, errUsage
	}
	cwd := *cd
	if cwd == "" {
		if cwd, err = os.Getwd(); err != nil {
			return true, err
		}
	}
	cwd, _ = filepath.Abs(cwd)
	env, err := openRunEnv(&f, cwd, false)
	if err != nil {
		return true, err
	}
	defer env.Close()
	ps := projects.New(projects.Options{Store: env.mgr.Store, Runs: server.RunnerRuns{Runner: env.rn}, Usage: env.rn, Blueprints: env.bs, Log: env.log,
		Prices: managerPrices(env.cfg)})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	print := func(v any, text string) {
		if *jsonOut {
			b, _ := json.Marshal(v)
			fmt.Println(string(b))
			return
		}
		fmt.Println(text)
	}
	switch verb {
	case "status":
		s, err := ps.Status(ctx, protocol.ProjectCwdParams{Cwd: cwd})
		if err != nil {
			return true, err
		}
		last := "none"
		if s.LastTick != nil {
			last = s.LastTick.Result + ": " + s.LastTick.Reason
		}
		cost := fmt.Sprintf("%.4f USD", s.Spend.Cost)
		if s.Spend.CostUnknown {
			cost = fmt.Sprintf("unknown (at least %.4f USD; no price for %v)", s.Spend.Cost, s.Spend.UnpricedModels)
		}
		text := fmt.Sprintf("mode %s%s, blueprint %s, phase %s (done: %v)\nlast tick: %s\ntasks: %v\nruns: %v\nspend today: %d runs (budget %d), %d tokens (budget %d), cost %s (budget %g)",
			s.Mode, map[bool]string{true: " (paused)"}[s.Paused], s.BlueprintID, s.Phase, s.PhaseDone, last, s.Tasks, s.Runs,
			s.Spend.Runs, s.Spend.Budget.RunsPerDay, s.Spend.Tokens, s.Spend.Budget.TokensPerDay, cost, s.Spend.Budget.CostPerDay)
		if s.Spend.Exhausted != "" {
			text += "\nbudget exhausted: " + s.Spend.Exhausted
		}
		print(s, text)
		return true, nil
	case "replay":
		n, diffs, err := ps.Replay(ctx, cwd)
		if err != nil {
			return true, err
		}
		fmt.Printf("%d ticks replayed, %d differ\n", n, len(diffs))
		for _, d := range diffs {
			fmt.Println(d)
		}
		if len(diffs) > 0 {
			return true, &exitError{code: 1}
		}
		return true, nil
	case "approve":
		if len(rest) != 1 {
			fmt.Fprintln(os.Stderr, "apserver project approve: give the proposal's id (project status or tick shows it)")
			return true, errUsage
		}
		d, err := ps.ApproveWire(ctx, protocol.ManagerApproveParams{Cwd: cwd, ProposalID: rest[0]})
		if err != nil {
			return true, &exitError{code: 1, msg: plainError(err)}
		}
		print(d, tickLine(d))
		return true, nil
	case "tick":
		d, err := ps.TickWire(ctx, protocol.ProjectCwdParams{Cwd: cwd})
		if err != nil {
			return true, err
		}
		print(d, tickLine(d))
		return true, nil
	}
	// autopilot
	if _, err := ps.UpdateSettings(ctx, cwd, func(st *manager.Settings) {
		if *mode != "" {
			st.Mode = manager.Mode(*mode)
		}
		if *phase != "" {
			st.Phase = *phase
		}
		if *maxPar > 0 {
			st.MaxParallelRuns = *maxPar
		}
		if *bpID != "" {
			st.BlueprintID = *bpID
		}
		if *runsPerDay >= 0 {
			st.Budget.RunsPerDay = *runsPerDay
		}
		if *tokensPerDay >= 0 {
			st.Budget.TokensPerDay = *tokensPerDay
		}
		if *costPerDay >= 0 {
			st.Budget.CostPerDay = *costPerDay
		}
	}); err != nil {
		return true, &exitError{code: 1, msg: plainError(err)}
	}
	st, err := ps.Settings(ctx, cwd)
	if err != nil {
		return true, err
	}
	if st.BlueprintID == "" {
		id, err := pickBlueprint(ctx, env.bs, cwd, "")
		if err != nil {
			return true, err
		}
		if _, err := ps.UpdateSettings(ctx, cwd, func(st *manager.Settings) { st.BlueprintID = id }); err != nil {
			return true, err
		}
	}
	env.rn.Restore() // runs of an earlier process go on
	return true, autopilot(ctx, ps, cwd, *every)
}

func tickLine(d protocol.ManagerTickResult) string {
	s := d.Result + ": " + d.Reason
	if d.RunID != "" {
		s += " (run " + d.RunID + ")"
	}
	if d.ProposalID != "" && d.RunID == "" {
		s += " (proposal " + d.ProposalID + ")"
	}
	return s
}

// autopilot ticks the manager of cwd until its phase is done or a human
// must act; progress goes to stderr.
func autopilot(ctx context.Context, ps *projects.Service, cwd string, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	last := ""
	recheck := false // the last tick may have seen a run that ended before the status was read
	for {
		d, err := ps.Tick(ctx, cwd)
		if err != nil {
			return &exitError{code: 1, msg: plainError(err)}
		}
		line := tickLine(protocol.ManagerTickResult{Result: string(d.Result), Reason: d.Reason, RunID: d.RunID})
		if line != last {
			fmt.Fprintln(os.Stderr, "apserver project autopilot:", line)
			last = line
		}
		switch d.Result {
		case manager.ResultStartedRun, manager.ResultAdvancedRun:
			recheck = false
			continue
		case manager.ResultIdle, manager.ResultWaitingForApproval, manager.ResultBudgetExhausted:
			fmt.Println(line)
			return &exitError{code: exitRunWaiting}
		}
		s, err := ps.Status(ctx, protocol.ProjectCwdParams{Cwd: cwd})
		if err != nil {
			return err
		}
		if s.PhaseDone {
			fmt.Printf("phase %s done: %v\n", s.Phase, s.Tasks)
			return nil
		}
		active := 0
		for status, n := range s.Runs {
			if !protocol.RunStatus(status).Final() {
				active += n
			}
		}
		if active == 0 && !recheck {
			recheck = true // a run ended between the tick and the status: tick again first
			continue
		}
		recheck = false
		if active == 0 {
			fmt.Println(line)
			return &exitError{code: exitRunFailed, msg: fmt.Sprintf("phase %s cannot go on: %v; runs %v", s.Phase, s.Tasks, s.Runs)}
		}
		select {
		case <-ctx.Done():
			return &exitError{code: exitInterrupted}
		case <-t.C:
		}
	}
}

// heartbeat runs the manager's heartbeat (projects.Service.Heartbeat) at
// [manager]'s intervals until the returned stop is called; stop waits for
// it. An interval of 0 is no heartbeat.
func heartbeat(ctx context.Context, ps *projects.Service, mc config.ManagerConfig) (stop func()) {
	if mc.HeartbeatInterval <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ps.Heartbeat(ctx, mc.HeartbeatInterval, mc.HeartbeatMax)
	}()
	return func() { cancel(); <-done }
}
