package brains

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apserver/apserver/brain"
	"github.com/apserver/apserver/internal/ownfile"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/tools/gitwork"
)

// Touch marks a project's projections as out of date (a run finished, a
// blueprint changed) and schedules their rewrite. The mark is stored
// first, so a crash before the rewrite loses nothing.
func (s *Service) Touch(cwd string) {
	cwd = Project(cwd)
	st, err := s.store()
	if err == nil {
		_, err = st.MarkBrainDirty(s.ctx, cwd)
	}
	if err != nil {
		s.log.Warn("marking the brain's projections out of date", "cwd", cwd, "err", err)
		return
	}
	s.schedule(cwd)
	s.attend(s.ctx, cwd) // a run that ended leaves its proposed decisions to a human
}

// schedule rewrites a project's projections after the debounce; changes
// within it are written together.
func (s *Service) schedule(cwd string) {
	if s.opts.Debounce < 0 {
		s.flushLogged(cwd)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return
	}
	if t, ok := s.timers[cwd]; ok {
		if !t.Reset(s.opts.Debounce) {
			s.wg.Add(1) // it had fired: it runs once more
		}
		return
	}
	s.wg.Add(1)
	s.timers[cwd] = time.AfterFunc(s.opts.Debounce, func() {
		defer s.wg.Done()
		s.mu.Lock()
		delete(s.timers, cwd)
		s.mu.Unlock()
		if s.ctx.Err() == nil {
			s.flushLogged(cwd)
		}
	})
}

func (s *Service) flushLogged(cwd string) {
	if err := s.Flush(s.ctx, cwd); err != nil {
		s.log.Warn("writing the brain's projections", "cwd", cwd, "err", err)
	}
}

// Restore rewrites the projections of every project marked out of date:
// what a crash between a change and its projection left behind; and puts
// the proposed decisions that wait on a human back in the attention
// summary.
func (s *Service) Restore() {
	st, err := s.store()
	if err != nil {
		s.log.Warn("restoring the brain's projections", "err", err)
		return
	}
	dirty, err := st.BrainDirty(s.ctx)
	if err != nil {
		s.log.Warn("restoring the brain's projections", "err", err)
		return
	}
	for _, cwd := range sortedKeys(dirty) {
		s.flushLogged(cwd)
	}
	s.restoreAttention(s.ctx, st)
}

// Flush writes a project's projections now, from the store, and clears
// its mark (unless a change came in meanwhile).
func (s *Service) Flush(ctx context.Context, cwd string) error {
	cwd = Project(cwd)
	s.proj.Lock()
	defer s.proj.Unlock()
	st, err := s.store()
	if err != nil {
		return err
	}
	dirty, err := st.BrainDirty(ctx)
	if err != nil {
		return err
	}
	mark := dirty[cwd]
	state, err := s.State(ctx, cwd)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() || len(state.Decisions) == 0 {
		// The project is gone, or keeps no decisions (the brain is not in
		// use there: its projections would only be files in the user's
		// checkout that runs' merges trip over): nothing to write, nothing
		// to keep marked. project/snapshot/read still answers from the store.
		if mark > 0 {
			return st.ClearBrainDirty(ctx, cwd, mark)
		}
		return nil
	}
	if s.opts.HoldProjections {
		// A test's stand-in for a process killed before the projection:
		// nothing is written, the project stays marked.
		s.log.Info("brain projections held", "cwd", cwd)
		return nil
	}
	// The projections are the brain's files in the user's checkout, never
	// a run's: excluded locally, a run's merge that still brings one in (a
	// run that ended before the project kept decisions) replaces it instead
	// of stopping on an untracked file, and the next projection writes it
	// again.
	if _, done := s.excluded.Load(cwd); !done {
		if err := gitwork.ExcludeLocally(ctx, cwd, MemoryFile, SnapshotFile); err != nil {
			s.log.Warn("excluding the brain's projections from git", "cwd", cwd, "err", err)
		} else {
			s.excluded.Store(cwd, true)
		}
	}
	// (a link in its place is not read: its sections would reach the
	// store and every stage's context; the projection replaces it)
	old, _ := ownfile.Read(cwd, MemoryFile)
	// Sections a run wrote into the file before the store kept them are
	// adopted once; from then on the file is the store's projection.
	if err := st.AdoptRunSections(ctx, cwd, fileSections(string(old))); err != nil {
		return err
	}
	sections, err := st.RunSections(ctx, cwd)
	if err != nil {
		return err
	}
	if err := ownfile.Write(cwd, MemoryFile, []byte(MemoryText(state.Project, state.Decisions, sections))); err != nil {
		return err
	}
	if err := ownfile.Write(cwd, SnapshotFile, []byte(brain.Snapshot(state))); err != nil {
		return err
	}
	if mark > 0 {
		return st.ClearBrainDirty(ctx, cwd, mark)
	}
	return nil
}

// MemoryText is memory.md, a projection of the store: the decisions
// (brain.Memory), then the runs' sections ("## Run …", docs/runs.md),
// oldest first.
func MemoryText(project string, ds []protocol.ProjectDecision, sections []store.RunSection) string {
	return strings.TrimRight(brain.Memory(project, ds), "\n") + "\n" + memorySections(sections)
}

