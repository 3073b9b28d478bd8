package blueprint

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/apserver/apserver/protocol"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (review, then -update):\n%s", name, got)
	}
}

// TestGoldenOutline: a small specification, outlined in two chunks whose
// second repeats the headings it continues inside, merges into the tree of
// testdata/outline.json; its plan projection is testdata/plan.md.
func TestGoldenOutline(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("testdata", "spec.md"))
	if err != nil {
		t.Fatal(err)
	}
	d := mustParse(t, string(doc))
	chunks := Split(d, 60)
	var found []Found
	for _, c := range chunks {
		// The planner's answer: the context headings, then the chunk's.
		var nodes []string
		for _, hi := range c.Context {
			nodes = append(nodes, d.Headings[hi].Text)
		}
		lo, hi := d.HeadingsIn(c.Start, c.End)
		for i := lo; i < hi; i++ {
			nodes = append(nodes, d.Headings[i].Text)
		}
		kinds := map[int]protocol.NodeKind{1: protocol.KindPhase, 2: protocol.KindEpic, 3: protocol.KindFeature, 4: protocol.KindStory, 5: protocol.KindTask}
		var raw []map[string]any
		for _, h := range nodes {
			lvl := 0
			for _, x := range d.Headings {
				if x.Text == h {
					lvl = x.Level
				}
			}
			raw = append(raw, map[string]any{"kind": kinds[lvl], "heading": h, "title": "", "summary": "", "priority": "", "risk": "", "estimate": "", "dependsOn": []string{}})
		}
		b, _ := json.Marshal(map[string]any{"nodes": raw, "next": ""})
		p, err := ParsePage(d, c, Begin(c), 0, b)
		if err != nil {
			t.Fatal(err)
		}
		found = append(found, p.Nodes...)
	}
	if len(chunks) < 2 {
		t.Fatalf("%d chunks: the golden spec must span several", len(chunks))
	}
	tr, err := Merge(d, found)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.MarshalIndent(tr.Nodes, "", "  ")
	golden(t, "outline.json", string(out)+"\n")
	tr.Nodes[3].Status = protocol.NodeDone
	golden(t, "plan.md", RenderPlan(PlanInfo{BlueprintID: "bp_1", Title: "Shop", VersionID: "bpv_1", Version: 1}, tr, nil, Measure(d, tr)))
}
