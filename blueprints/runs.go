package blueprints

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apserver/apserver/blueprint"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/tools/gitwork"
)

// Runs from a blueprint (docs/blueprints.md, "Runs and evidence"): the
// runner asks RunTasks for the plan of a run started from a node or from
// some tasks, and RecordEvidence when a run's task was validated and
// committed. Together they implement runner.Blueprints (wired in
// cmd/apserver): runner and blueprints never import each other.

// RunTasks resolves run/start's blueprint into a run's first plan: the
// tasks of the node and of the nodes under it (asked of the planner for
// the node when none exist yet), or the tasks named, of the primary
// version, in reading order, without those already done. A task's
// dependencies become run task ids: one on a done task (or node) is met
// and dropped; one on a task that is neither done nor in the run is
// -32602 naming both. Names the planner gave that matched nothing are
// kept in the task's description.
func (s *Service) RunTasks(ctx context.Context, p protocol.RunBlueprintParams) (protocol.RunBlueprint, []protocol.PlanTask, string, string, error) {
	return s.runTasks(ctx, p, false)
}

// runTasks is RunTasks; asked: the planner was asked for the node's tasks.
func (s *Service) runTasks(ctx context.Context, p protocol.RunBlueprintParams, asked bool) (protocol.RunBlueprint, []protocol.PlanTask, string, string, error) {
	var link protocol.RunBlueprint
	fail := func(err error) (protocol.RunBlueprint, []protocol.PlanTask, string, string, error) {
		return link, nil, "", "", err
	}
	if err := p.Validate(); err != nil {
		return fail(err)
	}
	st, err := s.store()
	if err != nil {
		return fail(err)
	}
	b, v, err := s.version(ctx, st, p.BlueprintID, "")
	if err != nil {
		return fail(prefixed(err))
	}
	t, err := s.tree(ctx, st, v)
	if err != nil {
		return fail(err)
	}
	all, err := s.tasks(ctx, st, v.ID)
	if err != nil {
		return fail(err)
	}
	wt := blueprint.WithTasks(t, all)
	widx := wt.Index()
	byID := make(map[string]protocol.BlueprintTask, len(all))
	for _, x := range all {
		byID[x.ID] = x
	}
	// under lists the tasks under a node (its own and its descendants'),
	// in reading order.
	under := func(id string) []string {
		i, ok := widx[id]
		if !ok {
			return nil
		}
		var out []string
		for j := i + 1; j < len(wt.Nodes) && wt.Nodes[j].Depth > wt.Nodes[i].Depth; j++ {
			if _, ok := byID[wt.Nodes[j].ID]; ok {
				out = append(out, wt.Nodes[j].ID)
			}
		}
		return out
	}
	if p.NodeID == "" && len(p.TaskIDs) == 1 {
		// The manager names the work blueprint.Next offers, which is a
		// node of the tree itself while no task has been made for it (a
		// blueprint without tasks): that node's run, which makes them.
		if _, task := byID[p.TaskIDs[0]]; !task {
			if _, node := t.Index()[p.TaskIDs[0]]; node {
				p.NodeID, p.TaskIDs = p.TaskIDs[0], nil
			}
		}
	}
	var picked []string
	title := ""
	if p.NodeID != "" {
		i, ok := t.Index()[p.NodeID]
		if !ok {
			return fail(invalid("blueprint.nodeId: unknown node %s", p.NodeID))
		}
		n := t.Nodes[i]
		title = fmt.Sprintf("%s %q", n.Kind, n.Title)
		picked = under(n.ID)
		if len(picked) == 0 && !asked {
			// No tasks yet: the planner makes the node's own.
			res, err := s.NodeTasks(ctx, protocol.BlueprintNodeTasksParams{BlueprintID: b.ID, NodeID: n.ID})
			if err != nil {
				return fail(prefixed(err))
			}
			if len(res.Tasks) == 0 {
				return fail(invalid("blueprint.nodeId: the planner made no tasks for %s %s", n.Kind, n.ID))
			}
			return s.runTasks(ctx, p, true)
		}
	} else {
		for i, id := range p.TaskIDs {
			if _, ok := byID[id]; !ok {
				return fail(invalid("blueprint.taskIds[%d]: unknown task %s of blueprint %s", i, id, b.ID))
			}
		}
		for _, n := range wt.Nodes { // reading order
			if slices.Contains(p.TaskIDs, n.ID) {
				picked = append(picked, n.ID)
			}
		}
		title = fmt.Sprintf("%d tasks of %q", len(picked), b.Title)
		if len(picked) == 1 {
			title = fmt.Sprintf("1 task of %q", b.Title)
		}
	}
	in := map[string]bool{}
	var todo []protocol.BlueprintTask
	for _, id := range picked {
		if x := byID[id]; x.Status != protocol.NodeDone {
			todo = append(todo, x)
			in[id] = true
		}
	}
	if len(todo) == 0 {
		return fail(invalid("blueprint: nothing to build: the %d tasks of %s are done", len(picked), title))
	}
	name := func(id string) string {
		if x, ok := byID[id]; ok {
			return fmt.Sprintf("task %s (%s)", id, x.Title)
		}
		if i, ok := widx[id]; ok {
			return fmt.Sprintf("%s %s (%s)", wt.Nodes[i].Kind, id, wt.Nodes[i].Title)
		}
		return id
	}
	tasks := make([]protocol.PlanTask, 0, len(todo))
	for _, x := range todo {
		deps := []string{}
		add := func(id string) {
			if !slices.Contains(deps, id) {
				deps = append(deps, id)
			}
		}
		for _, d := range x.DependsOn {
			switch dt, isTask := byID[d]; {
			case in[d]:
				add(d)
			case isTask && dt.Status == protocol.NodeDone:
			case isTask:
				return fail(invalid("blueprint: %s depends on %s, which is neither done nor in this run: add it or build it first", name(x.ID), name(d)))
			default: // a node: its tasks in the run, the others done
				i, ok := widx[d]
				if !ok || wt.Nodes[i].Status == protocol.NodeDone {
					continue
				}
				ts := under(d)
				if len(ts) == 0 {
					return fail(invalid("blueprint: %s depends on %s, which is not done and has no tasks: build it first", name(x.ID), name(d)))
				}
				for _, id := range ts {
					switch {
					case in[id]:
						add(id)
					case byID[id].Status != protocol.NodeDone:
						return fail(invalid("blueprint: %s depends on %s, whose %s is neither done nor in this run: add it or build it first", name(x.ID), name(d), name(id)))
					}
				}
			}
		}
		tasks = append(tasks, planTask(wt, widx, x, deps))
	}
	if err := protocol.ValidateTasks("blueprint", tasks); err != nil {
		return fail(err)
	}
	link = protocol.RunBlueprint{BlueprintID: b.ID, VersionID: v.ID, NodeID: p.NodeID, TaskIDs: make([]string, len(tasks))}
	for i, x := range tasks {
		link.TaskIDs[i] = x.ID
	}
	return link, tasks, b.Cwd, title, nil
}

