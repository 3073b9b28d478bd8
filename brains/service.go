// Package brains drives the project brain (docs/brain.md) over the store:
// decisions recorded, changed and revoked as events (project/decision/*),
// the projections .apserver/memory.md and .apserver/snapshot.md rewritten
// after a change (debounced) and at start for every project still marked
// dirty, the context block a stage or thread is given
// (project/context/preview), and the alignment check of an action — the
// rules of package brain, then the validator model for what they leave
// undecided (validated, asked again once, cached per action, each verdict
// returned with the record that replays it). It also records the
// decisions runs make (and confirms those a run's trust lets go on
// without a human; the proposed ones that wait on a human go to the
// attention summary), stores a run's section of memory.md where it owns
// the file (memory.md is rendered from the store: decisions, then the
// runs' sections), and keeps the threads' rolling summaries
// (project/summary/list).
//
// The decisions (transitions, rendering, ranking, rules) are package
// brain's; this package does the I/O. It imports brain, protocol, store,
// model and config; never server or session.
package brains

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
	"strings"
	"sync"
	"time"

	"github.com/apserver/apserver/brain"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/internal/clock"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// Files the projections are written to, relative to the project.
const (
	MemoryFile   = ".apserver/memory.md"
	SnapshotFile = ".apserver/snapshot.md"
)

// DefaultDebounce is how long projections wait for more changes.
const DefaultDebounce = 300 * time.Millisecond

// Options configure a Service.
type Options struct {
	Store  func() (*store.Store, error)
	Config config.Config
	Logger *slog.Logger
	// Debounce is the wait before projections are rewritten after a
	// change (DefaultDebounce when 0; negative: at once).
	Debounce time.Duration
	// Clock is the service's clock (package clock); nil means the real
	// one.
	Clock clock.Clock
	// Budgets are the context block's token budgets by role (planner,
	// implementer, reviewer, thread), over the configuration's ([brain]
	// budgets); a role in neither gets brain.DefaultBudget.
	Budgets map[string]int
	// Ask, when set, answers the validator instead of the configured
	// "validator" role's model (tests of the rules' second pass).
	Ask func(ctx context.Context, prompt string) (string, error)
	// HoldProjections, for tests of a crash, writes no projection: a
	// project stays marked as if the process had been killed before each
	// rewrite (cmd sets it from APSERVER_TEST_HOLD_PROJECTIONS).
	HoldProjections bool
	// Attention puts a project's proposed decisions that wait on a human
	// in the attention summary, or takes them out (nil); see SetAttention.
	Attention func(cwd string, it *protocol.AttentionItem)
}

// Service records decisions, keeps the projections and judges actions.
// Its methods are safe for concurrent use.
type Service struct {
	opts Options
	log  *slog.Logger
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	// edit serialises the read-modify-write of decisions.
	edit sync.Mutex
	// proj serialises the writes of projections.
	proj sync.Mutex

	mu     sync.Mutex
	timers map[string]*time.Timer // pending projections, by project
	cache  map[string]cachedVerdict
	// sentSets is the hash of the decisions each thread's last alignment
	// record held (AlignThread).
	sentSets map[string]string
	// excluded are the projects whose projections this process has
	// listed in git's exclude file (projection.go): once per project.
	excluded sync.Map
}

// New makes a Service. Call Restore at start and Close to stop.
func New(opts Options) *Service {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if opts.Debounce == 0 {
		opts.Debounce = DefaultDebounce
	}
	opts.Clock = clock.Or(opts.Clock)
	ctx, stop := context.WithCancel(context.Background())
	return &Service{opts: opts, log: opts.Logger, ctx: ctx, stop: stop, timers: map[string]*time.Timer{}, cache: map[string]cachedVerdict{}, sentSets: map[string]string{}}
}

// Close stops pending projections; the store keeps their projects
// marked, and the next start (Restore) writes them.
func (s *Service) Close() {
	s.stop()
	s.mu.Lock()
	for cwd, t := range s.timers {
		if t.Stop() { // it will never run: its wg.Done is ours
			s.wg.Done()
		}
		delete(s.timers, cwd)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Service) store() (*store.Store, error) {
	if s.opts.Store == nil {
		return nil, errors.New("brains: no store")
	}
	return s.opts.Store()
}

// Project is the key of a project: its directory, cleaned.
func Project(cwd string) string { return filepath.Clean(cwd) }

func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "dec_" + hex.EncodeToString(b[:])
}