// State reads the snapshot's state of a project from the store: its
// decisions, its latest blueprint (the primary version's phases as goals,
// the first phase not done as the active one, tasks and their progress,
// high-risk nodes not done as risks) and its runs.
func (s *Service) State(ctx context.Context, cwd string) (brain.State, error) {
	cwd = Project(cwd)
	st, err := s.store()
	if err != nil {
		return brain.State{}, err
	}
	state := brain.State{Project: filepath.Base(cwd)}
	if state.Decisions, err = s.Decisions(ctx, cwd); err != nil {
		return state, err
	}
	bp, nodes, tasks, err := latestBlueprint(ctx, st, cwd)
	if err != nil {
		return state, err
	}
	if bp != nil {
		b := &brain.BlueprintState{ID: bp.ID, Title: bp.Title}
		if v, err := st.BlueprintVersion(ctx, bp.Primary); err == nil {
			b.Version = v.Number
		}
		for i := range nodes {
			n := &nodes[i]
			if n.Kind == protocol.KindPhase {
				state.Goals = append(state.Goals, fmt.Sprintf("%s (%s)", n.Title, n.Status))
				if b.Phase == nil && n.Status != protocol.NodeDone {
					b.Phase = n
				}
			}
			if n.Risk == protocol.NodeRiskHigh && n.Status != protocol.NodeDone && len(state.Risks) < 10 {
				state.Risks = append(state.Risks, fmt.Sprintf("node %s %q is high risk (%s)", n.ID, n.Title, n.Status))
			}
		}
		for _, t := range tasks {
			b.Total++
			if t.Status == protocol.NodeDone {
				b.Done++
			}
			state.Tasks = append(state.Tasks, brain.TaskState{ID: t.ID, NodeID: t.NodeID, Title: t.Title, Status: t.Status, Order: len(state.Tasks)})
		}
		state.Blueprint = b
	}
	rows, err := st.RunRows(ctx)
	if err != nil {
		return state, err
	}
	for _, r := range rows {
		if Project(r.Cwd) != cwd {
			continue
		}
		var run protocol.Run
		if json.Unmarshal(r.Run, &run) != nil {
			continue
		}
		rs := brain.RunState{ID: run.ID, Request: run.Request, Status: run.Status, Stage: run.Stage}
		if run.WaitingFor != nil {
			rs.WaitingFor = string(*run.WaitingFor)
		}
		if run.Reason != nil {
			rs.Reason = *run.Reason
		}
		state.Runs = append(state.Runs, rs)
	}
	return state, nil
}

// latestBlueprint is the project's most recently updated blueprint with
// its primary version's nodes and tasks (nil when it has none ready).
func latestBlueprint(ctx context.Context, st *store.Store, cwd string) (*store.BlueprintRow, []protocol.BlueprintNode, []protocol.BlueprintTask, error) {
	bps, err := st.Blueprints(ctx, cwd)
	if err != nil || len(bps) == 0 {
		return nil, nil, nil, err
	}
	best := bps[0]
	for _, b := range bps[1:] {
		if b.UpdatedAt > best.UpdatedAt || (b.UpdatedAt == best.UpdatedAt && b.ID > best.ID) {
			best = b
		}
	}
	return blueprintOf(ctx, st, best)
}

func blueprintOf(ctx context.Context, st *store.Store, bp store.BlueprintRow) (*store.BlueprintRow, []protocol.BlueprintNode, []protocol.BlueprintTask, error) {
	raws, err := st.BlueprintNodes(ctx, bp.Primary)
	if err != nil {
		return nil, nil, nil, err
	}
	nodes := make([]protocol.BlueprintNode, len(raws))
	for i, r := range raws {
		if err := json.Unmarshal(r, &nodes[i]); err != nil {
			return nil, nil, nil, fmt.Errorf("brains: node %d of %s: %w", i, bp.Primary, err)
		}
	}
	trows, err := st.BlueprintTasks(ctx, bp.Primary)
	if err != nil {
		return nil, nil, nil, err
	}
	tasks := make([]protocol.BlueprintTask, len(trows))
	for i, r := range trows {
		if err := json.Unmarshal(r.Task, &tasks[i]); err != nil {
			return nil, nil, nil, fmt.Errorf("brains: task %s of %s: %w", r.ID, bp.Primary, err)
		}
	}
	return &bp, nodes, tasks, nil
}

// SnapshotRead implements project/snapshot/read: the snapshot rendered
// from the store now (the same bytes .apserver/snapshot.md gets).
func (s *Service) SnapshotRead(ctx context.Context, p protocol.ProjectSnapshotReadParams) (protocol.ProjectSnapshotReadResult, error) {
	if err := p.Validate(); err != nil {
		return protocol.ProjectSnapshotReadResult{}, err
	}
	state, err := s.State(ctx, p.Cwd)
	if err != nil {
		return protocol.ProjectSnapshotReadResult{}, err
	}
	return protocol.ProjectSnapshotReadResult{Markdown: brain.Snapshot(state)}, nil
}
