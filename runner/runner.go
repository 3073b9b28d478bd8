package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/internal/clock"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runs"
	"github.com/apserver/apserver/session/port"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/tools/gitwork"
	"github.com/apserver/apserver/tools/sandbox"
)

// Options configure a Runner.
type Options struct {
	// Threads is the session's thread port: the runner drives threads
	// only through it.
	Threads port.Threads
	Store   func() (*store.Store, error)
	Config  config.Config
	// DataDir holds the runs' worktrees (DataDir/worktrees/<run id>).
	DataDir string
	Logger  *slog.Logger
	// Clock is the run loops' time and timers (package clock); nil means
	// the real one.
	Clock clock.Clock
	// Runs is the run event log; nil means the SQLite store (Store).
	Runs RunStore
	// Queue says where slow effects are carried out; nil means here
	// (InProcess).
	Queue WorkQueue
	// Local, if set, maps a run's configuration to this process's
	// repository and worktree (a cluster worker's cache, remote.go).
	Local func(runs.Config) runs.Config
	// Push, if set, publishes a run's branch after each of its commits
	// (and the base after a merge): a cluster worker pushes to the
	// project's remote (remote.go).
	Push func(ctx context.Context, cfg runs.Config, merged bool) error
	// Merging, if set, is called before a run merges into its base and
	// the function it returns once the merge is over: a cluster worker
	// takes the project's merge lock and fetches the base (remote.go).
	Merging func(ctx context.Context, cfg runs.Config) (func(), error)
	// OnClose, if set, runs at the end of Close (it closes what the
	// RunStore holds open).
	OnClose func()
	// Brain, when set, gives each stage the project's context block and
	// hears of runs that end (brain.go).
	Brain Brain
	// Getenv reads the environment (the GitHub token); nil means
	// os.Getenv.
	Getenv func(string) string
}

// Runner drives runs: one goroutine per run owns its runs.Machine, stores
// each event before it applies the event's effects, and runs the slow
// effects (git, threads, checks) on goroutines of their own that post
// their results back as events.
type Runner struct {
	opts    Options
	threads port.Threads
	log     *slog.Logger
	ctx     context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup

	// slotMu guards the slots of max_parallel_runs: free ones, and the
	// runs waiting for one, in order (each run's hasSlot and granted too).
	slotMu sync.Mutex
	free   int
	queue  []*run

	// revertMu makes run/revert and run/task/revert one at a time.
	revertMu sync.Mutex

	mu       sync.Mutex
	active   map[string]*run // runs with a loop
	restored bool
	// blueprints is the blueprints service (SetBlueprints; blueprint.go).
	blueprints Blueprints
	// onChange hears of runs' changes (SetOnChange; changes.go).
	onChange func(cwd string)
}

// New makes a Runner. Call Restore once the client is ready to take up the
// runs of an earlier process.
func New(opts Options) *Runner {
	ctx, cancel := context.WithCancel(context.Background())
	n := opts.Config.Runs.MaxParallel
	if n <= 0 {
		n = config.DefaultMaxParallelRuns
	}
	opts.Clock = clock.Or(opts.Clock)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if opts.Runs == nil {
		opts.Runs = SQLiteRuns{Open: opts.Store}
	}
	if opts.Queue == nil {
		opts.Queue = InProcess{}
	}
	// The GitHub token's variable, whatever its name, never reaches a
	// command an agent runs.
	sandbox.HideEnv(opts.Config.GitHub.TokenEnv)
	return &Runner{opts: opts, threads: opts.Threads, log: opts.Logger, ctx: ctx, stop: cancel,
		free: n, active: map[string]*run{}}
}

// Close stops every run's goroutines; what they did is stored, and the
// next process takes it up (Restore).
func (rn *Runner) Close() {
	rn.stop()
	rn.wg.Wait()
	if rn.opts.OnClose != nil {
		rn.opts.OnClose()
	}
}

func notFound(id string) error {
	return protocol.Errorf(protocol.ErrInvalidRequest, "run not found: %s", id)
}

