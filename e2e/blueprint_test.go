package e2e

import (
	"os"
	"path/filepath"
	"strings"
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
