package blueprints

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/apserver/apserver/blueprint"
	"github.com/apserver/apserver/manager"
	"github.com/apserver/apserver/protocol"
)

// PhaseWork is what the manager (docs/manager.md) reads of a blueprint: a
// phase of the primary version (the first unfinished one when phase is
// empty) with every ready task, best first (blueprint.Next), and the
// phase's work counted by status. It implements projects.Blueprints.
//
// The manager asks on every tick, mostly of a blueprint that has not
// changed since, so the answer is cached (workCache) under what it is
// computed from: the primary version, the decoded tree (an edit in this
// process replaces it) and the blueprint's event seq (every write of its
// nodes or tasks, by any process, appends an event). The seq is read
// before the tree and the tasks, so a cached answer is never older than
// its key: a task marked done is never offered again from the cache.
func (s *Service) PhaseWork(ctx context.Context, bpID, phase string) (manager.PhaseWork, error) {
	var w manager.PhaseWork
	st, err := s.store()
	if err != nil {
		return w, err
	}
	if bpID == "" {
		return w, protocol.MissingField("blueprintId")
	}
	seq, err := st.BlueprintEventSeq(ctx, bpID)
	if err != nil {
		return w, err
	}
	_, v, err := s.version(ctx, st, bpID, "")
	if err != nil {
		return w, err
	}
	t, err := s.tree(ctx, st, v)
	if err != nil {
		return w, err
	}
	key := workKey{blueprint: bpID, version: v.ID, phase: phase, seq: seq, tree: t}
	if w, ok := s.work.get(key); ok {
		return w, nil
	}
	tasks, err := s.tasks(ctx, st, v.ID)
	if err != nil {
		return w, err
	}
	w, err = phaseWork(blueprint.WithTasks(t, tasks), phase)
	if err != nil {
		return w, err
	}
	s.work.put(key, w)
	return cloneWork(w), nil
}

// phaseWork computes PhaseWork's answer on a tree with its tasks.
func phaseWork(wt *blueprint.Tree, phase string) (manager.PhaseWork, error) {
	var w manager.PhaseWork
	page, err := blueprint.Next(wt, blueprint.NextOptions{Phase: phase, Limit: blueprint.MaxNextLimit})
	switch {
	case errors.Is(err, blueprint.ErrUnknownPhase):
		return w, invalid("phase: %v", err)
	case err != nil:
		return w, err
	}
	w.Phase = page.Phase
	w.Deps = map[string][]string{}
	for _, x := range page.Tasks {
		w.Ready = append(w.Ready, x.Node.ID)
		if len(x.Node.DependsOn) > 0 {
			w.Deps[x.Node.ID] = x.Node.DependsOn
		}
	}
	// The phase's work: its task leaves (its leaves when there are no tasks).
	nodes := wt.Nodes
	hasTasks := false
	for _, n := range nodes {
		hasTasks = hasTasks || n.Kind == protocol.KindTask
	}
	lo, hi := 0, len(nodes)
	if w.Phase != "" {
		// The phase's position (the last node of that id, as Index has
		// it), without building an index of the whole tree.
		i := -1
		for j := range nodes {
			if nodes[j].ID == w.Phase {
				i = j
			}
		}
		if i >= 0 {
			lo, hi = i, i+1
			for hi < len(nodes) && nodes[hi].Depth > nodes[i].Depth {
				hi++
			}
		}
	}
	w.Counts = map[protocol.NodeStatus]int{}
	for i := lo; i < hi; i++ {
		leaf := i+1 >= len(nodes) || nodes[i+1].Depth <= nodes[i].Depth
		if leaf && (!hasTasks || nodes[i].Kind == protocol.KindTask) {
			w.Counts[nodes[i].Status]++
		}
	}
	return w, nil
}

// workKey is what a PhaseWork answer is computed from.
type workKey struct {
	blueprint, version, phase string
	seq                       int64
	tree                      *blueprint.Tree
}

// maxCachedWork bounds the answers kept (a few projects, a phase each).
const maxCachedWork = 8

// workCache holds PhaseWork's newest answers, newest last. An answer is
// never handed out itself: callers get a copy they may change.
type workCache struct {
	mu      sync.Mutex
	entries []workEntry
}

type workEntry struct {
	key  workKey
	work manager.PhaseWork
}

func (c *workCache) get(k workKey) (manager.PhaseWork, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.key == k {
			return cloneWork(e.work), true
		}
	}
	return manager.PhaseWork{}, false
}

// put keeps w under k; it replaces the answer of the same blueprint and
// phase (an older key cannot be asked again: seqs only grow).
func (c *workCache) put(k workKey, w manager.PhaseWork) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = slices.DeleteFunc(c.entries, func(e workEntry) bool {
		return e.key.blueprint == k.blueprint && e.key.phase == k.phase
	})
	c.entries = append(c.entries, workEntry{k, w})
	if len(c.entries) > maxCachedWork {
		c.entries = slices.Delete(c.entries, 0, len(c.entries)-maxCachedWork)
	}
}

// cloneWork copies w's slices and maps (a dependency list is shared: it
// is the tree's, never changed).
func cloneWork(w manager.PhaseWork) manager.PhaseWork {
	w.Ready = slices.Clone(w.Ready)
	w.Counts = maps.Clone(w.Counts)
	w.Deps = maps.Clone(w.Deps)
	return w
}

// Tree is a blueprint's nodes (its primary version, with task status), in
// tree order: what the manager resolves "start building phase 1" or "build
// the login feature" in. It implements projects.BlueprintTree.
func (s *Service) Tree(ctx context.Context, bpID string) ([]protocol.BlueprintNode, error) {
	st, err := s.store()
	if err != nil {
		return nil, err
	}
	_, v, err := s.version(ctx, st, bpID, "")
	if err != nil {
		return nil, err
	}
	t, err := s.tree(ctx, st, v)
	if err != nil {
		return nil, err
	}
	tasks, err := s.tasks(ctx, st, v.ID)
	if err != nil {
		return nil, err
	}
	return blueprint.WithTasks(t, tasks).Nodes, nil
}

// Amend ingests a new version of a blueprint (blueprint/ingest with its
// id): its primary version's document with a section added at the end,
// headed heading (one level below the document's first heading) and
// holding text. The manager calls it when a user confirms a plan change
// or a requirements update from chat. It implements projects.BlueprintTree.
func (s *Service) Amend(ctx context.Context, bpID, heading, text string) (string, error) {
	st, err := s.store()
	if err != nil {
		return "", err
	}
	_, pv, err := s.version(ctx, st, bpID, "")
	if err != nil {
		return "", err
	}
	v, err := st.BlueprintVersion(ctx, pv.ID) // with its document
	if err != nil {
		return "", err
	}
	doc := strings.TrimRight(v.Document, "\n")
	level := "##"
	for _, l := range strings.Split(doc, "\n") {
		if h, _, ok := strings.Cut(l, " "); ok && h != "" && strings.Trim(h, "#") == "" {
			level = h + "#"
			break
		}
	}
	res, err := s.Ingest(ctx, protocol.BlueprintIngestParams{BlueprintID: bpID, Text: doc + "\n\n" + level + " " + heading + "\n\n" + strings.TrimSpace(text) + "\n"})
	if err != nil {
		return "", err
	}
	return res.Version.ID, nil
}
