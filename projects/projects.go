package projects

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/apserver/apserver/internal/clock"
	"github.com/apserver/apserver/manager"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// Runs is what the manager needs of the runner.
type Runs interface {
	// Start starts a run (run/start) and returns it.
	Start(ctx context.Context, p protocol.RunStartParams) (protocol.Run, error)
	// List returns the runs of a workspace (run/list).
	List(ctx context.Context, cwd string) ([]protocol.Run, error)
	// ApprovePlan approves a run's plan (run/plan/approve).
	ApprovePlan(ctx context.Context, runID string) error
}

// Blueprints is what the manager needs of the blueprints service.
type Blueprints interface {
	// PhaseWork returns a phase (the first unfinished one when phase is
	// empty) with its ready tasks and its tasks counted by status.
	PhaseWork(ctx context.Context, blueprintID, phase string) (manager.PhaseWork, error)
}

// Options configure a Service.
type Options struct {
	Store      func() (*store.Store, error)
	Runs       Runs
	Blueprints Blueprints
	// Clock is the service's clock (package clock); nil means the real one.
	Clock clock.Clock
	// Notify sends a notification to the clients (project/updated).
	Notify func(method string, params any)
	// Prices are the models' prices (the configuration's [prices]): the
	// cost of the runs' tokens against a cost budget.
	Prices map[string]manager.Price
	// Usage, when set, is where the runs' token usage is read for the
	// budgets (budget.go); nil means Store's table run_usage.
	Usage UsageSource
	Log   *slog.Logger
	// Intent configures intent from chat (intent.go).
	Intent IntentOptions
	// Attention, when set, puts (it != nil) or takes out what the
	// manager of a project waits on a human for in the attention summary
	// (a suggestion to approve, a budget spent, a pause); runs' own waits
	// are the runner's.
	Attention func(cwd string, it *protocol.AttentionItem)
}

// Service is the manager's driver. Its methods may be called from any
// goroutine.
type Service struct {
	opts Options

	// wake (1-buffered) makes the heartbeat tick now (Wake).
	wake chan struct{}

	mu    sync.Mutex
	locks map[string]chan struct{} // per workspace (1-buffered): ticks and settings updates
	// onWait, when set (tests), is called when a tick is about to wait
	// for the workspace's lock.
	onWait func()
	// lastDecision is each workspace's last tick's decision (attention.go).
	lastDecision map[string]manager.Decision
	// lastInput is each workspace's tick input last stored in full
	// (record).
	lastInput map[string]recordedInput
}

// New returns a Service.
func New(opts Options) *Service {
	opts.Clock = clock.Or(opts.Clock)
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{opts: opts, locks: map[string]chan struct{}{}, wake: make(chan struct{}, 1)}
}