func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Start implements run/start: the run, once its start is stored.
func (rn *Runner) Start(p protocol.RunStartParams) Call[protocol.Run] {
	return func(ctx context.Context, then func(protocol.Run, error)) {
		if err := p.Validate(); err != nil {
			then(protocol.Run{}, err)
			return
		}
		p := p // fromBlueprint fills it in; a Call may be made again
		go func() {
			var (
				link    *protocol.RunBlueprint
				tasks   []protocol.PlanTask
				summary string
			)
			if p.Blueprint != nil {
				var err error
				if link, tasks, summary, err = rn.fromBlueprint(ctx, &p); err != nil {
					then(protocol.Run{}, err)
					return
				}
			}
			c, err := rn.config(ctx, p)
			if err != nil {
				then(protocol.Run{}, err)
				return
			}
			if link != nil {
				c.Blueprint, c.Tasks, c.Summary = link, tasks, summary
				(&run{rn: rn}).markForbidden(c, c.Tasks)
			}
			x := rn.spawn(c.ID, runs.New(), 0)
			x.restored = true // a new run has nothing to take up
			ev := runs.Event{Type: runs.EvStarted, Config: &c}
			x.do(ev, func(err error) {
				if err != nil {
					then(protocol.Run{}, err)
					return
				}
				then(x.m.Run(), nil)
			})
		}()
	}
}

// config is a new run's configuration: run/start's params over [runs].
func (rn *Runner) config(ctx context.Context, p protocol.RunStartParams) (runs.Config, error) {
	rc := rn.opts.Config.Runs
	abs, err := filepath.Abs(p.Cwd)
	if err != nil {
		return runs.Config{}, protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: cwd: %v", err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return runs.Config{}, protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: cwd %s is not a directory", abs)
	}
	repo, err := gitwork.Open(ctx, abs)
	if err != nil {
		return runs.Config{}, protocol.Errorf(protocol.ErrInvalidRequest, "cwd %s is not in a git repository with a commit: %v", abs, err)
	}
	base := ""
	if p.BaseBranch != nil {
		base = *p.BaseBranch
	} else if base, err = repo.CurrentBranch(ctx); err != nil || base == "" {
		return runs.Config{}, protocol.Errorf(protocol.ErrInvalidRequest, "cwd %s has no branch checked out: pass baseBranch", abs)
	}
	if ok, err := repo.HasCommit(ctx); err == nil && !ok {
		return runs.Config{}, protocol.Errorf(protocol.ErrInvalidParams,
			"Invalid params: cwd: the repository %s has no commit yet; a run branches from a commit, so make a first commit (git commit) and start the run again", repo.Root())
	}
	if _, err := repo.HeadSHA(ctx, "refs/heads/"+base); err != nil {
		return runs.Config{}, protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: baseBranch %q is not a branch of %s", base, repo.Root())
	}
	id := newID()
	c := runs.Config{
		ID: id, Request: p.Request, Cwd: repo.Root(), BaseBranch: base,
		Branch:   gitwork.BranchName(id, p.Request),
		Worktree: filepath.Join(rn.opts.DataDir, "worktrees", id),
		Trust: protocol.RunTrust{Planning: protocol.Trust(rc.TrustPlanning), Implementation: protocol.Trust(rc.TrustImplementation),
			Fixes: protocol.Trust(rc.TrustFixes)},
		Autonomy: protocol.Autonomy(rc.Autonomy), Merge: protocol.MergeMode(rc.Merge), MaxClarifications: rc.MaxClarifications,
		MaxRetries: 3,
		GitHub:     rn.githubConfig(ctx, repo.Root()),
	}
	if t := p.Trust; t != nil {
		for _, o := range []struct {
			v   *protocol.Trust
			dst *protocol.Trust
		}{{t.Planning, &c.Trust.Planning}, {t.Implementation, &c.Trust.Implementation}, {t.Fixes, &c.Trust.Fixes}} {
			if o.v != nil {
				*o.dst = *o.v
			}
		}
	}
	if p.Autonomy != nil {
		c.Autonomy = *p.Autonomy
	}
	if p.Merge != nil {
		c.Merge = *p.Merge
	}
	if p.MaxClarifications != nil {
		c.MaxClarifications = *p.MaxClarifications
	}
	role := func(name string, o *string) *string {
		if o != nil && *o != "" {
			return o
		}
		if r, ok := rn.opts.Config.Roles[name]; ok && r.Model != "" {
			m := r.Model
			return &m
		}
		return nil
	}
	var mp protocol.RunModelsParams
	if p.Models != nil {
		mp = *p.Models
	}
	c.Models = protocol.RunModels{Planner: role("planner", mp.Planner), Implementer: role("implementer", mp.Implementer),
		Validator: role("validator", mp.Validator)}
	return c, nil
}

// find returns the run's loop, loading a stored run that has none yet.
func (rn *Runner) find(ctx context.Context, id string) (*run, error) {
	rn.mu.Lock()
	x := rn.active[id]
	rn.mu.Unlock()
	if x != nil {
		return x, nil
	}
	m, seq, err := rn.replayLog(ctx, id)
	if err != nil {
		return nil, err
	}
	rn.mu.Lock()
	if y := rn.active[id]; y != nil { // lost a race
		rn.mu.Unlock()
		return y, nil
	}
	rn.mu.Unlock()
	return rn.spawn(id, m, seq), nil
}