// prefixed names run/start's field in a -32602 of the blueprints service.
func prefixed(err error) error {
	msg := err.Error()
	for _, f := range []string{"blueprintId:", "nodeId:"} {
		if strings.Contains(msg, f) && !strings.Contains(msg, "blueprint."+f) {
			return fmt.Errorf("blueprint.%w", err)
		}
	}
	return err
}

// planTask is a blueprint's task as a run's plan task (same id).
func planTask(wt *blueprint.Tree, widx map[string]int, x protocol.BlueprintTask, deps []string) protocol.PlanTask {
	var d strings.Builder
	if i, ok := widx[x.NodeID]; ok {
		n := wt.Nodes[i]
		fmt.Fprintf(&d, "Implements part of %s %q (%s) of the specification.\n", n.Kind, n.Title, strings.Join(n.Anchor, " > "))
	}
	if ex := strings.TrimSpace(x.ExcerptText); ex != "" {
		fmt.Fprintf(&d, "\nThe specification says (bytes %d-%d):\n> %s\n", x.Excerpt.Start, x.Excerpt.End, strings.ReplaceAll(ex, "\n", "\n> "))
	}
	if len(x.Unresolved) > 0 {
		fmt.Fprintf(&d, "\nIt also depends on what the planner named but the blueprint does not hold: %s.\n", strings.Join(x.Unresolved, "; "))
	}
	if x.Review {
		d.WriteString("\nThe specification's text of this task changed since the task was made: check the task against it.\n")
	}
	risk := protocol.TaskRisk(x.Risk)
	if risk == "" {
		risk = protocol.RiskLow
	}
	acc := protocol.TaskAcceptance{Criteria: slices.Clone(x.Acceptance.Criteria), Checks: slices.Clone(x.Acceptance.Checks), Files: slices.Clone(x.Acceptance.Files)}
	return protocol.PlanTask{ID: x.ID, Title: x.Title, Description: strings.TrimSpace(d.String()), Kind: x.Kind, Dependencies: deps,
		Risk: risk, Acceptance: acc, Estimate: string(x.Estimate)}
}