func invalid(msg string) error {
	return protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: %s", msg)
}

// load returns a decision by id; an unknown id is a -32602 naming it.
func (s *Service) load(ctx context.Context, st *store.Store, id string) (protocol.ProjectDecision, error) {
	row, err := st.Decision(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return protocol.ProjectDecision{}, invalid(fmt.Sprintf("id: no decision %s", id))
	}
	if err != nil {
		return protocol.ProjectDecision{}, err
	}
	var d protocol.ProjectDecision
	if err := json.Unmarshal(row.Decision, &d); err != nil {
		return d, fmt.Errorf("brains: decision %s: %w", id, err)
	}
	return d, nil
}

// change applies events to decisions (cur, by id; nil for a new one) and
// stores them in one transaction; it returns the decisions after.
func (s *Service) change(ctx context.Context, st *store.Store, cwd string, cur map[string]*protocol.ProjectDecision, evs []brain.Event) (map[string]protocol.ProjectDecision, error) {
	out := map[string]protocol.ProjectDecision{}
	var changes []store.DecisionChange
	for _, ev := range evs {
		prev := cur[ev.ID]
		if d, ok := out[ev.ID]; ok {
			prev = &d
		}
		d, err := brain.Apply(prev, ev)
		if err != nil {
			if errors.Is(err, brain.ErrTransition) {
				return nil, protocol.Errorf(protocol.ErrInvalidRequest, "%v", err)
			}
			return nil, invalid(err.Error())
		}
		out[ev.ID] = d
		evRaw, _ := json.Marshal(ev)
		dRaw, _ := json.Marshal(d)
		changes = append(changes, store.DecisionChange{Row: store.DecisionRow{ID: d.ID, Cwd: cwd, Status: string(d.Status), Decision: dRaw, CreatedAt: d.CreatedAtMs}, Type: string(ev.Type), Event: evRaw})
	}
	if _, err := st.AppendDecisionEvents(ctx, cwd, changes, evs[len(evs)-1].AtMs); err != nil {
		return nil, err
	}
	s.forgetVerdicts()
	s.schedule(cwd)
	s.attend(ctx, cwd)
	return out, nil
}

// AddDecision implements project/decision/add.
func (s *Service) AddDecision(ctx context.Context, p protocol.ProjectDecisionAddParams) (protocol.ProjectDecisionResult, error) {
	return s.addDecision(ctx, p, "", "")
}

// addDecision is AddDecision for a run (runID, and taskID when a task's
// thread proposed it) or not ("").
func (s *Service) addDecision(ctx context.Context, p protocol.ProjectDecisionAddParams, runID, taskID string) (protocol.ProjectDecisionResult, error) {
	var res protocol.ProjectDecisionResult
	if err := p.Validate(); err != nil {
		return res, err
	}
	st, err := s.store()
	if err != nil {
		return res, err
	}
	cwd := Project(p.Cwd)
	s.edit.Lock()
	defer s.edit.Unlock()
	d := protocol.ProjectDecision{Cwd: cwd, Title: strings.TrimSpace(p.Title), Text: p.Text, Why: p.Why, Alternatives: p.Alternatives, Source: p.Source, Status: protocol.DecisionActive, RunID: runID, TaskID: taskID}
	if p.Scope != nil {
		d.Scope = *p.Scope
	}
	if p.Status != nil {
		d.Status = *p.Status
	}
	if d.Source == "" {
		d.Source = "user"
	}
	now := clock.Ms(s.opts.Clock)
	id := newID()
	evs := []brain.Event{{Type: brain.EventRecorded, ID: id, AtMs: now, Decision: &d}}
	cur := map[string]*protocol.ProjectDecision{}
	if p.Supersedes != "" {
		old, err := s.load(ctx, st, p.Supersedes)
		if err != nil {
			return res, err
		}
		if old.Cwd != cwd {
			return res, invalid(fmt.Sprintf("supersedes: decision %s belongs to another project", p.Supersedes))
		}
		if d.Status != protocol.DecisionActive {
			return res, invalid("supersedes: only an active decision can supersede another")
		}
		cur[old.ID] = &old
		evs = append(evs, brain.Event{Type: brain.EventSuperseded, ID: old.ID, AtMs: now, By: id})
	}
	out, err := s.change(ctx, st, cwd, cur, evs)
	if err != nil {
		return res, err
	}
	res.Decision = out[id]
	return res, nil
}

