package blueprints

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/apserver/apserver/blueprint"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// maxTaskNodeChunks bounds the text of a node asked for tasks, in chunk
// budgets: a larger node (a whole phase) is refused, its children are not.
const maxTaskNodeChunks = 2

// tasks loads a version's tasks.
func (s *Service) tasks(ctx context.Context, st *store.Store, versionID string) ([]protocol.BlueprintTask, error) {
	rows, err := st.BlueprintTasks(ctx, versionID)
	if err != nil {
		return nil, err
	}
	out := make([]protocol.BlueprintTask, len(rows))
	for i, r := range rows {
		if err := json.Unmarshal(r.Task, &out[i]); err != nil {
			return nil, fmt.Errorf("blueprints: task %s: %w", r.ID, err)
		}
	}
	return out, nil
}

// NodeTasks implements blueprint/node/tasks: the tasks that implement a
// node, asked of the planner (paged, one strict retry) unless they were
// made before, stored with the node.
func (s *Service) NodeTasks(ctx context.Context, p protocol.BlueprintNodeTasksParams) (protocol.BlueprintNodeTasksResult, error) {
	var res protocol.BlueprintNodeTasksResult
	if p.NodeID == "" {
		return res, protocol.MissingField("nodeId")
	}
	st, err := s.store()
	if err != nil {
		return res, err
	}
	b, v, err := s.version(ctx, st, p.BlueprintID, "")
	if err != nil {
		return res, err
	}
	t, err := s.tree(ctx, st, v)
	if err != nil {
		return res, err
	}
	i, ok := t.Index()[p.NodeID]
	if !ok {
		return res, invalid("nodeId: unknown node %s", p.NodeID)
	}
	n := t.Nodes[i]
	res.Node = n
	all, err := s.tasks(ctx, st, v.ID)
	if err != nil {
		return res, err
	}
	var mine, others []protocol.BlueprintTask
	for _, x := range all {
		if x.NodeID == n.ID {
			mine = append(mine, x)
		} else {
			others = append(others, x)
		}
	}
	if len(mine) > 0 && !p.Regenerate {
		res.Tasks = mine
		return res, nil
	}
	if limit := maxTaskNodeChunks * v.ChunkTokens * 4; n.End-n.Start > limit {
		return res, invalid("nodeId: node %s (%s) spans %d bytes, more than %d; ask for its children", n.ID, n.Title, n.End-n.Start, limit)
	}
	full, err := st.BlueprintVersion(ctx, v.ID)
	if err != nil {
		return res, err
	}
	doc, err := blueprint.Parse(full.Document)
	if err != nil {
		return res, err
	}
	mc, name, err := s.planner()
	if err != nil {
		return res, err
	}
	pages := blueprint.TaskPages(doc, n, v.PageNodes)
	for pages.Step() == blueprint.Ask {
		raw, err := s.askSlot(ctx, mc, name, blueprint.TasksInstructions, blueprint.TasksSchema, "blueprint_tasks", pages.Prompt())
		if err != nil {
			return res, fmt.Errorf("%s: asking the planner: %w", pages.What, err)
		}
		pages.Feed(raw)
	}
	if pages.Step() == blueprint.Failed {
		return res, pages.Err()
	}
	found := pages.Items()
	tasks := blueprint.BuildTasks(doc, t, n, found, others)
	rows := make([]store.BlueprintTaskRow, len(tasks))
	for j, x := range tasks {
		raw, err := json.Marshal(x)
		if err != nil {
			return res, err
		}
		rows[j] = store.BlueprintTaskRow{NodeID: n.ID, Ord: j, ID: x.ID, Task: raw}
	}
	ev, _ := json.Marshal(map[string]any{"nodeId": n.ID, "tasks": len(tasks)})
	s.edit.Lock()
	nt := &blueprint.Tree{Nodes: slices.Clone(t.Nodes)}
	changed := blueprint.Rollup(nt, append(slices.Clone(others), tasks...))
	nrows, err := nodeRows(nt, changed)
	if err == nil {
		err = st.ReplaceBlueprintTasks(ctx, b.ID, v.ID, n.ID, rows, nrows, ev)
	}
	if err == nil {
		s.cache(v.ID, nt)
	}
	s.edit.Unlock()
	if err != nil {
		return res, err
	}
	s.writePlan(ctx, st, b.ID)
	res.Tasks = tasks
	if res.Tasks == nil {
		res.Tasks = []protocol.BlueprintTask{}
	}
	return res, nil
}

