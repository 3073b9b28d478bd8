package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/apserver/apserver/blueprint"
	"github.com/apserver/apserver/internal/specgen"
	"github.com/apserver/apserver/model/scripted"
)

func num(m *message, path string) int {
	f, _ := m.get(path).(float64)
	return int(f)
}

// TestBlueprintKillResume (docs/blueprints.md): a generated specification
// is ingested over the protocol; apserver is killed with SIGKILL while one
// chunk's answer hangs and every other chunk is done; the next process
// takes the job up after initialized and finishes it, asking the model
// only for the chunk that was not done. The tree, coverage and bad input
// are then checked over the wire.
func TestBlueprintKillResume(t *testing.T) {
	t.Parallel()
	const budget, k = 300, 3
	sp := specgen.Generate(5, specgen.Small)
	d, err := blueprint.Parse(sp.Text)
	if err != nil {
		t.Fatal(err)
	}
	answers := sp.Answers(d, budget, k)
	script := specgen.Script(answers)
	hung := answers[2].Markers[0]
	model := startModel(t, append([]scripted.Rule{{Match: hung, Steps: []scripted.Step{{Hang: true}}}}, script.Rules...)...)
	dir, dataDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "spec.md"), []byte(sp.Text), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, model, options{dataDir: dataDir, dir: dir})
	res := c.call("blueprint/ingest", map[string]any{"cwd": dir, "path": "spec.md", "chunkTokens": budget})
	bpID := res.str("blueprint.id")
	total := num(res, "blueprint.primary.chunksTotal")
	if bpID == "" || total != len(answers) {
		t.Fatalf("blueprint/ingest = %s (want %d chunks)", res.Raw, len(answers))
	}
	c.waitFor("blueprint/progress", func(m *message) bool { return num(m, "chunksDone") == total-1 })
	waitModelRequests(t, model, 1)
	c.kill()

	model.SetScript(script)
	before := len(modelRequests(model))
	c2 := newClient(t, model, options{dataDir: dataDir, dir: dir})
	done := c2.waitFor("blueprint/progress", func(m *message) bool { return m.str("status") != "ingesting" })
	if done.str("status") != "ready" || num(done, "nodes") != len(sp.Nodes) {
		t.Fatalf("after the restart: %s", done.Raw)
	}
	after := modelRequests(model)[before:]
	for _, r := range after {
		if !strings.Contains(r.LastUserText, "[blueprint chunk 3/") {
			t.Errorf("a finished chunk was asked again: %.60s", r.LastUserText)
		}
	}
	if len(after) != len(answers[2].Markers) {
		t.Errorf("%d requests after the restart, want %d (chunk 3's pages)", len(after), len(answers[2].Markers))
	}

	rd := c2.call("blueprint/read", map[string]any{"blueprintId": bpID, "depth": 1})
	nodes, _ := rd.get("nodes").([]any)
	phases := 0
	for _, sn := range sp.Nodes {
		if sn.Parent < 0 {
			phases++
		}
	}
	if len(nodes) != phases+phases*specgen.Small.Epics {
		t.Fatalf("depth 1: %d nodes, want %d", len(nodes), phases+phases*specgen.Small.Epics)
	}
	first := rd.str("nodes.0.start")
	_ = first
	if got := num(rd, "nodes.1.start"); !strings.HasPrefix(sp.Text[got:], "## Epic 1.1:") {
		t.Fatalf("second node's offset %d points at %.20q", got, sp.Text[got:])
	}
	cov := c2.call("blueprint/coverage", map[string]any{"blueprintId": bpID, "limit": 5})
	if r, _ := cov.get("ratio").(float64); r < 0.98 || num(cov, "normativeMapped") != sp.Normative || num(cov, "normativeTotal") != sp.Normative {
		t.Fatalf("coverage %s", cov.Raw)
	}
	nx := c2.call("blueprint/next", map[string]any{"blueprintId": bpID, "limit": 2})
	if n, _ := nx.get("data").([]any); len(n) != 2 || nx.str("nextCursor") == "" {
		t.Fatalf("blueprint/next %s", nx.Raw)
	}

	c2.callErr("blueprint/ingest", map[string]any{"cwd": dir, "path": "missing.md"}, -32602, "no such file: missing.md")
	c2.callErr("blueprint/read", map[string]any{"blueprintId": bpID, "nodeId": "n_nope"}, -32602, "unknown node n_nope")
	c2.callErr("blueprint/node/update", map[string]any{"blueprintId": bpID, "nodeId": "n_nope", "status": "done"}, -32602, "unknown node n_nope")
}