// replay rebuilds a stored run from its events.
func (rn *Runner) replay(ctx context.Context, id string) (*runs.Machine, error) {
	m, _, err := rn.replayLog(ctx, id)
	return m, err
}

// replayLog is replay, and the sequence number of the run's last event.
func (rn *Runner) replayLog(ctx context.Context, id string) (*runs.Machine, int64, error) {
	evs, err := rn.opts.Runs.RunEvents(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, notFound(id)
	}
	if err != nil {
		return nil, 0, err
	}
	log, err := decode(id, evs)
	if err != nil {
		return nil, 0, err
	}
	var seq int64
	if len(evs) > 0 {
		seq = evs[len(evs)-1].Seq
	}
	return runs.Replay(log), seq, nil
}

// Restore takes up the runs of an earlier process: each run not over is
// replayed and the work it had in flight asked for again (runs.Restore).
// It runs once; later calls do nothing.
func (rn *Runner) Restore() {
	rn.mu.Lock()
	if rn.restored {
		rn.mu.Unlock()
		return
	}
	rn.restored = true
	rn.mu.Unlock()
	if _, ok := rn.shared(); ok {
		// Other processes drive runs of a shared log: taking up every
		// run not over would do their work twice. A run whose process
		// died is taken up by asking for it (TakeUp, run/resume), or by
		// the cluster's lease keeper (cluster.KeepDriving).
		return
	}
	rn.Tidy()
	go func() {
		rows, err := rn.opts.Runs.RunRows(rn.ctx)
		if err != nil {
			rn.log.Error("restoring runs", "err", err)
			return
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].CreatedAt < rows[j].CreatedAt })
		for _, row := range rows {
			st := protocol.RunStatus(row.Status)
			if st == protocol.RunCompleted || st == protocol.RunCancelled {
				continue
			}
			x, err := rn.find(rn.ctx, row.ID)
			if err != nil {
				rn.log.Error("restoring run", "run", row.ID, "err", err)
				continue
			}
			x.post(func() {
				if !x.restored {
					x.restored = true
					x.apply(x.m.Restore(rn.now()))
				}
			})
		}
	}()
}

// TakeUp takes up one stored run, as Restore does for all: the run is
// replayed and the work it had in flight asked for again. The answer is
// the run as it stands; a run that is over is only read.
func (rn *Runner) TakeUp(id string) Call[protocol.Run] {
	return func(ctx context.Context, then func(protocol.Run, error)) {
		go func() {
			m, err := rn.replay(ctx, id)
			if err != nil {
				then(protocol.Run{}, err)
				return
			}
			if st := m.Run().Status; st == protocol.RunCompleted || st == protocol.RunCancelled {
				then(m.Run(), nil)
				return
			}
			x, err := rn.find(ctx, id)
			if err != nil {
				then(protocol.Run{}, err)
				return
			}
			x.ask(func() {
				if !x.restored {
					x.restored = true
					x.apply(x.m.Restore(rn.now()))
				}
				then(x.m.Run(), nil)
			}, func() {
				then(protocol.Run{}, fmt.Errorf("taking up run %s: the runner is closing", id))
			})
		}()
	}
}

// List implements run/list: the stored runs (of p.Cwd, when set).
func (rn *Runner) List(p protocol.RunListParams) Call[[]protocol.Run] {
	return func(ctx context.Context, then func([]protocol.Run, error)) {
		go func() {
			rows, err := rn.opts.Runs.RunRows(ctx)
			if err != nil {
				then(nil, err)
				return
			}
			out := []protocol.Run{}
			for _, row := range rows {
				if p.Cwd != nil && *p.Cwd != "" {
					if abs, _ := filepath.Abs(*p.Cwd); abs != row.Cwd && *p.Cwd != row.Cwd {
						continue
					}
				}
				var r protocol.Run
				if err := json.Unmarshal(row.Run, &r); err != nil {
					rn.log.Error("run/list: a stored run does not decode", "run", row.ID, "err", err)
					continue
				}
				out = append(out, r)
			}
			then(out, nil)
		}()
	}
}

// Read implements run/read: the run rebuilt from its stored events (the
// live machine of a run being driven is the same state).
func (rn *Runner) Read(p protocol.RunParams) Call[protocol.Run] {
	return func(ctx context.Context, then func(protocol.Run, error)) {
		if err := p.Validate(); err != nil {
			then(protocol.Run{}, err)
			return
		}
		go func() {
			m, err := rn.replay(ctx, p.RunID)
			if err != nil {
				then(protocol.Run{}, err)
				return
			}
			then(m.Run(), nil)
		}()
	}
}