// updateTask is blueprint/node/update of a task (its status, title or
// dependencies).
func (s *Service) updateTask(ctx context.Context, st *store.Store, b protocol.Blueprint, v store.BlueprintVersionRow, t *blueprint.Tree, tasks []protocol.BlueprintTask, p protocol.BlueprintNodeUpdateParams) (protocol.BlueprintNodeUpdateResult, error) {
	var res protocol.BlueprintNodeUpdateResult
	j := slices.IndexFunc(tasks, func(x protocol.BlueprintTask) bool { return x.ID == p.NodeID })
	if j < 0 {
		return res, invalid("nodeId: unknown node %s", p.NodeID)
	}
	tasks = slices.Clone(tasks)
	x := &tasks[j]
	if p.Summary != nil || p.Priority != nil {
		return res, invalid("nodeId: %s is a task: only title, status and dependsOn can be edited", p.NodeID)
	}
	if p.Title != nil {
		if *p.Title == "" {
			return res, invalid("title: empty")
		}
		x.Title = *p.Title
	}
	if p.Status != nil {
		if !p.Status.Valid() {
			return res, invalid("status: unknown status %q (planned, in_progress, blocked, done)", *p.Status)
		}
		x.Status = *p.Status
	}
	if p.DependsOn != nil {
		x.DependsOn = slices.Clone(*p.DependsOn)
		if slices.Contains(x.DependsOn, x.ID) {
			return res, invalid("dependsOn: task %s cannot depend on itself", x.ID)
		}
		wt := blueprint.WithTasks(t, tasks)
		if unknown := blueprint.UnknownDeps(wt, x.DependsOn); len(unknown) > 0 {
			return res, invalid("dependsOn: unknown node %s", strings.Join(unknown, ", "))
		}
		if err := blueprint.CheckDeps(wt.Nodes); err != nil {
			return res, invalid("dependsOn: %v", err)
		}
	}
	ev, _ := json.Marshal(p)
	if err := s.commitTasks(ctx, st, b.ID, v.ID, t, tasks, []string{x.ID}, "task.updated", ev); err != nil {
		return res, err
	}
	wt := blueprint.WithTasks(t, tasks)
	res.Node = wt.Nodes[wt.Index()[x.ID]]
	s.writePlan(ctx, st, b.ID)
	return res, nil
}

// commitTasks stores the tasks named (from tasks, the version's whole new
// list) and the nodes whose status follows them, with the event, in one
// transaction; then caches the tree and notifies blueprint/updated for
// each. shared is the cached tree (copied, not changed).
func (s *Service) commitTasks(ctx context.Context, st *store.Store, bpID, versionID string, shared *blueprint.Tree, tasks []protocol.BlueprintTask, ids []string, typ string, ev json.RawMessage) error {
	t := &blueprint.Tree{Nodes: slices.Clone(shared.Nodes)}
	changed := blueprint.Rollup(t, tasks)
	rows, err := nodeRows(t, changed)
	if err != nil {
		return err
	}
	var trows []store.BlueprintTaskRow
	for _, x := range tasks {
		if slices.Contains(ids, x.ID) {
			raw, err := json.Marshal(x)
			if err != nil {
				return err
			}
			trows = append(trows, store.BlueprintTaskRow{NodeID: x.NodeID, Ord: x.Order, ID: x.ID, Task: raw})
		}
	}
	if err := st.UpdateBlueprint(ctx, bpID, versionID, rows, trows, typ, ev); err != nil {
		return err
	}
	s.cache(versionID, t)
	wt := blueprint.WithTasks(t, tasks)
	widx := wt.Index()
	for _, id := range ids {
		s.notify(protocol.NotifyBlueprintUpdated, protocol.BlueprintUpdatedNotification{BlueprintID: bpID, VersionID: versionID, Node: wt.Nodes[widx[id]]})
	}
	for _, j := range changed {
		s.notify(protocol.NotifyBlueprintUpdated, protocol.BlueprintUpdatedNotification{BlueprintID: bpID, VersionID: versionID, Node: t.Nodes[j]})
	}
	return nil
}