// TestBlueprintCLI: `apserver blueprint ingest FILE` killed with SIGKILL
// half-way and run again resumes (no finished chunk asked again), then
// `show --depth 1` and `next` print the tree and the ready tasks; a chunk
// answered with bad JSON twice fails the command naming the chunk.
func TestBlueprintCLI(t *testing.T) {
	t.Parallel()
	sp := specgen.Generate(9, specgen.Small)
	d, err := blueprint.Parse(sp.Text)
	if err != nil {
		t.Fatal(err)
	}
	const budget = 300
	answers := sp.Answers(d, budget, 0)
	script := specgen.Script(answers)
	hung := answers[3].Markers[0]
	model := startModel(t, append([]scripted.Rule{{Match: hung, Steps: []scripted.Step{{Hang: true}}}}, script.Rules...)...)
	home, dir, dataDir := t.TempDir(), t.TempDir(), t.TempDir()
	cfg := filepath.Join(home, "config.toml")
	os.WriteFile(cfg, nil, 0o600)
	os.WriteFile(filepath.Join(dir, "spec.md"), []byte(sp.Text), 0o644)
	cli := func(args ...string) *exec.Cmd {
		cmd := exec.Command(binPath, append([]string{"blueprint", args[0], "--data-dir", dataDir, "--config", cfg, "--model", "scripted-model"}, args[1:]...)...)
		cmd.Dir = dir
		cmd.Env = serverEnv(t, home, model)
		return cmd
	}

	// Killed while chunk 4 hangs and the others are done.
	cmd := cli("ingest", "--chunk-tokens", "300", "spec.md")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("ingesting: %d/%d chunks", len(answers)-1, len(answers))
	sc := bufio.NewScanner(stderr)
	seen := false
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), want) {
			seen = true
			break
		}
	}
	if !seen {
		t.Fatalf("no %q line on stderr", want)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	model.SetScript(script)
	before := len(modelRequests(model))
	out, err := cli("ingest", "--chunk-tokens", "300", "spec.md").CombinedOutput()
	if err != nil {
		t.Fatalf("ingest again: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "resuming the ingestion of spec.md") || !strings.Contains(string(out), fmt.Sprintf("%d nodes", len(sp.Nodes))) {
		t.Fatalf("ingest again:\n%s", out)
	}
	for _, r := range modelRequests(model)[before:] {
		if !strings.Contains(r.LastUserText, "[blueprint chunk 4/") {
			t.Errorf("a finished chunk was asked again: %.50s", r.LastUserText)
		}
	}

	out, err = cli("show", "--depth", "1").Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 1+2+2*specgen.Small.Epics || !strings.Contains(lines[1], "phase   Phase 1:") || !strings.Contains(lines[2], "epic    Epic 1.1:") {
		t.Fatalf("show --depth 1:\n%s", out)
	}
	out, err = cli("next", "--limit", "3").Output()
	if err != nil || len(strings.Split(strings.TrimSpace(string(out)), "\n")) != 3 || !strings.Contains(string(out), "Task 1.") {
		t.Fatalf("next: %v\n%s", err, out)
	}

	// tasks and verify of a story.
	out, err = cli("show").Output()
	if err != nil {
		t.Fatal(err)
	}
	var storyID, storyLine string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[0] == "story" {
			for _, w := range f {
				if strings.HasPrefix(w, "n_") {
					storyID, storyLine = w, l
				}
			}
			break
		}
	}
	var storyNode blueprint.Found
	for _, n := range sp.Nodes {
		if n.Kind == "story" && strings.Contains(storyLine, n.Heading) {
			storyNode.Start = n.Start
			break
		}
	}
	heading := sp.Text[storyNode.Start+5 : storyNode.Start+strings.IndexByte(sp.Text[storyNode.Start:], '\n')]
	tj, _ := json.Marshal(map[string]any{"title": "Do it", "kind": "docs", "criteria": []string{"done"}, "checks": []string{"true"},
		"files": []string{}, "dependsOn": []string{"Nowhere"}, "estimate": "S", "risk": "low", "excerpt": heading})
	model.SetScript(scripted.Script{Rules: append([]scripted.Rule{{Match: "[blueprint tasks " + storyID + " cursor=start]",
		Steps: []scripted.Step{{Text: `{"tasks":[` + string(tj) + `],"next":""}`, Deltas: 1}}}}, script.Rules...)})
	out, err = cli("tasks", storyID).CombinedOutput()
	if err != nil || !strings.Contains(string(out), ": 1 tasks") || !strings.Contains(string(out), "Do it\tplanned\tdepends on -\tunresolved: Nowhere") {
		t.Fatalf("tasks %s: %v\n%s", storyID, err, out)
	}
	out, err = cli("verify", storyID).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "no done task to verify") {
		t.Fatalf("verify: %v\n%s", err, out)
	}

	// Bad JSON twice: the command fails naming the chunk and its offsets.
	c := answers[1].Chunk
	model.SetScript(scripted.Script{Rules: append([]scripted.Rule{{Match: answers[1].Markers[0], Steps: []scripted.Step{{Text: "not json"}}}}, script.Rules...)})
	os.WriteFile(filepath.Join(dir, "again.md"), []byte(sp.Text+"\n"), 0o644)
	out, err = cli("ingest", "--chunk-tokens", "300", "again.md").CombinedOutput()
	if err == nil || !strings.Contains(string(out), fmt.Sprintf("chunk 2 (bytes %d-%d)", c.Start, c.End)) {
		t.Fatalf("bad JSON twice: %v\n%s", err, out)
	}
}