// RecordEvidence makes a blueprint's task done from a run's evidence: its
// validator passed the task and its commit is on the run's branch, which
// is checked here in the blueprint's repository. The task of the primary
// version is updated (the version the run started from when the task is
// no longer in the primary one), with the event task.done holding the
// run, branch and commit, and the nodes whose status follows it. The
// same evidence again changes nothing.
func (s *Service) RecordEvidence(ctx context.Context, link protocol.RunBlueprint, taskID string, ev protocol.TaskEvidence) error {
	if ev.RunID == "" || ev.Commit == "" || ev.Branch == "" {
		return fmt.Errorf("blueprints: evidence for task %s: run, commit and branch are required", taskID)
	}
	st, err := s.store()
	if err != nil {
		return err
	}
	b, err := s.blueprint(ctx, st, link.BlueprintID)
	if err != nil {
		return err
	}
	if b.Cwd == "" || !filepath.IsAbs(b.Cwd) {
		return fmt.Errorf("blueprints: blueprint %s has no cwd to check commit %s in", b.ID, ev.Commit)
	}
	repo, err := gitwork.Open(ctx, b.Cwd)
	if err != nil {
		return fmt.Errorf("blueprints: evidence for task %s: %w", taskID, err)
	}
	on, err := repo.OnBranch(ctx, ev.Commit, ev.Branch)
	if err == nil && !on {
		// A run carried out by a cluster worker pushed its branch to the
		// repository's remote, not here: look there.
		on, err = onRemoteBranch(ctx, repo, ev.Commit, ev.Branch)
	}
	if err != nil {
		return fmt.Errorf("blueprints: evidence for task %s: %w", taskID, err)
	}
	if !on {
		return fmt.Errorf("blueprints: evidence for task %s: commit %s is not on branch %s of %s", taskID, ev.Commit, ev.Branch, repo.Root())
	}
	found, err := s.changeRunTask(ctx, st, b, link.VersionID, taskID, "task.done", func(x *protocol.BlueprintTask) json.RawMessage {
		if x.Status == protocol.NodeDone && x.Evidence != nil && x.Evidence.Commit == ev.Commit {
			return nil // recorded already
		}
		x.Status = protocol.NodeDone
		e := ev
		x.Evidence = &e
		raw, _ := json.Marshal(map[string]any{"taskId": taskID, "runId": ev.RunID, "branch": ev.Branch, "commit": ev.Commit, "atMs": ev.AtMs})
		return raw
	})
	if err != nil {
		return fmt.Errorf("recording task %s done: %w", taskID, err)
	}
	if !found {
		return fmt.Errorf("blueprints: evidence for an unknown task %s of blueprint %s", taskID, b.ID)
	}
	return nil
}