// UpdateDecision implements project/decision/update.
func (s *Service) UpdateDecision(ctx context.Context, p protocol.ProjectDecisionUpdateParams) (protocol.ProjectDecisionResult, error) {
	var res protocol.ProjectDecisionResult
	if err := p.Validate(); err != nil {
		return res, err
	}
	st, err := s.store()
	if err != nil {
		return res, err
	}
	s.edit.Lock()
	defer s.edit.Unlock()
	d, err := s.load(ctx, st, p.ID)
	if err != nil {
		return res, err
	}
	now := clock.Ms(s.opts.Clock)
	var evs []brain.Event
	patch := brain.Patch{Title: p.Title, Text: p.Text, Why: p.Why, Alternatives: p.Alternatives, Scope: p.Scope}
	if patch != (brain.Patch{}) {
		evs = append(evs, brain.Event{Type: brain.EventUpdated, ID: d.ID, AtMs: now, Patch: &patch})
	}
	if p.Status != nil && d.Status == protocol.DecisionProposed {
		evs = append(evs, brain.Event{Type: brain.EventConfirmed, ID: d.ID, AtMs: now, By: "user"})
	}
	if len(evs) == 0 {
		res.Decision = d
		return res, nil
	}
	out, err := s.change(ctx, st, d.Cwd, map[string]*protocol.ProjectDecision{d.ID: &d}, evs)
	if err != nil {
		return res, err
	}
	res.Decision = out[d.ID]
	return res, nil
}

// RevokeDecision implements project/decision/revoke.
func (s *Service) RevokeDecision(ctx context.Context, p protocol.ProjectDecisionRevokeParams) (protocol.ProjectDecisionResult, error) {
	var res protocol.ProjectDecisionResult
	if err := p.Validate(); err != nil {
		return res, err
	}
	st, err := s.store()
	if err != nil {
		return res, err
	}
	s.edit.Lock()
	defer s.edit.Unlock()
	d, err := s.load(ctx, st, p.ID)
	if err != nil {
		return res, err
	}
	out, err := s.change(ctx, st, d.Cwd, map[string]*protocol.ProjectDecision{d.ID: &d},
		[]brain.Event{{Type: brain.EventRevoked, ID: d.ID, AtMs: clock.Ms(s.opts.Clock), Reason: p.Reason}})
	if err != nil {
		return res, err
	}
	res.Decision = out[d.ID]
	return res, nil
}

// Decisions returns a project's decisions, oldest first.
func (s *Service) Decisions(ctx context.Context, cwd string) ([]protocol.ProjectDecision, error) {
	st, err := s.store()
	if err != nil {
		return nil, err
	}
	rows, err := st.Decisions(ctx, Project(cwd))
	if err != nil {
		return nil, err
	}
	out := make([]protocol.ProjectDecision, 0, len(rows))
	for _, r := range rows {
		var d protocol.ProjectDecision
		if err := json.Unmarshal(r.Decision, &d); err != nil {
			return nil, fmt.Errorf("brains: decision %s: %w", r.ID, err)
		}
		out = append(out, d)
	}
	brain.SortDecisions(out)
	return out, nil
}

// ListDecisions implements project/decision/list.
func (s *Service) ListDecisions(ctx context.Context, p protocol.ProjectDecisionListParams) (protocol.ProjectDecisionListResult, error) {
	res := protocol.ProjectDecisionListResult{Decisions: []protocol.ProjectDecision{}}
	if err := p.Validate(); err != nil {
		return res, err
	}
	ds, err := s.Decisions(ctx, p.Cwd)
	if err != nil {
		return res, err
	}
	for _, d := range ds {
		if p.All || d.Status == protocol.DecisionActive || d.Status == protocol.DecisionProposed {
			res.Decisions = append(res.Decisions, d)
		}
	}
	return res, nil
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