// lock takes the workspace's lock and returns its unlock, or ctx's error.
func (s *Service) lock(ctx context.Context, cwd string) (func(), error) {
	s.mu.Lock()
	l := s.locks[cwd]
	if l == nil {
		l = make(chan struct{}, 1)
		s.locks[cwd] = l
	}
	onWait := s.onWait
	s.mu.Unlock()
	select {
	case l <- struct{}{}:
		return func() { <-l }, nil
	default:
	}
	if onWait != nil {
		onWait()
	}
	select {
	case l <- struct{}{}:
		return func() { <-l }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func invalid(format string, a ...any) error {
	return protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: "+format, a...)
}

// workspace is cwd made absolute and clean (the key of a project).
func workspace(cwd string) (string, error) {
	if cwd == "" {
		return "", invalid("cwd: missing")
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return "", invalid("cwd: %v", err)
	}
	return abs, nil
}

// Settings returns a workspace's settings (mode off when none were saved).
func (s *Service) Settings(ctx context.Context, cwd string) (manager.Settings, error) {
	ws, err := workspace(cwd)
	if err != nil {
		return manager.Settings{}, err
	}
	return s.settings(ctx, ws)
}

func (s *Service) settings(ctx context.Context, ws string) (manager.Settings, error) {
	st := manager.Settings{Mode: manager.ModeOff, MaxParallelRuns: manager.DefaultMaxParallelRuns}
	db, err := s.opts.Store()
	if err != nil {
		return st, err
	}
	b, ok, err := db.ProjectSettings(ctx, ws)
	if err != nil || !ok {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("project settings of %s: %w", ws, err)
	}
	return st, nil
}

// UpdateSettings applies update to a workspace's settings, validates and
// stores them, and returns them.
func (s *Service) UpdateSettings(ctx context.Context, cwd string, update func(*manager.Settings)) (manager.Settings, error) {
	ws, err := workspace(cwd)
	if err != nil {
		return manager.Settings{}, err
	}
	unlock, err := s.lock(ctx, ws)
	if err != nil {
		return manager.Settings{}, err
	}
	defer unlock()
	st, err := s.settings(ctx, ws)
	if err != nil {
		return st, err
	}
	old := st
	update(&st)
	if err := st.Validate(); err != nil {
		return old, invalid("%v", err)
	}
	if st.BlueprintID != old.BlueprintID || st.Phase != old.Phase {
		st.DonePhases = slices.DeleteFunc(st.DonePhases, func(p string) bool { return p == st.Phase && st.Phase != old.Phase })
	}
	if err := s.save(ctx, ws, st); err != nil {
		return old, err
	}
	s.attend(ws, st, nil, s.opts.Clock.Now())
	s.notify(ws)
	return st, nil
}

func (s *Service) save(ctx context.Context, ws string, st manager.Settings) error {
	db, err := s.opts.Store()
	if err != nil {
		return err
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return db.SaveProjectSettings(ctx, ws, b)
}

func (s *Service) notify(ws string) {
	if s.opts.Notify != nil {
		s.opts.Notify(protocol.NotifyProjectUpdated, protocol.ProjectUpdatedNotification{Cwd: ws})
	}
}

// dayStart is the start of now's day (UTC), in unix ms.
func dayStart(now time.Time) int64 {
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).UnixMilli()
}

// state gathers a tick's input for a workspace.
func (s *Service) state(ctx context.Context, ws string, st manager.Settings) (manager.State, error) {
	in := manager.State{Settings: st}
	if st.BlueprintID == "" || st.Mode == manager.ModeOff {
		return in, nil
	}
	w, err := s.opts.Blueprints.PhaseWork(ctx, st.BlueprintID, st.Phase)
	if err != nil {
		return in, fmt.Errorf("reading blueprint %s: %w", st.BlueprintID, err)
	}
	in.Phase, in.Ready, in.Deps, in.Open = w.Phase, w.Ready, w.Deps, w.Open()
	in.PhaseDone = slices.Contains(st.DonePhases, w.Phase)
	runs, err := s.opts.Runs.List(ctx, ws)
	if err != nil {
		return in, fmt.Errorf("listing runs: %w", err)
	}
	seen := map[string]bool{}
	ids := make([]string, 0, len(runs))
	for _, r := range runs {
		ids = append(ids, r.ID)
		if r.Blueprint == nil || r.Blueprint.BlueprintID != st.BlueprintID {
			continue
		}
		seen[r.ID] = true
		in.Runs = append(in.Runs, manager.Run{ID: r.ID, TaskIDs: r.Blueprint.TaskIDs, Status: r.Status, WaitingFor: r.WaitingFor})
	}
	db, err := s.opts.Store()
	if err != nil {
		return in, err
	}
	claims, err := db.ManagerClaims(ctx, ws)
	if err != nil {
		return in, err
	}
	today := dayStart(s.opts.Clock.Now())
	if in.Spend, err = s.usageSpend(ctx, db, ids, today); err != nil {
		return in, err
	}
	for _, c := range claims {
		if c.At >= today {
			in.Spend.Runs++
		}
		if c.BlueprintID == st.BlueprintID && (c.RunID == "" || !seen[c.RunID]) {
			// A task claimed whose run is not listed (a crash between
			// the claim and the run): carried, never started again.
			in.Runs = append(in.Runs, manager.Run{ID: c.RunID, TaskIDs: []string{c.TaskID}, Status: protocol.RunFailed})
		}
	}
	return in, nil
}

// Tick runs one tick of a workspace's manager (manager/tick): it decides
// on the workspace's state, applies the decision's effects and stores the
// tick. Ticks of a workspace run one at a time.
func (s *Service) Tick(ctx context.Context, cwd string) (manager.Decision, error) {
	ws, err := workspace(cwd)
	if err != nil {
		return manager.Decision{}, err
	}
	unlock, err := s.lock(ctx, ws)
	if err != nil {
		return manager.Decision{}, err
	}
	defer unlock()
	st, err := s.settings(ctx, ws)
	if err != nil {
		return manager.Decision{}, err
	}
	in, err := s.state(ctx, ws, st)
	if err != nil {
		return manager.Decision{}, err
	}
	if st.Phase == "" && in.Phase != "" && st.Mode != manager.ModeOff {
		// Pin the phase: once it is done the manager stops there rather
		// than going on to the next phase by itself.
		st.Phase = in.Phase
		in.Settings = st
		if err := s.save(ctx, ws, st); err != nil {
			return manager.Decision{}, err
		}
	}
	core := manager.Tick(in)
	d, err := s.apply(ctx, ws, &st, core)
	if err == nil {
		err = s.settleProposal(ctx, ws, &st, d)
	}
	if rerr := s.record(ctx, ws, in, core, d, err); rerr != nil && err == nil {
		err = rerr
	}
	s.attend(ws, st, &d, s.opts.Clock.Now())
	s.notify(ws)
	return d, err
}

// apply carries out a decision's effects.
func (s *Service) apply(ctx context.Context, ws string, st *manager.Settings, d manager.Decision) (manager.Decision, error) {
	db, err := s.opts.Store()
	if err != nil {
		return d, err
	}
	for _, e := range d.Effects {
		switch e.Kind {
		case manager.EffStartRun:
			for _, id := range e.TaskIDs {
				if err := db.ClaimTask(ctx, store.ManagerClaim{BlueprintID: e.BlueprintID, TaskID: id, Cwd: ws, At: s.opts.Clock.Now().UnixMilli()}); err != nil {
					if errors.Is(err, store.ErrClaimed) {
						return manager.Decision{Result: manager.ResultNothingToDo, Reason: fmt.Sprintf("task %s was started by an earlier tick", id)}, nil
					}
					return d, err
				}
			}
			r, err := s.opts.Runs.Start(ctx, protocol.RunStartParams{Cwd: ws,
				Blueprint: &protocol.RunBlueprintParams{BlueprintID: e.BlueprintID, TaskIDs: e.TaskIDs}})
			if err != nil {
				for _, id := range e.TaskIDs {
					if rerr := db.ReleaseClaim(ctx, e.BlueprintID, id); rerr != nil {
						s.opts.Log.Warn("releasing a task's claim", "task", id, "err", rerr)
					}
				}
				return d, fmt.Errorf("starting a run for tasks %v: %w", e.TaskIDs, err)
			}
			d.RunID = r.ID
			for _, id := range e.TaskIDs {
				if err := db.SetClaimRun(ctx, e.BlueprintID, id, r.ID); err != nil {
					return d, err
				}
			}
			if e.ProposalID != "" {
				// The approval is used up: the next proposal waits again.
				// (A copy: the tick's stored input shares the slice.)
				st.Approved = slices.DeleteFunc(slices.Clone(st.Approved), func(p string) bool { return p == e.ProposalID })
				if err := s.save(ctx, ws, *st); err != nil {
					return d, err
				}
			}
		case manager.EffPropose:
			st.Proposal = &manager.Proposal{ID: e.ProposalID, BlueprintID: e.BlueprintID, Phase: e.Phase, TaskIDs: e.TaskIDs, At: s.opts.Clock.Now().UnixMilli()}
			if err := s.save(ctx, ws, *st); err != nil {
				return d, err
			}
		case manager.EffApprovePlan:
			if err := s.opts.Runs.ApprovePlan(ctx, e.RunID); err != nil {
				return d, fmt.Errorf("approving the plan of run %s: %w", e.RunID, err)
			}
		case manager.EffMarkPhaseDone:
			if !slices.Contains(st.DonePhases, e.Phase) {
				st.DonePhases = append(st.DonePhases, e.Phase)
				if err := s.save(ctx, ws, *st); err != nil {
					return d, err
				}
			}
		}
	}
	return d, nil
}

// tickReceipt is a tick's decision as stored (its input is stored
// beside it, or a reference to the same input of an earlier tick: record):
// the core's decision, the decision as applied (a run's id
// filled, a claim lost to an earlier tick) and the error applying it.
type tickReceipt struct {
	Core     manager.Decision `json:"core"`
	Decision manager.Decision `json:"decision"`
	Error    string           `json:"error,omitempty"`
}

func (s *Service) record(ctx context.Context, ws string, in manager.State, core, d manager.Decision, applyErr error) error {
	db, err := s.opts.Store()
	if err != nil {
		return err
	}
	r := tickReceipt{Core: core, Decision: d}
	if applyErr != nil {
		r.Error = applyErr.Error()
	}
	db2, err := json.Marshal(r)
	if err != nil {
		return err
	}
	// Most ticks decide on the same input as the one before (nothing
	// changed): that input is stored once, and the ticks after it refer to
	// it (inputRef) instead of repeating its hundreds of task ids.
	s.mu.Lock()
	last, same := s.lastInput[ws]
	s.mu.Unlock()
	same = same && sameInput(last.in, in)
	var ib []byte
	var sum [sha256.Size]byte
	if same {
		ib, err = json.Marshal(storedInput{Ref: &inputRef{Seq: last.seq, SHA256: hex.EncodeToString(last.sum[:])}})
	} else {
		ib, err = json.Marshal(in)
		sum = sha256.Sum256(ib)
	}
	if err != nil {
		return err
	}
	t, err := db.AppendManagerTick(ctx, store.ManagerTick{Cwd: ws, Input: ib, Decision: db2, Result: string(d.Result), At: s.opts.Clock.Now().UnixMilli()})
	if err != nil || same {
		return err
	}
	s.mu.Lock()
	if s.lastInput == nil {
		s.lastInput = map[string]recordedInput{}
	}
	// in is not changed after its tick (every tick gathers a new one).
	s.lastInput[ws] = recordedInput{seq: t.Seq, sum: sum, in: in}
	s.mu.Unlock()
	return nil
}

// sameInput reports whether two tick inputs are equal (and so stored the
// same): reflect.DeepEqual, but the large ready list and dependencies are
// compared directly (DeepEqual on them is most of a tick's time).
func sameInput(a, b manager.State) bool {
	strs := func(x, y []string) bool { return (x == nil) == (y == nil) && slices.Equal(x, y) }
	if !strs(a.Ready, b.Ready) || (a.Deps == nil) != (b.Deps == nil) || !maps.EqualFunc(a.Deps, b.Deps, strs) {
		return false
	}
	a.Ready, a.Deps, b.Ready, b.Deps = nil, nil, nil, nil
	return reflect.DeepEqual(a, b)
}

// storedInput is a tick's input as stored when it is the same as an
// earlier tick's: a reference to that tick. A tick's input is otherwise
// the manager.State itself, which has no field "inputOf".
type storedInput struct {
	Ref *inputRef `json:"inputOf,omitempty"`
}

// inputRef names the earlier tick whose stored input (the JSON bytes,
// with this SHA-256) a tick decided on.
type inputRef struct {
	Seq    int64  `json:"seq"`
	SHA256 string `json:"sha256"`
}

// recordedInput is the input last stored in full for a workspace.
type recordedInput struct {
	seq int64
	sum [sha256.Size]byte
	in  manager.State
}

// tickInput is the input a stored tick decided on: its own, or the one it
// refers to among the ticks before it (by seq).
func tickInput(t store.ManagerTick, bySeq map[int64]store.ManagerTick) (manager.State, error) {
	var in manager.State
	var ref storedInput
	if err := json.Unmarshal(t.Input, &ref); err != nil {
		return in, err
	}
	raw := t.Input
	if r := ref.Ref; r != nil {
		base, ok := bySeq[r.Seq]
		if !ok || r.Seq >= t.Seq {
			return in, fmt.Errorf("its input is that of tick %d, which is not stored before it", r.Seq)
		}
		if sum := sha256.Sum256(base.Input); hex.EncodeToString(sum[:]) != r.SHA256 {
			return in, fmt.Errorf("its input is that of tick %d, whose stored input has another SHA-256", r.Seq)
		}
		raw = base.Input
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return in, err
	}
	return in, nil
}

// Replay decides again on every stored tick of a workspace and reports
// the ticks whose decision differs from the one stored (none: the
// manager's choices reproduce).
func (s *Service) Replay(ctx context.Context, cwd string) (ticks int, diffs []string, err error) {
	ws, err := workspace(cwd)
	if err != nil {
		return 0, nil, err
	}
	db, err := s.opts.Store()
	if err != nil {
		return 0, nil, err
	}
	all, err := db.ManagerTicks(ctx, ws, 0)
	if err != nil {
		return 0, nil, err
	}
	bySeq := make(map[int64]store.ManagerTick, len(all))
	for _, t := range all {
		bySeq[t.Seq] = t
	}
	for _, t := range all {
		if t.Result == ResultIntent {
			d, err := replayIntent(t)
			if err != nil {
				return 0, nil, fmt.Errorf("intent %d: %w", t.Seq, err)
			}
			if d != "" {
				diffs = append(diffs, d)
			}
			continue
		}
		var r tickReceipt
		in, err := tickInput(t, bySeq)
		if err != nil {
			return 0, nil, fmt.Errorf("tick %d: %w", t.Seq, err)
		}
		if err := json.Unmarshal(t.Decision, &r); err != nil {
			return 0, nil, fmt.Errorf("tick %d: %w", t.Seq, err)
		}
		again, err := json.Marshal(manager.Tick(in))
		if err != nil {
			return 0, nil, err
		}
		stored, err := json.Marshal(r.Core)
		if err != nil {
			return 0, nil, err
		}
		if string(again) != string(stored) {
			diffs = append(diffs, fmt.Sprintf("tick %d: stored %s, decided %s", t.Seq, stored, again))
		}
	}
	return len(all), diffs, nil
}
