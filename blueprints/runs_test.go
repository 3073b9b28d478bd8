package blueprints

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apserver/apserver/blueprint"
	"github.com/apserver/apserver/internal/specgen"
	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
)

// storyWithTasks ingests the small spec (in cwd) and gives its first
// story tasks A, B (after A), C (after an unknown "Ghost") and D (after
// the story's first task spec, a node without tasks).
func storyWithTasks(t *testing.T, cwd string) (*Service, protocol.Blueprint, protocol.BlueprintNode, protocol.BlueprintNode, []protocol.BlueprintTask) {
	t.Helper()
	sp, answers := smallSpec(t)
	f := newFixture(t, specgen.Script(answers))
	s, _ := f.service(t, pageK, 2, nil)
	b := ingestWait(t, s, protocol.BlueprintIngestParams{Cwd: cwd, Text: sp.Text, ChunkTokens: budget})
	nodes := readAll(t, s, b.ID, "")
	var story, spec1 protocol.BlueprintNode
	for i, n := range nodes {
		if n.Kind == protocol.KindStory {
			story = n
			for _, m := range nodes[i+1:] {
				if m.Kind == protocol.KindTask && m.ParentID == story.ID {
					spec1 = m
					break
				}
			}
			break
		}
	}
	if spec1.ID == "" {
		t.Fatal("no task spec under the first story")
	}
	heading := sp.Text[story.Start+5 : strings.IndexByte(sp.Text[story.Start:], '\n')+story.Start]
	sc := specgen.Script(answers)
	sc.Rules = append([]scripted.Rule{
		{Match: blueprint.TasksMarker(story, ""), Steps: []scripted.Step{{Text: tasksPage("p2",
			taskJSON("Build A", heading), taskJSON("Build B", heading, "Build A"), taskJSON("Build C", heading, "Ghost")), Deltas: 1}}},
		{Match: blueprint.TasksMarker(story, "p2"), Steps: []scripted.Step{{Text: tasksPage("", taskJSON("Test D", heading, spec1.Title)), Deltas: 1}}},
	}, sc.Rules...)
	f.srv.SetScript(sc)
	tr, err := s.NodeTasks(context.Background(), protocol.BlueprintNodeTasksParams{BlueprintID: b.ID, NodeID: story.ID})
	if err != nil || len(tr.Tasks) != 4 {
		t.Fatalf("node/tasks: %v %v", tr.Tasks, err)
	}
	return s, b, story, spec1, tr.Tasks
}

func setStatus(t *testing.T, s *Service, bpID, id string, st protocol.NodeStatus) {
	t.Helper()
	if _, err := s.NodeUpdate(context.Background(), protocol.BlueprintNodeUpdateParams{BlueprintID: bpID, NodeID: id, Status: &st}); err != nil {
		t.Fatal(err)
	}
}

func ids(ts []protocol.PlanTask) []string {
	var out []string
	for _, x := range ts {
		out = append(out, x.ID)
	}
	return out
}

