package blueprints

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apserver/apserver/blueprint"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/internal/specgen"
	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// recorder is the client: it keeps the notifications and signals each.
type recorder struct {
	mu    sync.Mutex
	notes []protocol.BlueprintProgressNotification
	ch    chan protocol.BlueprintProgressNotification
}

func (r *recorder) Notify(method string, params any) {
	p, ok := params.(protocol.BlueprintProgressNotification)
	if !ok {
		return
	}
	r.mu.Lock()
	r.notes = append(r.notes, p)
	r.mu.Unlock()
	if r.ch != nil {
		r.ch <- p
	}
}

type fixture struct {
	srv    *scripted.Server
	dbPath string
	cfg    config.Config
}

func newFixture(t testing.TB, sc scripted.Script) *fixture {
	t.Helper()
	srv, err := scripted.Start(sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cfg := config.Default()
	pc := cfg.Providers[cfg.Provider]
	pc.BaseURL, pc.APIKey, pc.APIKeyEnv, pc.Wire = srv.URL(), "test-key", "", "responses"
	cfg.Providers[cfg.Provider] = pc
	cfg.RequestMaxRetries = 0
	return &fixture{srv: srv, dbPath: filepath.Join(t.TempDir(), "apserver.db"), cfg: cfg}
}

// service opens the store and makes a Service over it; both close with
// the test (or earlier, by the returned func).
func (f *fixture) service(t testing.TB, k, calls int, rec *recorder) (*Service, func()) {
	t.Helper()
	st, err := store.Open(f.dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.cfg
	cfg.MaxConcurrentModelCalls = calls
	var n Notifier
	if rec != nil {
		n = rec
	}
	s := New(Options{Store: func() (*store.Store, error) { return st, nil }, Config: cfg, Client: n, PageNodes: k})
	var once sync.Once
	closeFn := func() {
		once.Do(func() {
			s.Close()
			st.Close()
		})
	}
	t.Cleanup(closeFn)
	return s, closeFn
}

func (f *fixture) countMarker(m string) int {
	n := 0
	for _, r := range f.srv.Requests() {
		if strings.Contains(r.LastUserText, m) {
			n++
		}
	}
	return n
}

func ingestWait(t *testing.T, s *Service, p protocol.BlueprintIngestParams) protocol.Blueprint {
	t.Helper()
	ctx := context.Background()
	res, err := s.Ingest(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(ctx, res.Blueprint.ID); err != nil {
		t.Fatal(err)
	}
	b, err := s.List(ctx, protocol.BlueprintListParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range b.Data {
		if x.ID == res.Blueprint.ID {
			return x
		}
	}
	t.Fatalf("blueprint %s not listed", res.Blueprint.ID)
	return protocol.Blueprint{}
}

func readAll(t *testing.T, s *Service, bpID, versionID string) []protocol.BlueprintNode {
	t.Helper()
	var all []protocol.BlueprintNode
	cursor := ""
	for {
		r, err := s.Read(context.Background(), protocol.BlueprintReadParams{BlueprintID: bpID, VersionID: versionID, Cursor: cursor, Limit: 37})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, r.Nodes...)
		if r.NextCursor == "" {
			return all
		}
		cursor = r.NextCursor
	}
}

const (
	budget = 300
	pageK  = 3
)

func smallSpec(t *testing.T) (*specgen.Spec, []specgen.ChunkPages) {
	sp := specgen.Generate(11, specgen.Small)
	d, err := blueprint.Parse(sp.Text)
	if err != nil {
		t.Fatal(err)
	}
	return sp, sp.Answers(d, budget, pageK)
}

// TestIngestGeneratedSpec: the generated spec, ingested with the scripted
// planner (many chunks, several pages each, four requests at once), gives
// the generator's tree; each page is asked for exactly once; coverage is
// at least 98% with every normative sentence mapped.
func TestIngestGeneratedSpec(t *testing.T) {
	sp, answers := smallSpec(t)
	f := newFixture(t, specgen.Script(answers))
	rec := &recorder{}
	s, _ := f.service(t, pageK, 4, rec)
	b := ingestWait(t, s, protocol.BlueprintIngestParams{Text: sp.Text, Title: "Spec", ChunkTokens: budget})
	if b.Primary.Status != protocol.JobReady || b.Primary.ChunksDone != len(answers) || b.Primary.Nodes != len(sp.Nodes) {
		t.Fatalf("primary %+v, want ready with %d chunks and %d nodes", b.Primary, len(answers), len(sp.Nodes))
	}
	nodes := readAll(t, s, b.ID, "")
	if len(nodes) != len(sp.Nodes) {
		t.Fatalf("%d nodes, want %d", len(nodes), len(sp.Nodes))
	}
	for i, n := range nodes {
		if n.Start != sp.Nodes[i].Start || n.Kind != sp.Nodes[i].Kind {
			t.Fatalf("node %d %s@%d, want %s@%d", i, n.Kind, n.Start, sp.Nodes[i].Kind, sp.Nodes[i].Start)
		}
	}
	pages := 0
	for _, cp := range answers {
		for _, m := range cp.Markers {
			pages++
			if n := f.countMarker(m); n != 1 {
				t.Errorf("%s asked %d times", m, n)
			}
		}
	}
	if got := len(f.srv.Requests()); got != pages {
		t.Errorf("%d requests, want %d", got, pages)
	}
	cov, err := s.Coverage(context.Background(), protocol.BlueprintCoverageParams{BlueprintID: b.ID})
	if err != nil {
		t.Fatal(err)
	}
	if cov.Ratio < 0.98 || len(cov.Uncovered) != 0 || cov.NormativeTotal != sp.Normative || cov.NormativeMapped != sp.Normative {
		t.Fatalf("coverage %.3f uncovered %d mapped %d/%d (generator wrote %d)", cov.Ratio, len(cov.Uncovered), cov.NormativeMapped, cov.NormativeTotal, sp.Normative)
	}
	last := rec.notes[len(rec.notes)-1]
	if last.Status != protocol.JobReady || last.ChunksDone != len(answers) || last.Nodes != len(sp.Nodes) {
		t.Fatalf("last progress %+v", last)
	}
	nx, err := s.Next(context.Background(), protocol.BlueprintNextParams{BlueprintID: b.ID})
	if err != nil || len(nx.Data) == 0 || nx.Phase != nodes[0].ID {
		t.Fatalf("next %+v %v", nx, err)
	}
	for _, task := range nx.Data {
		if len(task.Node.DependsOn) != 0 {
			t.Fatalf("next offers %s with a dependency not done", task.Node.Title)
		}
	}
}

// TestIngestResumes: a process stopped half-way (chunk 3 never answers)
// leaves chunks 1-2 stored; the next process finishes without asking for
// them again.
func TestIngestResumes(t *testing.T) {
	sp, answers := smallSpec(t)
	sc := specgen.Script(answers)
	hang := scripted.Rule{Match: answers[2].Markers[0], Steps: []scripted.Step{{Hang: true}}}
	f := newFixture(t, scripted.Script{Rules: append([]scripted.Rule{hang}, sc.Rules...)})
	rec := &recorder{ch: make(chan protocol.BlueprintProgressNotification, 1000)}
	s, stop := f.service(t, pageK, 1, rec)
	res, err := s.Ingest(context.Background(), protocol.BlueprintIngestParams{Text: sp.Text, ChunkTokens: budget})
	if err != nil {
		t.Fatal(err)
	}
	for p := range rec.ch {
		if p.ChunksDone == 2 {
			break
		}
	}
	stop() // as the process ends: the job is left for the next one
	f.srv.SetScript(sc)
	before := len(f.srv.Requests())
	s2, _ := f.service(t, pageK, 2, nil)
	s2.Restore()
	if err := s2.Wait(context.Background(), res.Blueprint.ID); err != nil {
		t.Fatal(err)
	}
	b, err := s2.blueprint(context.Background(), mustStore(t, s2), res.Blueprint.ID)
	if err != nil || b.Primary.Status != protocol.JobReady || b.Primary.Nodes != len(sp.Nodes) {
		t.Fatalf("after resume %+v %v", b.Primary, err)
	}
	after := f.srv.Requests()[before:]
	for _, r := range after {
		for _, cp := range answers[:2] {
			for _, m := range cp.Markers {
				if strings.Contains(r.LastUserText, m) {
					t.Errorf("finished chunk asked again after the restart: %s", m)
				}
			}
		}
	}
	if len(after) == 0 {
		t.Fatal("no request after the restart")
	}
}

func mustStore(t testing.TB, s *Service) *store.Store {
	st, err := s.store()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestIngestBadJSON: an invalid answer is asked again once with a stricter
// instruction; invalid twice fails the job naming the chunk and its
// offsets; once is recovered.
func TestIngestBadJSON(t *testing.T) {
	sp, answers := smallSpec(t)
	sc := specgen.Script(answers)
	m := answers[1].Markers[0]
	for _, tc := range []struct {
		name  string
		steps []scripted.Step
		ready bool
	}{
		{"twice", []scripted.Step{{Text: `{"nodes": [`}, {Text: `Sure! Here is the outline.`}}, false},
		{"once", []scripted.Step{{Text: `{"nodes": [`}, {Text: answers[1].Pages[0], Deltas: 1}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := scripted.Rule{Match: m, Sequential: true, Steps: tc.steps}
			f := newFixture(t, scripted.Script{Rules: append([]scripted.Rule{bad}, sc.Rules...)})
			s, _ := f.service(t, pageK, 2, nil)
			b := ingestWait(t, s, protocol.BlueprintIngestParams{Text: sp.Text, ChunkTokens: budget})
			reqs := 0
			strict := 0
			for _, r := range f.srv.Requests() {
				if strings.Contains(r.LastUserText, m) {
					reqs++
					if strings.Contains(r.LastUserText, "previous answer was rejected") {
						strict++
					}
				}
			}
			if reqs != 2 || strict != 1 {
				t.Fatalf("chunk 2 asked %d times (%d strict), want 2 (1 strict)", reqs, strict)
			}
			if tc.ready {
				if b.Primary.Status != protocol.JobReady {
					t.Fatalf("status %s (%s), want ready", b.Primary.Status, b.Primary.Error)
				}
				return
			}
			c := answers[1].Chunk
			want := "chunk 2 (bytes " + strconv.Itoa(c.Start) + "-" + strconv.Itoa(c.End) + ")"
			if b.Primary.Status != protocol.JobFailed || !strings.Contains(b.Primary.Error, want) {
				t.Fatalf("status %s error %q, want failed naming %q", b.Primary.Status, b.Primary.Error, want)
			}
		})
	}
}

// TestReingestThreeSectionsChanged: a new version with three sections
// edited keeps every other id, and the diff names exactly those three as
// modified.
func TestReingestThreeSectionsChanged(t *testing.T) {
	sp, answers := smallSpec(t)
	edited := []int{3, 10, len(sp.Nodes) - 1}
	sp2 := sp.Edit(edited...)
	d2, err := blueprint.Parse(sp2.Text)
	if err != nil {
		t.Fatal(err)
	}
	answers2 := sp2.Answers(d2, budget, pageK)
	f := newFixture(t, specgen.Script(answers))
	s, _ := f.service(t, pageK, 4, nil)
	b1 := ingestWait(t, s, protocol.BlueprintIngestParams{Text: sp.Text, ChunkTokens: budget})
	v1 := b1.Primary.ID
	// Tasks for an edited story (3) and an unchanged one (6).
	before := readAll(t, s, b1.ID, v1)
	sc := specgen.Script(answers)
	for _, i := range []int{3, 6} {
		n := before[i]
		heading := sp.Text[n.Start+5 : strings.IndexByte(sp.Text[n.Start:], '\n')+n.Start]
		sc.Rules = append([]scripted.Rule{{Match: blueprint.TasksMarker(n, ""), Steps: []scripted.Step{{Text: tasksPage("", taskJSON("Do "+n.ID, heading)), Deltas: 1}}}}, sc.Rules...)
	}
	f.srv.SetScript(sc)
	var taskOf = map[int]protocol.BlueprintTask{}
	done := protocol.NodeDone
	for _, i := range []int{3, 6} {
		r, err := s.NodeTasks(context.Background(), protocol.BlueprintNodeTasksParams{BlueprintID: b1.ID, NodeID: before[i].ID})
		if err != nil || len(r.Tasks) != 1 {
			t.Fatalf("tasks of node %d: %v %v", i, r.Tasks, err)
		}
		taskOf[i] = r.Tasks[0]
		if _, err := s.NodeUpdate(context.Background(), protocol.BlueprintNodeUpdateParams{BlueprintID: b1.ID, NodeID: r.Tasks[0].ID, Status: &done}); err != nil {
			t.Fatal(err)
		}
	}
	f.srv.SetScript(specgen.Script(answers2))
	b2 := ingestWait(t, s, protocol.BlueprintIngestParams{Text: sp2.Text, ChunkTokens: budget, BlueprintID: b1.ID})
	if b2.Primary.ID == v1 || b2.Primary.ParentID != v1 || b2.Primary.Status != protocol.JobReady || b2.Primary.Number != 2 {
		t.Fatalf("v2 %+v", b2.Primary)
	}
	n1, n2 := readAll(t, s, b1.ID, v1), readAll(t, s, b1.ID, "")
	if len(n1) != len(n2) {
		t.Fatalf("%d nodes then %d", len(n1), len(n2))
	}
	for i := range n1 {
		if n1[i].ID != n2[i].ID {
			t.Fatalf("node %d changed id", i)
		}
	}
	diff, err := s.Diff(context.Background(), protocol.BlueprintDiffParams{BlueprintID: b1.ID})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range diff.Modified {
		got = append(got, m.ID)
	}
	want := []string{n1[edited[0]].ID, n1[edited[1]].ID, n1[edited[2]].ID}
	if strings.Join(got, ",") != strings.Join(want, ",") || len(diff.Added)+len(diff.Removed)+len(diff.Moved) != 0 {
		t.Fatalf("diff modified %v (want %v) added %d removed %d moved %d", got, want, len(diff.Added), len(diff.Removed), len(diff.Moved))
	}
	// The tasks came along: the edited story's flagged for review, both
	// still done; the diff lists the flagged one.
	if len(diff.Review) != 1 || diff.Review[0].ID != taskOf[3].ID {
		t.Fatalf("diff review %+v, want the task of the edited story", diff.Review)
	}
	carried, err := s.tasks(context.Background(), mustStore(t, s), b2.Primary.ID)
	if err != nil || len(carried) != 2 {
		t.Fatalf("carried tasks %+v %v", carried, err)
	}
	for _, x := range carried {
		want := x.ID == taskOf[3].ID
		if x.Review != want || x.Status != protocol.NodeDone || sp2.Text[x.Excerpt.Start:x.Excerpt.End] != x.ExcerptText {
			t.Fatalf("carried %+v (review want %v)", x, want)
		}
	}
	vs, _ := s.List(context.Background(), protocol.BlueprintListParams{})
	if len(vs.Data) != 1 {
		t.Fatalf("%d blueprints, want 1", len(vs.Data))
	}
}

// TestBadInput: bad documents and edits are -32602 naming the problem,
// and nothing is written.
func TestBadInput(t *testing.T) {
	sp, answers := smallSpec(t)
	f := newFixture(t, specgen.Script(answers))
	s, _ := f.service(t, pageK, 4, nil)
	ctx := context.Background()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bin.md"), []byte("# A\n\x00\x01\x02"), 0o644)
	os.WriteFile(filepath.Join(dir, "empty.md"), []byte("\n \n"), 0o644)
	for _, tc := range []struct {
		p    protocol.BlueprintIngestParams
		want string
	}{
		{protocol.BlueprintIngestParams{Cwd: dir, Path: "missing.md"}, "path: no such file: missing.md"},
		{protocol.BlueprintIngestParams{Cwd: dir, Path: "bin.md"}, "path: bin.md: the document is not text"},
		{protocol.BlueprintIngestParams{Cwd: dir, Path: "empty.md"}, "path: empty.md: the document is empty"},
		{protocol.BlueprintIngestParams{Cwd: dir}, "path: missing"},
		{protocol.BlueprintIngestParams{Text: "# A\n", BlueprintID: "bp_nope"}, "blueprintId: unknown blueprint bp_nope"},
	} {
		_, err := s.Ingest(ctx, tc.p)
		if !errors.Is(err, protocol.ErrInvalidParams) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Ingest(%+v) = %v, want -32602 %q", tc.p, err, tc.want)
		}
	}
	if l, _ := s.List(ctx, protocol.BlueprintListParams{}); len(l.Data) != 0 {
		t.Fatalf("a bad ingestion left %d blueprints", len(l.Data))
	}
	b := ingestWait(t, s, protocol.BlueprintIngestParams{Text: sp.Text, ChunkTokens: budget})
	nodes := readAll(t, s, b.ID, "")
	// Three tasks of one story: t2 depends on t1; t1 -> t2 closes a cycle.
	var t1, t2 protocol.BlueprintNode
	for _, n := range nodes {
		if n.Kind == protocol.KindTask && len(n.DependsOn) == 1 {
			t2 = n
			for _, m := range nodes {
				if m.ID == n.DependsOn[0] {
					t1 = m
				}
			}
			break
		}
	}
	st := protocol.NodeDone
	bad := protocol.NodeStatus("finished")
	for _, tc := range []struct {
		p    protocol.BlueprintNodeUpdateParams
		want string
	}{
		{protocol.BlueprintNodeUpdateParams{BlueprintID: b.ID, NodeID: "n_nope", Status: &st}, "nodeId: unknown node n_nope"},
		{protocol.BlueprintNodeUpdateParams{BlueprintID: b.ID, NodeID: t1.ID, DependsOn: &[]string{t2.ID}}, "dependsOn: dependency cycle"},
		{protocol.BlueprintNodeUpdateParams{BlueprintID: b.ID, NodeID: t1.ID, DependsOn: &[]string{"n_zz"}}, "unknown node n_zz"},
		{protocol.BlueprintNodeUpdateParams{BlueprintID: b.ID, NodeID: t1.ID, Status: &bad}, `status: unknown status "finished"`},
	} {
		_, err := s.NodeUpdate(ctx, tc.p)
		if !errors.Is(err, protocol.ErrInvalidParams) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NodeUpdate = %v, want -32602 %q", err, tc.want)
		}
	}
	after := readAll(t, s, b.ID, "")
	for i := range nodes {
		if strings.Join(after[i].DependsOn, ",") != strings.Join(nodes[i].DependsOn, ",") || after[i].Status != nodes[i].Status {
			t.Fatalf("a refused edit changed node %s", nodes[i].ID)
		}
	}
	// A good edit: t1 done makes t2 ready.
	if _, err := s.NodeUpdate(ctx, protocol.BlueprintNodeUpdateParams{BlueprintID: b.ID, NodeID: t1.ID, Status: &st}); err != nil {
		t.Fatal(err)
	}
	nx, err := s.Next(ctx, protocol.BlueprintNextParams{BlueprintID: b.ID, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, x := range nx.Data {
		found = found || x.Node.ID == t2.ID
		if x.Node.ID == t1.ID {
			t.Fatal("a done task offered")
		}
	}
	if !found {
		t.Fatalf("%s not ready after its dependency is done", t2.Title)
	}
}

// TestCancel: blueprint/cancel stops a job whose model never answers; the
// version ends cancelled, the client hears it, and the blueprint can be
// ingested again.
func TestCancel(t *testing.T) {
	sp, answers := smallSpec(t)
	f := newFixture(t, scripted.Script{Default: []scripted.Step{{Hang: true}}})
	rec := &recorder{}
	s, _ := f.service(t, pageK, 2, rec)
	ctx := context.Background()
	res, err := s.Ingest(ctx, protocol.BlueprintIngestParams{Text: sp.Text, ChunkTokens: budget})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ingest(ctx, protocol.BlueprintIngestParams{Text: sp.Text, BlueprintID: res.Blueprint.ID}); !errors.Is(err, protocol.ErrInvalidRequest) {
		t.Fatalf("a second ingestion of a busy blueprint: %v", err)
	}
	if _, err := s.Cancel(ctx, protocol.BlueprintCancelParams{BlueprintID: res.Blueprint.ID}); err != nil {
		t.Fatal(err)
	}
	b, err := s.blueprint(ctx, mustStore(t, s), res.Blueprint.ID)
	if err != nil || b.Primary.Status != protocol.JobCancelled {
		t.Fatalf("after cancel %+v %v", b.Primary, err)
	}
	rec.mu.Lock()
	last := rec.notes[len(rec.notes)-1]
	rec.mu.Unlock()
	if last.Status != protocol.JobCancelled {
		t.Fatalf("last progress %+v", last)
	}
	if _, err := s.Cancel(ctx, protocol.BlueprintCancelParams{BlueprintID: res.Blueprint.ID}); !errors.Is(err, protocol.ErrInvalidParams) {
		t.Fatalf("cancel with nothing in flight: %v", err)
	}
	// A restarted service does not take a cancelled job up.
	f.srv.SetScript(specgen.Script(answers))
	s2, _ := f.service(t, pageK, 2, nil)
	s2.Restore()
	if err := s2.Wait(ctx, res.Blueprint.ID); err != nil {
		t.Fatal(err)
	}
	if b, _ := s2.blueprint(ctx, mustStore(t, s2), res.Blueprint.ID); b.Primary.Status != protocol.JobCancelled {
		t.Fatalf("restored a cancelled job: %s", b.Primary.Status)
	}
}

func tasksPage(next string, tasks ...string) string {
	return `{"tasks":[` + strings.Join(tasks, ",") + `],"next":"` + next + `"}`
}

func taskJSON(title, excerpt string, deps ...string) string {
	b, _ := json.Marshal(map[string]any{"title": title, "kind": "file_edit", "criteria": []string{title + " works"}, "checks": []string{"true"},
		"files": []string{}, "dependsOn": append([]string{}, deps...), "estimate": "S", "risk": "low", "excerpt": excerpt})
	return string(b)
}

// TestNodeTasks: a story's tasks come from the planner in two pages,
// with dependencies by title resolved (to tasks and to the feature's task
// specs) and an unknown one kept; they are stored (asked once), become
// the work blueprint/next offers in dependency order, and a task's status
// is edited like a node's. An answer invalid twice fails naming the node;
// a whole phase is too large to ask for.
func TestNodeTasks(t *testing.T) {
	sp, answers := smallSpec(t)
	f := newFixture(t, specgen.Script(answers))
	s, _ := f.service(t, pageK, 2, nil)
	ctx := context.Background()
	b := ingestWait(t, s, protocol.BlueprintIngestParams{Text: sp.Text, ChunkTokens: budget})
	nodes := readAll(t, s, b.ID, "")
	var feat protocol.BlueprintNode
	var spec1 protocol.BlueprintNode
	for i, n := range nodes {
		if n.Kind == protocol.KindStory {
			feat = n
			for _, m := range nodes[i:] {
				if m.Kind == protocol.KindTask {
					spec1 = m
					break
				}
			}
			break
		}
	}
	heading := sp.Text[feat.Start+5 : strings.IndexByte(sp.Text[feat.Start:], '\n')+feat.Start]
	sc := specgen.Script(answers)
	m0, m1 := blueprint.TasksMarker(feat, ""), blueprint.TasksMarker(feat, "p2")
	sc.Rules = append([]scripted.Rule{
		{Match: m0, Steps: []scripted.Step{{Text: tasksPage("p2", taskJSON("Build A", heading), taskJSON("Build B", heading, "build a"), taskJSON("Build C", heading, "Ghost")), Deltas: 1}}},
		{Match: m1, Steps: []scripted.Step{{Text: tasksPage("", taskJSON("Test D", heading, "Build B", spec1.Title)), Deltas: 1}}},
	}, sc.Rules...)
	f.srv.SetScript(sc)
	res, err := s.NodeTasks(ctx, protocol.BlueprintNodeTasksParams{BlueprintID: b.ID, NodeID: feat.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != 4 {
		t.Fatalf("%d tasks, want 4", len(res.Tasks))
	}
	a, bb, c, d := res.Tasks[0], res.Tasks[1], res.Tasks[2], res.Tasks[3]
	if strings.Join(bb.DependsOn, ",") != a.ID || strings.Join(c.Unresolved, ",") != "Ghost" || strings.Join(d.DependsOn, ",") != bb.ID+","+spec1.ID {
		t.Fatalf("deps: B %v, C %v/%v, D %v", bb.DependsOn, c.DependsOn, c.Unresolved, d.DependsOn)
	}
	if a.ExcerptText != heading || sp.Text[a.Excerpt.Start:a.Excerpt.End] != heading || a.Acceptance.Criteria[0] != "Build A works" {
		t.Fatalf("task A %+v", a)
	}
	n := len(f.srv.Requests())
	again, err := s.NodeTasks(ctx, protocol.BlueprintNodeTasksParams{BlueprintID: b.ID, NodeID: feat.ID})
	if err != nil || len(again.Tasks) != 4 || len(f.srv.Requests()) != n {
		t.Fatalf("second call: %d tasks, %v, %d requests more", len(again.Tasks), err, len(f.srv.Requests())-n)
	}
	ready := func() map[string]bool {
		nx, err := s.Next(ctx, protocol.BlueprintNextParams{BlueprintID: b.ID, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, x := range nx.Data {
			m[x.Node.ID] = true
		}
		return m
	}
	r := ready()
	if !r[a.ID] || !r[c.ID] || r[bb.ID] || r[d.ID] {
		t.Fatalf("ready %v: want A and C, not B or D", r)
	}
	done := protocol.NodeDone
	if _, err := s.NodeUpdate(ctx, protocol.BlueprintNodeUpdateParams{BlueprintID: b.ID, NodeID: a.ID, Status: &done}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.NodeUpdate(ctx, protocol.BlueprintNodeUpdateParams{BlueprintID: b.ID, NodeID: a.ID, DependsOn: &[]string{d.ID}}); !errors.Is(err, protocol.ErrInvalidParams) || !strings.Contains(err.Error(), "dependency cycle") {
		t.Fatalf("a task edit closing a cycle: %v", err)
	}
	if r := ready(); !r[bb.ID] || r[a.ID] {
		t.Fatalf("after A done: ready %v", r)
	}
	// The story's status follows what is under it: one task done of many.
	rd, err := s.Read(ctx, protocol.BlueprintReadParams{BlueprintID: b.ID, NodeID: feat.ID, Depth: 1, Limit: 1})
	if err != nil || rd.Nodes[0].Status != protocol.NodeInProgress {
		t.Fatalf("story after a task done: %+v %v", rd.Nodes, err)
	}
	if _, err := s.NodeUpdate(ctx, protocol.BlueprintNodeUpdateParams{BlueprintID: b.ID, NodeID: feat.ID, Status: &done}); !errors.Is(err, protocol.ErrInvalidParams) || !strings.Contains(err.Error(), "follows the tasks and nodes under it") {
		t.Fatalf("a human setting a story done: %v", err)
	}

	// Invalid twice: fails naming the node; a phase is too large.
	sc.Rules = append([]scripted.Rule{{Match: m0, Steps: []scripted.Step{{Text: "no"}}}}, sc.Rules...)
	f.srv.SetScript(sc)
	if _, err := s.NodeTasks(ctx, protocol.BlueprintNodeTasksParams{BlueprintID: b.ID, NodeID: feat.ID, Regenerate: true}); err == nil || !strings.Contains(err.Error(), "tasks of node "+feat.ID) {
		t.Fatalf("invalid twice: %v", err)
	}
	if kept, _ := s.NodeTasks(ctx, protocol.BlueprintNodeTasksParams{BlueprintID: b.ID, NodeID: feat.ID}); len(kept.Tasks) != 4 {
		t.Fatalf("a failed regeneration lost the tasks: %d", len(kept.Tasks))
	}
	if _, err := s.NodeTasks(ctx, protocol.BlueprintNodeTasksParams{BlueprintID: b.ID, NodeID: nodes[0].ID}); !errors.Is(err, protocol.ErrInvalidParams) || !strings.Contains(err.Error(), "ask for its children") {
		t.Fatalf("a phase: %v", err)
	}
}

// TestVerify: the checks of done tasks run again in the blueprint's cwd
// (in the sandbox); after a change that breaks one task's check, verify
// reopens exactly that task, and blueprint/next offers it again.
func TestVerify(t *testing.T) {
	sp, answers := smallSpec(t)
	f := newFixture(t, specgen.Script(answers))
	s, _ := f.service(t, pageK, 2, nil)
	ctx := context.Background()
	cwd := t.TempDir()
	b := ingestWait(t, s, protocol.BlueprintIngestParams{Cwd: cwd, Text: sp.Text, ChunkTokens: budget})
	nodes := readAll(t, s, b.ID, "")
	var story protocol.BlueprintNode
	for _, n := range nodes {
		if n.Kind == protocol.KindStory {
			story = n
			break
		}
	}
	heading := sp.Text[story.Start+5 : strings.IndexByte(sp.Text[story.Start:], '\n')+story.Start]
	task := func(title, check string) string {
		b, _ := json.Marshal(map[string]any{"title": title, "kind": "file_edit", "criteria": []string{title}, "checks": []string{check},
			"files": []string{"b.txt"}, "dependsOn": []string{}, "estimate": "S", "risk": "low", "excerpt": heading})
		return string(b)
	}
	sc := specgen.Script(answers)
	sc.Rules = append([]scripted.Rule{{Match: blueprint.TasksMarker(story, ""), Steps: []scripted.Step{{Text: tasksPage("",
		task("Write alpha", "grep -q alpha a.txt"), task("Write beta", "grep -q beta b.txt")), Deltas: 1}}}}, sc.Rules...)
	f.srv.SetScript(sc)
	tr, err := s.NodeTasks(ctx, protocol.BlueprintNodeTasksParams{BlueprintID: b.ID, NodeID: story.ID})
	if err != nil || len(tr.Tasks) != 2 {
		t.Fatalf("tasks %v %v", tr.Tasks, err)
	}
	done := protocol.NodeDone
	for _, x := range tr.Tasks {
		if _, err := s.NodeUpdate(ctx, protocol.BlueprintNodeUpdateParams{BlueprintID: b.ID, NodeID: x.ID, Status: &done}); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(cwd, "a.txt"), []byte("alpha\n"), 0o644)
	os.WriteFile(filepath.Join(cwd, "b.txt"), []byte("beta\n"), 0o644)
	verify := func() map[string]protocol.TaskVerification {
		r, err := s.Verify(ctx, protocol.BlueprintVerifyParams{BlueprintID: b.ID, NodeID: story.ID})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]protocol.TaskVerification{}
		for _, v := range r.Data {
			m[v.Title] = v
		}
		return m
	}
	if v := verify(); len(v) != 2 || !v["Write alpha"].Passed || !v["Write beta"].Passed {
		t.Fatalf("first verify: %+v", v)
	}
	os.WriteFile(filepath.Join(cwd, "a.txt"), []byte("gamma\n"), 0o644) // breaks Write alpha's check only
	v := verify()
	if v["Write alpha"].Passed || !v["Write alpha"].Reopened || !v["Write beta"].Passed || v["Write beta"].Reopened || v["Write alpha"].Checks[0].ExitCode != 1 {
		t.Fatalf("second verify: %+v", v)
	}
	nx, _ := s.Next(ctx, protocol.BlueprintNextParams{BlueprintID: b.ID, Limit: 500})
	offered := map[string]bool{}
	for _, x := range nx.Data {
		offered[x.Node.Title] = true
	}
	if !offered["Write alpha"] || offered["Write beta"] {
		t.Fatalf("after verify: next offers %v", offered)
	}
	if v := verify(); len(v) != 1 || !v["Write beta"].Passed {
		t.Fatalf("third verify (only done tasks): %+v", v)
	}
	// The projection follows the store: the reopened task shows open.
	plan, err := os.ReadFile(PlanFile(cwd, b.ID))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(plan), "- [ ] task Write alpha `"+tr.Tasks[0].ID+"` (planned") || !strings.Contains(string(plan), "- [x] task Write beta `") ||
		!strings.Contains(string(plan), "Coverage: ") || !strings.Contains(string(plan), "Tasks done: ") {
		t.Fatalf("plan.md:\n%s", plan)
	}
	if _, err := s.Verify(ctx, protocol.BlueprintVerifyParams{BlueprintID: b.ID, NodeID: "n_nope"}); !errors.Is(err, protocol.ErrInvalidParams) {
		t.Fatalf("unknown node: %v", err)
	}
}

// TestIngestLargeSpec: the ~500,000-word generated specification, through
// the model client and the store at the default budget: 1,724 nodes at the
// generator's headings, coverage ≥ 98%, every normative sentence mapped.
func TestIngestLargeSpec(t *testing.T) {
	if testing.Short() {
		t.Skip("large spec")
	}
	sp := specgen.Generate(2, specgen.Large)
	d, err := blueprint.Parse(sp.Text)
	if err != nil {
		t.Fatal(err)
	}
	answers := sp.Answers(d, 0, 0)
	f := newFixture(t, specgen.Script(answers))
	s, _ := f.service(t, 0, 4, nil)
	b := ingestWait(t, s, protocol.BlueprintIngestParams{Text: sp.Text})
	if b.Primary.Status != protocol.JobReady || b.Primary.ChunksTotal != len(answers) || len(answers) < 50 {
		t.Fatalf("primary %+v (%d chunks answered)", b.Primary, len(answers))
	}
	nodes := readAll(t, s, b.ID, "")
	if len(nodes) != len(sp.Nodes) {
		t.Fatalf("%d nodes, want %d", len(nodes), len(sp.Nodes))
	}
	for i, n := range nodes {
		w := sp.Nodes[i]
		if n.Kind != w.Kind || !strings.HasPrefix(sp.Text[n.Start:], strings.Repeat("#", w.Level)+" "+w.Heading+"\n") {
			t.Fatalf("node %d: %s at %d, want %s at the heading %q", i, n.Kind, n.Start, w.Kind, w.Heading)
		}
	}
	cov, err := s.Coverage(context.Background(), protocol.BlueprintCoverageParams{BlueprintID: b.ID, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if cov.Ratio < 0.98 || cov.NormativeTotal != sp.Normative || cov.NormativeMapped != sp.Normative || len(cov.Uncovered) != 0 {
		t.Fatalf("coverage %.4f, normative %d/%d mapped (generator wrote %d)", cov.Ratio, cov.NormativeMapped, cov.NormativeTotal, sp.Normative)
	}
	t.Logf("%d words, %d chunks, %d nodes, coverage %.4f, %d normative sentences", sp.Words, len(answers), len(nodes), cov.Ratio, cov.NormativeTotal)
}
