package blueprints

import (
	"context"
	"errors"
	"strings"

	"github.com/apserver/apserver/blueprint"
	"github.com/apserver/apserver/manager"
	"github.com/apserver/apserver/protocol"
)

// PhaseWork is what the manager (docs/manager.md) reads of a blueprint: a
// phase of the primary version (the first unfinished one when phase is
// empty) with every ready task, best first (blueprint.Next), and the
// phase's work counted by status. It implements projects.Blueprints.
func (s *Service) PhaseWork(ctx context.Context, bpID, phase string) (manager.PhaseWork, error) {
	var w manager.PhaseWork
	st, err := s.store()
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
	tasks, err := s.tasks(ctx, st, v.ID)
	if err != nil {
		return w, err
	}
	wt := blueprint.WithTasks(t, tasks)
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
		if i, ok := wt.Index()[w.Phase]; ok {
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