// TestRunTasks: a node's tasks become a run's plan with their
// dependencies as run task ids: one on a task in the run kept, one on a
// done task or node dropped, one on work neither done nor in the run
// refused naming both; done tasks are left out; unknown names are kept in
// the description, with the excerpt.
func TestRunTasks(t *testing.T) {
	ctx := context.Background()
	s, b, story, spec1, tasks := storyWithTasks(t, t.TempDir())
	a, bb, c, d := tasks[0], tasks[1], tasks[2], tasks[3]

	_, _, _, _, err := s.RunTasks(ctx, protocol.RunBlueprintParams{BlueprintID: b.ID, NodeID: story.ID})
	if !errors.Is(err, protocol.ErrInvalidParams) || !strings.Contains(err.Error(), "task "+d.ID+" (Test D) depends on task "+spec1.ID) ||
		!strings.Contains(err.Error(), "not done and has no tasks") {
		t.Fatalf("a dependency on a task spec not done: %v", err)
	}
	setStatus(t, s, b.ID, spec1.ID, protocol.NodeDone)
	link, plan, cwd, title, err := s.RunTasks(ctx, protocol.RunBlueprintParams{BlueprintID: b.ID, NodeID: story.ID})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{a.ID, bb.ID, c.ID, d.ID}; !slices.Equal(ids(plan), want) || !slices.Equal(link.TaskIDs, want) {
		t.Fatalf("plan %v, link %v, want %v", ids(plan), link.TaskIDs, want)
	}
	if link.BlueprintID != b.ID || link.VersionID != b.Primary.ID || link.NodeID != story.ID || cwd != b.Cwd || !strings.Contains(title, story.Title) {
		t.Fatalf("link %+v, cwd %q, title %q", link, cwd, title)
	}
	if !slices.Equal(plan[1].Dependencies, []string{a.ID}) || len(plan[2].Dependencies) != 0 || len(plan[3].Dependencies) != 0 {
		t.Fatalf("deps: B %v, C %v, D %v", plan[1].Dependencies, plan[2].Dependencies, plan[3].Dependencies)
	}
	if p := plan[2]; !strings.Contains(p.Description, "Ghost") || !strings.Contains(p.Description, c.ExcerptText) || p.Risk != protocol.RiskLow ||
		p.Estimate != "S" || p.Acceptance.Checks[0] != "true" || p.Acceptance.Criteria[0] != "Build C works" {
		t.Fatalf("task C as a plan task: %+v", p)
	}
	if err := protocol.ValidateTasks("tasks", plan); err != nil {
		t.Fatal(err)
	}

	// Tasks by id, in reading order; B without A is refused; A done, B alone runs.
	_, plan, _, _, err = s.RunTasks(ctx, protocol.RunBlueprintParams{BlueprintID: b.ID, TaskIDs: []string{c.ID, a.ID}})
	if err != nil || !slices.Equal(ids(plan), []string{a.ID, c.ID}) {
		t.Fatalf("by ids: %v %v", ids(plan), err)
	}
	_, _, _, _, err = s.RunTasks(ctx, protocol.RunBlueprintParams{BlueprintID: b.ID, TaskIDs: []string{bb.ID}})
	if !errors.Is(err, protocol.ErrInvalidParams) || !strings.Contains(err.Error(), "depends on task "+a.ID+" (Build A), which is neither done nor in this run") {
		t.Fatalf("B without A: %v", err)
	}
	setStatus(t, s, b.ID, a.ID, protocol.NodeDone)
	_, plan, _, _, err = s.RunTasks(ctx, protocol.RunBlueprintParams{BlueprintID: b.ID, NodeID: story.ID})
	if err != nil || !slices.Equal(ids(plan), []string{bb.ID, c.ID, d.ID}) || len(plan[0].Dependencies) != 0 {
		t.Fatalf("after A done: %v %v", plan, err)
	}
	// The manager names a node as blueprint.Next offers it: the node's run.
	link, byNode, _, _, err := s.RunTasks(ctx, protocol.RunBlueprintParams{BlueprintID: b.ID, TaskIDs: []string{story.ID}})
	if err != nil || !slices.Equal(ids(byNode), ids(plan)) || link.NodeID != story.ID {
		t.Fatalf("a node named as the task: %v, link %+v, %v; want %v", ids(byNode), link, err, ids(plan))
	}
	for _, x := range []string{bb.ID, c.ID, d.ID} {
		setStatus(t, s, b.ID, x, protocol.NodeDone)
	}
	for _, tc := range []struct {
		p    protocol.RunBlueprintParams
		want string
	}{
		{protocol.RunBlueprintParams{BlueprintID: b.ID, NodeID: story.ID}, "nothing to build"},
		{protocol.RunBlueprintParams{BlueprintID: b.ID, NodeID: "n_nope"}, "blueprint.nodeId: unknown node n_nope"},
		{protocol.RunBlueprintParams{BlueprintID: b.ID, TaskIDs: []string{"t_nope"}}, "blueprint.taskIds[0]: unknown task t_nope"},
		{protocol.RunBlueprintParams{BlueprintID: "bp_nope", NodeID: story.ID}, "blueprint.blueprintId: unknown blueprint bp_nope"},
		{protocol.RunBlueprintParams{BlueprintID: b.ID}, "blueprint.nodeId"},
	} {
		if _, _, _, _, err := s.RunTasks(ctx, tc.p); !errors.Is(err, protocol.ErrInvalidParams) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("RunTasks(%+v) = %v, want -32602 with %q", tc.p, err, tc.want)
		}
	}
}

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestRecordEvidence: a task is done only with a commit that is on the
// run's branch (checked in the blueprint's repository); the evidence is in
// the task and in the event log, once; the story follows its tasks.
func TestRecordEvidence(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	gitT(t, repo, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644)
	gitT(t, repo, "add", "-A")
	gitT(t, repo, "commit", "-q", "-m", "start")
	gitT(t, repo, "checkout", "-q", "-b", "apserver/r1")
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("b\n"), 0o644)
	gitT(t, repo, "commit", "-q", "-am", "task A")
	onBranch := gitT(t, repo, "rev-parse", "HEAD")
	gitT(t, repo, "checkout", "-q", "-b", "elsewhere", "main")
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("c\n"), 0o644)
	gitT(t, repo, "commit", "-q", "-am", "not the run's")
	offBranch := gitT(t, repo, "rev-parse", "HEAD")

	s, b, story, _, tasks := storyWithTasks(t, repo)
	link := protocol.RunBlueprint{BlueprintID: b.ID, VersionID: b.Primary.ID, NodeID: story.ID}
	ev := protocol.TaskEvidence{RunID: "r1", Branch: "apserver/r1", Commit: offBranch, AtMs: 42}
	if err := s.RecordEvidence(ctx, link, tasks[0].ID, ev); err == nil || !strings.Contains(err.Error(), "is not on branch apserver/r1") {
		t.Fatalf("a commit off the run's branch: %v", err)
	}
	ev.Commit = "0123456789abcdef0123456789abcdef01234567"
	if err := s.RecordEvidence(ctx, link, tasks[0].ID, ev); err == nil || !strings.Contains(err.Error(), "is not on branch") {
		t.Fatalf("an unknown commit: %v", err)
	}
	ev.Commit = onBranch
	if err := s.RecordEvidence(ctx, link, "t_nope", ev); err == nil || !strings.Contains(err.Error(), "unknown task t_nope") {
		t.Fatalf("an unknown task: %v", err)
	}
	st := mustStore(t, s)
	count := func() int {
		evs, err := st.BlueprintEvents(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range evs {
			if e.Type == "task.done" {
				n++
				if !strings.Contains(string(e.Event), onBranch) || !strings.Contains(string(e.Event), `"runId":"r1"`) {
					t.Errorf("task.done event %s", e.Event)
				}
			}
		}
		return n
	}
	if n := count(); n != 0 {
		t.Fatalf("%d task.done events before any evidence", n)
	}
	for range 2 {
		if err := s.RecordEvidence(ctx, link, tasks[0].ID, ev); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(); n != 1 {
		t.Fatalf("%d task.done events after the same evidence twice, want 1", n)
	}
	tr, err := s.NodeTasks(ctx, protocol.BlueprintNodeTasksParams{BlueprintID: b.ID, NodeID: story.ID})
	if err != nil {
		t.Fatal(err)
	}
	if x := tr.Tasks[0]; x.Status != protocol.NodeDone || x.Evidence == nil || *x.Evidence != ev {
		t.Fatalf("task A after its evidence: %+v", x)
	}
	if tr.Tasks[1].Status != protocol.NodePlanned {
		t.Fatalf("task B: %s", tr.Tasks[1].Status)
	}
	rd, err := s.Read(ctx, protocol.BlueprintReadParams{BlueprintID: b.ID, NodeID: story.ID, Depth: 1, Limit: 1})
	if err != nil || rd.Nodes[0].Status != protocol.NodeInProgress {
		t.Fatalf("story after one task done: %+v %v", rd.Nodes, err)
	}
	// Every task done (and the task specs): the story is done.
	for i, x := range tasks[1:] {
		gitT(t, repo, "checkout", "-q", "apserver/r1")
		os.WriteFile(filepath.Join(repo, "a.txt"), []byte{byte('d' + i), '\n'}, 0o644)
		gitT(t, repo, "commit", "-q", "-am", x.Title)
		e := ev
		e.Commit = gitT(t, repo, "rev-parse", "HEAD")
		if err := s.RecordEvidence(ctx, link, x.ID, e); err != nil {
			t.Fatal(err)
		}
	}
	under, err := s.Read(ctx, protocol.BlueprintReadParams{BlueprintID: b.ID, NodeID: story.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range under.Nodes[1:] { // the task specs, leaves
		setStatus(t, s, b.ID, n.ID, protocol.NodeDone)
	}
	rd, err = s.Read(ctx, protocol.BlueprintReadParams{BlueprintID: b.ID, NodeID: story.ID, Depth: 1, Limit: 1})
	if err != nil || rd.Nodes[0].Status != protocol.NodeDone {
		t.Fatalf("story after every task done: %+v %v", rd.Nodes, err)
	}
}

// TestRecordProgress: a run's progress shows on its tasks and the nodes
// above them; planned only replaces what a run set; a done task is never
// changed by progress.
func TestRecordProgress(t *testing.T) {
	ctx := context.Background()
	s, b, story, _, tasks := storyWithTasks(t, t.TempDir())
	link := protocol.RunBlueprint{BlueprintID: b.ID, VersionID: b.Primary.ID, NodeID: story.ID}
	st := mustStore(t, s)
	events := func() int {
		evs, err := st.BlueprintEvents(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range evs {
			if e.Type == "task.progress" {
				n++
			}
		}
		return n
	}
	status := func(id string) protocol.NodeStatus {
		tr, err := s.NodeTasks(ctx, protocol.BlueprintNodeTasksParams{BlueprintID: b.ID, NodeID: story.ID})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range tr.Tasks {
			if x.ID == id {
				return x.Status
			}
		}
		rd, err := s.Read(ctx, protocol.BlueprintReadParams{BlueprintID: b.ID, NodeID: id, Depth: 1, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		return rd.Nodes[0].Status
	}
	a, bb := tasks[0].ID, tasks[1].ID
	for _, step := range []struct {
		task   string
		set    protocol.NodeStatus
		want   protocol.NodeStatus
		events int
	}{
		{a, protocol.NodeInProgress, protocol.NodeInProgress, 1},
		{a, protocol.NodeInProgress, protocol.NodeInProgress, 1}, // the same again: nothing
		{a, protocol.NodeBlocked, protocol.NodeBlocked, 2},
		{a, protocol.NodePlanned, protocol.NodePlanned, 3},
		{a, protocol.NodePlanned, protocol.NodePlanned, 3},
	} {
		if err := s.RecordProgress(ctx, link, "r1", step.task, step.set); err != nil {
			t.Fatal(err)
		}
		if got, n := status(step.task), events(); got != step.want || n != step.events {
			t.Fatalf("after %s %s: %s with %d events, want %s with %d", step.task, step.set, got, n, step.want, step.events)
		}
	}
	if err := s.RecordProgress(ctx, link, "r1", a, protocol.NodeInProgress); err != nil {
		t.Fatal(err)
	}
	if got := status(story.ID); got != protocol.NodeInProgress {
		t.Fatalf("story with a task in progress: %s", got)
	}
	setStatus(t, s, b.ID, bb, protocol.NodeDone)
	for _, x := range []protocol.NodeStatus{protocol.NodeInProgress, protocol.NodePlanned, protocol.NodeBlocked} {
		if err := s.RecordProgress(ctx, link, "r1", bb, x); err != nil {
			t.Fatal(err)
		}
		if got := status(bb); got != protocol.NodeDone {
			t.Fatalf("a done task after progress %s: %s", x, got)
		}
	}
	if err := s.RecordProgress(ctx, link, "r1", a, protocol.NodeDone); err == nil {
		t.Fatal("progress made a task done")
	}
	if err := s.RecordProgress(ctx, link, "r1", "t_nope", protocol.NodeInProgress); err == nil || !strings.Contains(err.Error(), "unknown task t_nope") {
		t.Fatalf("an unknown task: %v", err)
	}
}