// human is the call that applies a human's event (an approval, an
// answer, pause, resume, cancel) to run id and answers the run: valid
// checks the params first, ev builds the event from them.
func (rn *Runner) human(valid interface{ Validate() error }, id string, ev func() runs.Event) Call[protocol.Run] {
	return func(ctx context.Context, then func(protocol.Run, error)) {
		if err := valid.Validate(); err != nil {
			then(protocol.Run{}, err)
			return
		}
		rn.apply(ctx, id, ev(), then)
	}
}

// apply applies ev to run id and answers {run}.
func (rn *Runner) apply(ctx context.Context, id string, ev runs.Event, then func(protocol.Run, error)) {
	go func() {
		rn.mu.Lock()
		live := rn.active[id] != nil
		rn.mu.Unlock()
		if !live {
			// A run that is over needs no loop to refuse a request.
			m, err := rn.replay(ctx, id)
			if err != nil {
				then(protocol.Run{}, err)
				return
			}
			if st := m.Run().Status; st == protocol.RunCompleted || st == protocol.RunCancelled {
				err := m.Accepts(ev)
				if err == nil {
					err = protocol.Errorf(protocol.ErrInvalidRequest, "run %s is %s", id, st)
				}
				then(protocol.Run{}, err)
				return
			}
		}
		x, err := rn.find(ctx, id)
		if err != nil {
			then(protocol.Run{}, err)
			return
		}
		x.do(ev, func(err error) {
			if err != nil {
				then(protocol.Run{}, err)
				return
			}
			then(x.m.Run(), nil)
		})
	}()
}

// PlanUpdate implements run/plan/update.
func (rn *Runner) PlanUpdate(p protocol.RunPlanUpdateParams) Call[protocol.Run] {
	return rn.human(&p, p.RunID, func() runs.Event { return runs.Event{Type: runs.EvPlanUpdated, Tasks: p.Tasks} })
}

// PlanApprove implements run/plan/approve.
func (rn *Runner) PlanApprove(p protocol.RunParams) Call[protocol.Run] {
	return rn.human(&p, p.RunID, func() runs.Event { return runs.Event{Type: runs.EvPlanApproved} })
}

// PlanReject implements run/plan/reject.
func (rn *Runner) PlanReject(p protocol.RunPlanRejectParams) Call[protocol.Run] {
	return rn.human(&p, p.RunID, func() runs.Event { return runs.Event{Type: runs.EvPlanRejected, Text: p.Feedback} })
}

// TaskApprove implements run/task/approve.
func (rn *Runner) TaskApprove(p protocol.RunTaskApproveParams) Call[protocol.Run] {
	return rn.human(&p, p.RunID, func() runs.Event {
		d := protocol.TaskDecisionApprove
		if p.Decision != nil {
			d = *p.Decision
		}
		return runs.Event{Type: runs.EvTaskApproved, TaskID: p.TaskID, Decision: d}
	})
}

// ClarificationAnswer implements run/clarification/answer.
func (rn *Runner) ClarificationAnswer(p protocol.RunClarificationAnswerParams) Call[protocol.Run] {
	return rn.human(&p, p.RunID, func() runs.Event {
		return runs.Event{Type: runs.EvClarificationAnswered, ID: p.ClarificationID, Text: p.Answer}
	})
}

// RepairApprove implements run/repair/approve.
func (rn *Runner) RepairApprove(p protocol.RunRepairApproveParams) Call[protocol.Run] {
	return rn.human(&p, p.RunID, func() runs.Event {
		ev := runs.Event{Type: runs.EvRepairApproved, TaskID: p.TaskID}
		if p.Task != nil {
			ev.Tasks = []protocol.PlanTask{*p.Task}
		}
		return ev
	})
}

// Pause implements run/pause.
func (rn *Runner) Pause(p protocol.RunParams) Call[protocol.Run] {
	return rn.human(&p, p.RunID, func() runs.Event { return runs.Event{Type: runs.EvPaused} })
}

// Resume implements run/resume.
func (rn *Runner) Resume(p protocol.RunParams) Call[protocol.Run] {
	return rn.human(&p, p.RunID, func() runs.Event { return runs.Event{Type: runs.EvResumed} })
}

// Cancel implements run/cancel.
func (rn *Runner) Cancel(p protocol.RunParams) Call[protocol.Run] {
	return rn.human(&p, p.RunID, func() runs.Event { return runs.Event{Type: runs.EvCancelled} })
}

// now is the Runner's clock in unix ms, the time the run machine takes.
func (rn *Runner) now() int64 { return clock.Ms(rn.opts.Clock) }