// onRemoteBranch says whether commit sha is on branch of the repository's
// origin, fetching the branch first. A repository without origin, or an
// origin without the branch, is false.
func onRemoteBranch(ctx context.Context, repo *gitwork.Repo, sha, branch string) (bool, error) {
	if _, err := gitwork.RemoteURL(ctx, repo.Root(), "origin"); err != nil {
		return false, nil
	}
	tip, err := gitwork.Fetch(ctx, repo.Root(), "origin", branch)
	if err != nil {
		return false, nil // no such branch there (or no way to reach it): not on it
	}
	return repo.IsAncestor(ctx, sha, tip)
}

// changeRunTask finds task taskID in the blueprint's primary version, else in
// the version versionID (the one a run started from), and lets change
// update it: change returns the event's payload, or nil when the task is
// to stay as it is. A change is committed with the event and the nodes
// whose status follows the task, and plan.md is written again. found is
// false when neither version has the task.
func (s *Service) changeRunTask(ctx context.Context, st *store.Store, b protocol.Blueprint, versionID, taskID, event string,
	change func(x *protocol.BlueprintTask) json.RawMessage) (found bool, err error) {
	s.edit.Lock()
	defer s.edit.Unlock()
	for _, vid := range []string{b.Primary.ID, versionID} {
		v, err := st.BlueprintVersion(ctx, vid)
		if err != nil || v.Status != string(protocol.JobReady) {
			continue
		}
		v.Document = ""
		tasks, err := s.tasks(ctx, st, v.ID)
		if err != nil {
			return true, err
		}
		j := slices.IndexFunc(tasks, func(x protocol.BlueprintTask) bool { return x.ID == taskID })
		if j < 0 {
			continue
		}
		raw := change(&tasks[j])
		if raw == nil {
			return true, nil
		}
		t, err := s.tree(ctx, st, v)
		if err != nil {
			return true, err
		}
		if err := s.commitTasks(ctx, st, b.ID, v.ID, t, tasks, []string{taskID}, event, raw); err != nil {
			return true, err
		}
		s.writePlan(ctx, st, b.ID)
		return true, nil
	}
	return false, nil
}

// RecordProgress shows in the blueprint where a run is with a task:
// in_progress (an attempt started), blocked, or planned again (the run was
// cancelled). A done task is never changed (done comes from evidence), and
// planned only replaces in_progress or blocked. The event task.progress
// holds the run; the nodes whose status follows the task change with it.
func (s *Service) RecordProgress(ctx context.Context, link protocol.RunBlueprint, runID, taskID string, status protocol.NodeStatus) error {
	switch status {
	case protocol.NodeInProgress, protocol.NodeBlocked, protocol.NodePlanned:
	default:
		return fmt.Errorf("blueprints: progress of task %s: status %q is not in_progress, blocked or planned", taskID, status)
	}
	st, err := s.store()
	if err != nil {
		return err
	}
	b, err := s.blueprint(ctx, st, link.BlueprintID)
	if err != nil {
		return err
	}
	found, err := s.changeRunTask(ctx, st, b, link.VersionID, taskID, "task.progress", func(x *protocol.BlueprintTask) json.RawMessage {
		switch {
		case x.Status == status, x.Status == protocol.NodeDone,
			status == protocol.NodePlanned && x.Status != protocol.NodeInProgress && x.Status != protocol.NodeBlocked:
			return nil
		}
		x.Status = status
		raw, _ := json.Marshal(map[string]any{"taskId": taskID, "runId": runID, "status": status})
		return raw
	})
	if err != nil {
		return fmt.Errorf("recording the progress of task %s: %w", taskID, err)
	}
	if !found {
		return fmt.Errorf("blueprints: progress of an unknown task %s of blueprint %s", taskID, b.ID)
	}
	return nil
}