// TestBlueprintTasksVerifyDiff: over the wire (every message checked
// against the schema): a story's tasks, their statuses, verify reopening
// the one whose check a change broke, plan.md following, and a new version
// whose diff flags the story's tasks for review.
func TestBlueprintTasksVerifyDiff(t *testing.T) {
	t.Parallel()
	const budget = 300
	sp := specgen.Generate(6, specgen.Small)
	d, err := blueprint.Parse(sp.Text)
	if err != nil {
		t.Fatal(err)
	}
	answers := sp.Answers(d, budget, 0)
	model := startModel(t, specgen.Script(answers).Rules...)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "spec.md"), []byte(sp.Text), 0o644)
	c := newClient(t, model, options{dir: dir})
	res := c.call("blueprint/ingest", map[string]any{"cwd": dir, "path": "spec.md", "chunkTokens": budget})
	bpID := res.str("blueprint.id")
	c.waitFor("blueprint/progress", func(m *message) bool { return m.str("status") == "ready" })

	rd := c.call("blueprint/read", map[string]any{"blueprintId": bpID, "limit": 1000})
	nodes, _ := rd.get("nodes").([]any)
	var storyID string
	var storyStart int
	for i := range nodes {
		p := fmt.Sprintf("nodes.%d.", i)
		if rd.str(p+"kind") == "story" {
			storyID, storyStart = rd.str(p+"id"), num(rd, p+"start")
			break
		}
	}
	heading := sp.Text[storyStart+5 : storyStart+strings.IndexByte(sp.Text[storyStart:], '\n')]
	task := func(title, check string) string {
		b, _ := json.Marshal(map[string]any{"title": title, "kind": "file_edit", "criteria": []string{title}, "checks": []string{check},
			"files": []string{}, "dependsOn": []string{}, "estimate": "S", "risk": "low", "excerpt": heading})
		return string(b)
	}
	// A node/tasks whose model never answers holds up no other request
	// (it has a lane of its own); $/cancelRequest ends it.
	model.SetScript(scripted.Script{Rules: append([]scripted.Rule{{Match: "[blueprint tasks " + storyID + " cursor=start]",
		Steps: []scripted.Step{{Hang: true}}}}, specgen.Script(answers).Rules...)})
	hung := c.send("blueprint/node/tasks", map[string]any{"blueprintId": bpID, "nodeId": storyID})
	c.noReply[hung] = true
	if l := c.call("blueprint/list", map[string]any{}); l.str("data.0.id") != bpID {
		t.Fatalf("blueprint/list behind a hung node/tasks: %s", l.Raw)
	}
	if th := c.call("thread/start", map[string]any{"cwd": dir}); th.str("thread.id") == "" {
		t.Fatalf("thread/start behind a hung node/tasks: %s", th.Raw)
	}
	c.notify("$/cancelRequest", map[string]any{"id": json.RawMessage(hung)})
	if m := c.response(hung); m.Error == nil {
		t.Fatalf("a cancelled node/tasks answered %s", m.Raw)
	}
	page := `{"tasks":[` + task("Write alpha", "grep -q alpha a.txt") + `,` + task("Write beta", "grep -q beta b.txt") + `],"next":""}`
	model.SetScript(scripted.Script{Rules: append([]scripted.Rule{{Match: "[blueprint tasks " + storyID + " cursor=start]",
		Steps: []scripted.Step{{Text: page, Deltas: 1}}}}, specgen.Script(answers).Rules...)})
	tr := c.call("blueprint/node/tasks", map[string]any{"blueprintId": bpID, "nodeId": storyID})
	alpha, beta := tr.str("tasks.0.id"), tr.str("tasks.1.id")
	if alpha == "" || beta == "" || tr.str("tasks.0.excerptText") != heading {
		t.Fatalf("node/tasks: %s", tr.Raw)
	}
	for _, id := range []string{alpha, beta} {
		up := c.call("blueprint/node/update", map[string]any{"blueprintId": bpID, "nodeId": id, "status": "done"})
		if up.str("node.status") != "done" {
			t.Fatalf("node/update: %s", up.Raw)
		}
	}
	c.waitFor("blueprint/updated", func(m *message) bool { return m.str("node.id") == beta })
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("beta\n"), 0o644)
	v := c.call("blueprint/verify", map[string]any{"blueprintId": bpID, "nodeId": storyID})
	if v.get("data.0.passed") != true || v.get("data.1.passed") != true {
		t.Fatalf("verify: %s", v.Raw)
	}
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("broken\n"), 0o644)
	v = c.call("blueprint/verify", map[string]any{"blueprintId": bpID, "nodeId": storyID})
	if v.get("data.0.reopened") != true || v.get("data.1.reopened") != false {
		t.Fatalf("verify after the break: %s", v.Raw)
	}
	plan, err := os.ReadFile(filepath.Join(dir, ".apserver", "blueprints", bpID, "plan.md"))
	if err != nil || !strings.Contains(string(plan), "- [ ] task Write alpha `"+alpha+"`") || !strings.Contains(string(plan), "- [x] task Write beta `"+beta+"`") {
		t.Fatalf("plan.md: %v\n%s", err, plan)
	}

	// A new version with the story's text changed.
	var idx int
	for i, n := range sp.Nodes {
		if n.Start == storyStart {
			idx = i
		}
	}
	sp2 := sp.Edit(idx)
	d2, _ := blueprint.Parse(sp2.Text)
	model.SetScript(specgen.Script(sp2.Answers(d2, budget, 0)))
	os.WriteFile(filepath.Join(dir, "spec.md"), []byte(sp2.Text), 0o644)
	r2 := c.call("blueprint/ingest", map[string]any{"cwd": dir, "path": "spec.md", "chunkTokens": budget, "blueprintId": bpID})
	v2 := r2.str("version.id")
	c.waitFor("blueprint/progress", func(m *message) bool { return m.str("versionId") == v2 && m.str("status") == "ready" })
	df := c.call("blueprint/diff", map[string]any{"blueprintId": bpID})
	if df.str("modified.0.id") != storyID || df.get("modified.1") != nil || df.str("review.0.id") != alpha || df.str("review.1.id") != beta {
		t.Fatalf("diff: %s", df.Raw)
	}
	c.callErr("blueprint/cancel", map[string]any{"blueprintId": bpID}, -32602, "no ingestion in flight")
}
