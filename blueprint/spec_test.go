package blueprint_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/apserver/apserver/blueprint"
	"github.com/apserver/apserver/internal/specgen"
	"github.com/apserver/apserver/protocol"
)

// outline runs the pure pipeline over a generated spec with the planner's
// correct answers: split, parse every page, merge.
func outline(t testing.TB, sp *specgen.Spec, budget, k int) (*blueprint.Doc, *blueprint.Tree, int) {
	t.Helper()
	d, err := blueprint.Parse(sp.Text)
	if err != nil {
		t.Fatal(err)
	}
	answers := sp.Answers(d, budget, k)
	var found []blueprint.Found
	pages := 0
	for _, cp := range answers {
		at := blueprint.Begin(cp.Chunk)
		for i, raw := range cp.Pages {
			p, err := blueprint.ParsePage(d, cp.Chunk, at, k, []byte(raw))
			if err != nil {
				t.Fatalf("chunk %d page %d: %v", cp.Chunk.Index, i, err)
			}
			if want := ""; i == len(cp.Pages)-1 && p.Next != want {
				t.Fatalf("last page's cursor %q", p.Next)
			}
			at = p.At
			found = append(found, p.Nodes...)
			pages++
		}
	}
	tree, err := blueprint.Merge(d, found)
	if err != nil {
		t.Fatal(err)
	}
	return d, tree, pages
}

// TestGeneratedSpecTree: the generated specification, outlined chunk by
// chunk with pages, makes exactly the tree the generator wrote: same
// kinds, parents, heading offsets, reading order; nodes repeated
// across chunk boundaries merged; coverage at least 98% and every
// normative sentence mapped.
func TestGeneratedSpecTree(t *testing.T) {
	for _, tc := range []struct {
		name      string
		shape     specgen.Shape
		budget, k int
	}{
		{"small-tiny-chunks", specgen.Small, 300, 3},
		{"small-one-chunk", specgen.Small, 0, 0},
		{"large", specgen.Large, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "large" && testing.Short() {
				t.Skip("large spec")
			}
			sp := specgen.Generate(7, tc.shape)
			d, tree, pages := outline(t, sp, tc.budget, tc.k)
			chunks := blueprint.Split(d, tc.budget)
			if tc.name == "large" {
				if sp.Words < 450_000 || sp.Words > 550_000 {
					t.Errorf("large spec has %d words, want ~500,000", sp.Words)
				}
				t.Logf("%d words, %d bytes, %d chunks, %d pages, %d nodes", sp.Words, len(sp.Text), len(chunks), pages, len(tree.Nodes))
			}
			if tc.name == "small-tiny-chunks" {
				dups := 0
				for _, c := range chunks {
					dups += len(c.Context)
				}
				if dups == 0 || pages <= len(chunks) {
					t.Fatalf("the test does not exercise repeated nodes (%d) or pages (%d for %d chunks)", dups, pages, len(chunks))
				}
			}
			if len(tree.Nodes) != len(sp.Nodes) {
				t.Fatalf("%d nodes, want %d", len(tree.Nodes), len(sp.Nodes))
			}
			ids := map[string]bool{}
			for i, n := range tree.Nodes {
				w := sp.Nodes[i]
				if n.Kind != w.Kind || n.Start != w.Start || n.Order != i {
					t.Fatalf("node %d = %s@%d order %d, want %s@%d", i, n.Kind, n.Start, n.Order, w.Kind, w.Start)
				}
				if !strings.HasPrefix(sp.Text[n.Start:], strings.Repeat("#", w.Level)+" "+w.Heading+"\n") {
					t.Fatalf("node %d offset %d points at %q, want heading %q", i, n.Start, sp.Text[n.Start:n.Start+40], w.Heading)
				}
				wantParent := ""
				if w.Parent >= 0 {
					wantParent = tree.Nodes[w.Parent].ID
				}
				if n.ParentID != wantParent {
					t.Fatalf("node %d (%s) parent %q, want %q", i, n.Title, n.ParentID, wantParent)
				}
				if ids[n.ID] {
					t.Fatalf("id %s twice, at node %d (%v)", n.ID, i, n.Anchor)
				}
				ids[n.ID] = true
				if len(n.Unresolved) > 0 || len(n.DependsOn) != len(w.DependsOn) {
					t.Fatalf("node %d deps %v unresolved %v, want %v", i, n.DependsOn, n.Unresolved, w.DependsOn)
				}
				if n.End < n.SectionEnd || n.SectionEnd <= n.Start {
					t.Fatalf("node %d offsets %d %d %d", i, n.Start, n.SectionEnd, n.End)
				}
			}
			// A parent's span holds its children's.
			idx := tree.Index()
			for _, n := range tree.Nodes {
				if n.ParentID != "" {
					p := tree.Nodes[idx[n.ParentID]]
					if n.Start < p.Start || n.End > p.End {
						t.Fatalf("%v [%d,%d) outside its parent [%d,%d)", n.Anchor, n.Start, n.End, p.Start, p.End)
					}
				}
			}
			cov := blueprint.Measure(d, tree)
			if cov.Ratio() < 0.98 {
				t.Errorf("coverage %.4f < 0.98 (gaps %v)", cov.Ratio(), cov.Gaps)
			}
			if len(cov.Normative) != sp.Normative {
				t.Errorf("%d normative sentences found, the generator wrote %d", len(cov.Normative), sp.Normative)
			}
			for _, s := range cov.Normative {
				if s.NodeID == "" {
					t.Fatalf("normative sentence %q at %d unmapped", s.Text, s.Start)
				}
			}
		})
	}
}

// TestGeneratedSpecDeterministic: one seed, one document.
func TestGeneratedSpecDeterministic(t *testing.T) {
	a, b := specgen.Generate(3, specgen.Small), specgen.Generate(3, specgen.Small)
	c := specgen.Generate(4, specgen.Small)
	if a.Text != b.Text || a.Text == c.Text {
		t.Fatal("Generate is not a function of its seed")
	}
	if !slices.ContainsFunc(a.Nodes, func(n specgen.Node) bool { return n.Heading == "Acceptance" }) {
		t.Fatal("no repeated heading")
	}
	_ = protocol.KindTask
}

// BenchmarkOutlineLarge: apserver's own work on the ~500,000-word
// specification without the model and the store: parse, split, validate
// every page, merge, measure coverage (the answers are made before).
func BenchmarkOutlineLarge(b *testing.B) {
	sp := specgen.Generate(1, specgen.Large)
	d0, err := blueprint.Parse(sp.Text)
	if err != nil {
		b.Fatal(err)
	}
	answers := sp.Answers(d0, 0, 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(sp.Text)))
	for b.Loop() {
		d, err := blueprint.Parse(sp.Text)
		if err != nil {
			b.Fatal(err)
		}
		chunks := blueprint.Split(d, 0)
		var found []blueprint.Found
		for i, cp := range answers {
			at := blueprint.Begin(chunks[i])
			for _, raw := range cp.Pages {
				p, err := blueprint.ParsePage(d, chunks[i], at, 0, []byte(raw))
				if err != nil {
					b.Fatal(err)
				}
				at = p.At
				found = append(found, p.Nodes...)
			}
		}
		tree, err := blueprint.Merge(d, found)
		if err != nil {
			b.Fatal(err)
		}
		if c := blueprint.Measure(d, tree); c.Ratio() < 0.98 {
			b.Fatal(c.Ratio())
		}
	}
}
