package blueprint

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
)

func mustParse(t testing.TB, s string) *Doc {
	t.Helper()
	d, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		err  error
		want []string // "level:text"
	}{
		{"", ErrEmpty, nil},
		{" \n\t\n", ErrEmpty, nil},
		{"a\x00b", ErrBinary, nil},
		{"a\xffb", ErrBinary, nil},
		{"# A\ntext\n## B ##\n```\n# not\n```\n####### no\n#no\n   ### C\n    # code\n", nil, []string{"1:A", "2:B", "3:C"}},
		{"plain text\nonly\n", nil, nil},
	} {
		d, err := Parse(tc.in)
		if !errors.Is(err, tc.err) {
			t.Errorf("Parse(%q) error %v, want %v", tc.in, err, tc.err)
			continue
		}
		if err != nil {
			continue
		}
		var got []string
		for _, h := range d.Headings {
			got = append(got, fmt.Sprintf("%d:%s", h.Level, h.Text))
			if !strings.HasPrefix(strings.TrimLeft(tc.in[h.Start:], " "), "#") {
				t.Errorf("heading %q at %d: not a heading line", h.Text, h.Start)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("Parse(%q) headings %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestSplit: chunks tile the document, end on heading starts when a
// section fits, stay within the budget, and are substrings (no copy).
func TestSplit(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "## Section %d\n\n%s\n\n", i, strings.Repeat("word ", 10+i*7))
	}
	b.WriteString("## Huge\n\n" + strings.Repeat(strings.Repeat("long line ", 30)+"\n", 80) + strings.Repeat("x", 5000) + "é" + strings.Repeat("y", 3000))
	d := mustParse(t, b.String())
	for _, budget := range []int{50, 100, 400, 0} {
		cs := Split(d, budget)
		max := budget * bytesPerToken
		if budget == 0 {
			max = DefaultChunkTokens * bytesPerToken
		}
		pos := 0
		for i, c := range cs {
			if c.Start != pos || c.Index != i || c.End <= c.Start {
				t.Fatalf("budget %d: chunk %d [%d,%d) does not follow %d", budget, i, c.Start, c.End, pos)
			}
			if c.End-c.Start > max {
				t.Fatalf("budget %d: chunk %d has %d bytes > %d", budget, i, c.End-c.Start, max)
			}
			if !strings.HasPrefix(d.Text[c.Start:], "## ") {
				// Only a section larger than the budget is cut off a heading.
				hi := searchHeading(d.Headings, c.Start) - 1
				end := len(d.Text)
				if hi+1 < len(d.Headings) {
					end = d.Headings[hi+1].Start
				}
				if end-d.Headings[hi].Start <= max {
					t.Fatalf("budget %d: chunk %d starts inside section %q, which fits", budget, i, d.Headings[hi].Text)
				}
			}
			pos = c.End
		}
		if pos != len(d.Text) {
			t.Fatalf("budget %d: chunks end at %d of %d", budget, pos, len(d.Text))
		}
	}
}

func TestSplitContext(t *testing.T) {
	d := mustParse(t, "# P\n\n## E\n\n"+strings.Repeat("a b c d\n\n", 30)+"### F\n\ntext\n")
	cs := Split(d, 20)
	last := cs[len(cs)-1]
	var ctx []string
	for _, i := range last.Context {
		ctx = append(ctx, d.Headings[i].Text)
	}
	if fmt.Sprint(ctx) != "[P E]" {
		t.Fatalf("last chunk's context %v, want [P E]", ctx)
	}
}

const pageDoc = "# Phase 1\n\nintro\n\n## Epic A\n\ntext\n\n## Epic A\n\nagain\n"

func TestParsePage(t *testing.T) {
	d := mustParse(t, pageDoc)
	c := Split(d, 0)[0]
	node := func(kind, heading string, extra string) string {
		return fmt.Sprintf(`{"kind":%q,"heading":%q,"title":"","summary":"","priority":"","risk":"","estimate":""%s,"dependsOn":[]}`, kind, heading, extra)
	}
	for _, tc := range []struct {
		name, raw string
		k         int
		wantErr   string
		wantStart []int
	}{
		{"ok", `{"nodes":[` + node("phase", "Phase 1", "") + `,` + node("epic", "epic a", "") + `,` + node("epic", "## Epic A", "") + `],"next":""}`, 3, "", []int{0, 18, 35}},
		{"markup ignored", `{"nodes":[` + node("phase", "**Phase** 1", "") + `,` + node("epic", "`Epic`  A", "") + `],"next":""}`, 3, "", []int{0, 18}},
		{"prose", `Here is the plan: {}`, 3, "not the JSON object", nil},
		{"cut off", `{"nodes":[` + node("phase", "Phase 1", ""), 3, "not the JSON object", nil},
		{"trailing", `{"nodes":[],"next":""} more`, 3, "text after", nil},
		{"no next", `{"nodes":[]}`, 3, `no "next"`, nil},
		{"unknown field", `{"nodes":[],"next":"","extra":1}`, 3, "unknown field", nil},
		{"too many", `{"nodes":[` + node("phase", "Phase 1", "") + `,` + node("epic", "Epic A", "") + `],"next":"x"}`, 1, "2 nodes in one answer, at most 1", nil},
		{"kind", `{"nodes":[` + node("module", "Phase 1", "") + `],"next":""}`, 3, `unknown kind "module"`, nil},
		{"heading", `{"nodes":[` + node("phase", "Phase 9", "") + `],"next":""}`, 3, `node 1 ("Phase 9"): no such heading`, nil},
		{"order", `{"nodes":[` + node("epic", "Epic A", "") + `,` + node("epic", "Epic A", "") + `,` + node("epic", "Epic A", "") + `],"next":""}`, 3, `node 3 ("Epic A"): no such heading`, nil},
		{"estimate", strings.Replace(`{"nodes":[`+node("phase", "Phase 1", "")+`],"next":""}`, `"estimate":""`, `"estimate":"XXL"`, 1), 3, `unknown estimate "XXL"`, nil},
		{"empty cursor loop", `{"nodes":[],"next":"p2"}`, 3, "no nodes but a cursor", nil},
	} {
		p, err := ParsePage(d, c, Begin(c), tc.k, []byte(tc.raw))
		if tc.wantErr != "" {
			var ae *AnswerError
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &ae) || !strings.Contains(err.Error(), "chunk 1 (bytes 0-") {
				t.Errorf("%s: error %v, want one naming the chunk and %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []int
		for _, n := range p.Nodes {
			got = append(got, n.Start)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.wantStart) {
			t.Errorf("%s: starts %v, want %v", tc.name, got, tc.wantStart)
		}
	}
}

func found(kind protocol.NodeKind, d *Doc, heading string, nth int, deps ...string) Found {
	n := 0
	for _, h := range d.Headings {
		if h.Text == heading {
			if n == nth {
				return Found{Kind: kind, Title: heading, Start: h.Start, Level: h.Level, DependsOn: deps}
			}
			n++
		}
	}
	panic("no heading " + heading)
}

func TestMergeStrictKinds(t *testing.T) {
	d := mustParse(t, "# P\n\n## S\n\n### F\n\n")
	_, err := Merge(d, []Found{found(protocol.KindPhase, d, "P", 0), found(protocol.KindStory, d, "S", 0), found(protocol.KindFeature, d, "F", 0)})
	var me *MergeError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), `feature "F" (byte 11) sits under story "S"`) {
		t.Fatalf("Merge = %v, want a story-above-feature error", err)
	}
}

func TestMergeRepeatsAndDeps(t *testing.T) {
	d := mustParse(t, pageDoc)
	tr, err := Merge(d, []Found{
		found(protocol.KindEpic, d, "Epic A", 1, "Epic A", "nowhere"),
		found(protocol.KindPhase, d, "Phase 1", 0),
		found(protocol.KindEpic, d, "Epic A", 0, "Phase 1"),
		{Kind: protocol.KindPhase, Title: "Phase 1", Summary: "from the second chunk", Start: 0, Level: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Nodes) != 3 {
		t.Fatalf("%d nodes, want 3 (the repeat folded)", len(tr.Nodes))
	}
	p, a1, a2 := tr.Nodes[0], tr.Nodes[1], tr.Nodes[2]
	if p.Summary != "from the second chunk" || a1.ParentID != p.ID || a2.ParentID != p.ID {
		t.Fatalf("tree %+v", tr.Nodes)
	}
	if a1.ID == a2.ID || a2.Anchor[1] != "Epic A #2" {
		t.Fatalf("siblings with one heading: ids %s %s anchors %v", a1.ID, a2.ID, a2.Anchor)
	}
	if p.End != len(pageDoc) || p.SectionEnd != a1.Start || a1.End != a2.Start {
		t.Fatalf("offsets %+v", tr.Nodes)
	}
	// "Epic A" names the first Epic A; the second waits for it; "nowhere"
	// is kept; a1 -> Phase 1 is fine.
	if fmt.Sprint(a2.DependsOn) != fmt.Sprint([]string{a1.ID}) || fmt.Sprint(a2.Unresolved) != "[nowhere]" || fmt.Sprint(a1.DependsOn) != fmt.Sprint([]string{p.ID}) {
		t.Fatalf("deps a1 %v a2 %v unresolved %v", a1.DependsOn, a2.DependsOn, a2.Unresolved)
	}
}

func TestCheckDeps(t *testing.T) {
	nodes := []protocol.BlueprintNode{{ID: "a", Title: "A"}, {ID: "b", Title: "B", DependsOn: []string{"a"}}, {ID: "c", Title: "C", DependsOn: []string{"b"}}}
	if err := CheckDeps(nodes); err != nil {
		t.Fatal(err)
	}
	nodes[0].DependsOn = []string{"c"}
	if err := CheckDeps(nodes); err == nil || !strings.Contains(err.Error(), "dependency cycle: a (A) -> c (C) -> b (B) -> a") {
		t.Fatalf("CheckDeps = %v, want the cycle named", err)
	}
	nodes[0].DependsOn = []string{"zz"}
	if err := CheckDeps(nodes); err != nil {
		t.Fatalf("CheckDeps = %v: an unknown id is UnknownDeps' to report", err)
	}
	if got := UnknownDeps(&Tree{Nodes: nodes}, []string{"a", "zz", "c"}); fmt.Sprint(got) != "[zz]" {
		t.Fatalf("UnknownDeps = %v", got)
	}
}

func TestCoverageGapsAndNormative(t *testing.T) {
	doc := "Preamble text that MUST be read.\n\n# A\n\nCovered. It is required here.\n\n## Skipped\n\nNot in the tree; it shall show.\n\n---\n\n# B\n\nMore.\n"
	d := mustParse(t, doc)
	tr, err := Merge(d, []Found{found(protocol.KindPhase, d, "A", 0), found(protocol.KindPhase, d, "B", 0)})
	if err != nil {
		t.Fatal(err)
	}
	c := Measure(d, tr)
	var unc, mapped []string
	for _, s := range c.Normative {
		if s.NodeID == "" {
			unc = append(unc, s.Text)
		} else {
			mapped = append(mapped, s.Text)
		}
	}
	if fmt.Sprint(unc) != "[Preamble text that MUST be read. Not in the tree; it shall show.]" || fmt.Sprint(mapped) != "[It is required here.]" {
		t.Fatalf("uncovered %q mapped %q", unc, mapped)
	}
	if len(c.Gaps) != 2 || doc[c.Gaps[1].Start:c.Gaps[1].Start+10] != "## Skipped" {
		t.Fatalf("gaps %v", c.Gaps)
	}
	total := len("Preamble text that MUST be read.") + len("# A") + len("Covered. It is required here.") + len("## Skipped") + len("Not in the tree; it shall show.") + len("# B") + len("More.")
	covered := len("# A") + len("Covered. It is required here.") + len("# B") + len("More.")
	if c.Total != total || c.Covered != covered {
		t.Fatalf("covered %d of %d, want %d of %d", c.Covered, c.Total, covered, total)
	}
}

// TestReconcileAndDiff: three sections edited keep every id and are the
// only ones modified; a moved section keeps its id and is moved; a renamed
// heading keeps its id and is modified; a new one is added, a gone one
// removed.
func TestReconcileAndDiff(t *testing.T) {
	v1 := "# P\n\n## E1\n\none\n\n### F1\n\nf1\n\n### F2\n\nf2\n\n## E2\n\ntwo\n\n### F3\n\nf3\n\n### Old\n\ngone\n"
	v2 := "# P\n\n## E1\n\none edited\n\n### F1\n\nf1 edited\n\n## E2 renamed\n\ntwo\n\n### F3\n\nf3 edited\n\n### F2\n\nf2\n\n### New\n\nnew\n"
	tree := func(s string) *Tree {
		d := mustParse(t, s)
		var fs []Found
		for _, h := range d.Headings {
			fs = append(fs, Found{Kind: protocol.NodeKind([]string{"", "phase", "epic", "feature"}[h.Level]), Title: h.Text, Start: h.Start, Level: h.Level})
		}
		tr, err := Merge(d, fs)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	a, b := tree(v1), tree(v2)
	a.Nodes[2].Status = protocol.NodeDone // F1: done, then edited
	a.Nodes[3].Status = protocol.NodeDone // F2: done, moved
	Reconcile(a, b)
	ids := func(tr *Tree) map[string]string {
		m := map[string]string{}
		for _, n := range tr.Nodes {
			m[n.Title] = n.ID
		}
		return m
	}
	ia, ib := ids(a), ids(b)
	for _, title := range []string{"P", "E1", "F1", "F2", "F3"} {
		if ia[title] != ib[title] {
			t.Errorf("%s changed id %s -> %s", title, ia[title], ib[title])
		}
	}
	if ia["E2"] != ib["E2 renamed"] {
		t.Errorf("renamed E2 lost its id")
	}
	added, modified, removed, moved := Diff(a, b)
	names := func(cs []protocol.NodeChange) string {
		var s []string
		for _, c := range cs {
			s = append(s, c.Title)
		}
		return fmt.Sprint(s)
	}
	if names(added) != "[New]" || names(modified) != "[E1 F1 E2 renamed F3]" || names(removed) != "[Old]" || names(moved) != "[F2]" {
		t.Fatalf("diff added %s modified %s removed %s moved %s", names(added), names(modified), names(removed), names(moved))
	}
	bi := b.Index()
	if b.Nodes[bi[ib["F1"]]].Status != protocol.NodePlanned || b.Nodes[bi[ib["F2"]]].Status != protocol.NodeDone {
		t.Fatalf("statuses: edited done F1 %s (want planned), moved F2 %s (want done)", b.Nodes[bi[ib["F1"]]].Status, b.Nodes[bi[ib["F2"]]].Status)
	}
	if b.Nodes[bi[ib["F3"]]].ParentID != ib["E2 renamed"] {
		t.Fatalf("F3's parent not reconciled")
	}
}

func task(id string, order int, st protocol.NodeStatus, pr protocol.NodePriority, est protocol.Estimate, deps ...string) protocol.BlueprintNode {
	return protocol.BlueprintNode{ID: id, Title: id, Kind: protocol.KindTask, Order: order, Depth: 1, ParentID: "P", Status: st, Priority: pr, Estimate: est, DependsOn: deps}
}

func TestNext(t *testing.T) {
	pl, ip, dn, bl := protocol.NodePlanned, protocol.NodeInProgress, protocol.NodeDone, protocol.NodeBlocked
	mk := func(nodes ...protocol.BlueprintNode) *Tree { return &Tree{Nodes: nodes} }
	phase := func(id string, st protocol.NodeStatus) protocol.BlueprintNode {
		return protocol.BlueprintNode{ID: id, Title: id, Kind: protocol.KindPhase, Status: st}
	}
	story := func(id string, st protocol.NodeStatus) protocol.BlueprintNode {
		return protocol.BlueprintNode{ID: id, Title: id, Kind: protocol.KindStory, Status: st, Depth: 1, ParentID: "P"}
	}
	sub := func(n protocol.BlueprintNode, parent string) protocol.BlueprintNode {
		n.ParentID, n.Depth = parent, 2
		return n
	}
	for _, tc := range []struct {
		name string
		tree *Tree
		opt  NextOptions
		want string
		err  error
	}{
		{"deps gate", mk(phase("P", pl), task("a", 1, dn, "", ""), task("b", 2, pl, "", "", "a"), task("c", 3, pl, "", "", "b"), task("d", 4, pl, "", "", "zz")), NextOptions{}, "[b]", nil},
		{"blocked and done skipped", mk(phase("P", pl), task("a", 1, bl, "", ""), task("b", 2, dn, "", ""), task("c", 3, pl, "", "")), NextOptions{}, "[c]", nil},
		{"chain beats priority", mk(phase("P", pl), task("x", 1, pl, protocol.PriorityCritical, ""), task("y", 2, pl, protocol.PriorityLow, ""), task("z", 3, pl, "", "", "y")), NextOptions{}, "[y x]", nil},
		{"priority, size, order", mk(phase("P", pl), task("m", 1, pl, protocol.PriorityLow, "XS"), task("n", 2, pl, protocol.PriorityHigh, "XL"), task("o", 3, pl, protocol.PriorityHigh, "S"), task("p", 4, pl, protocol.PriorityHigh, "S")), NextOptions{}, "[o p n m]", nil},
		{"in-progress node first", mk(phase("P", pl), story("S1", pl), sub(task("a", 2, pl, protocol.PriorityCritical, ""), "S1"), story("S2", ip), sub(task("b", 4, pl, protocol.PriorityLow, ""), "S2")), NextOptions{}, "[b a]", nil},
		{"active phase", mk(phase("P", dn), task("a", 1, dn, "", ""), phase("Q", pl), protocol.BlueprintNode{ID: "q1", Kind: protocol.KindTask, Depth: 1, ParentID: "Q", Status: pl, Order: 3}), NextOptions{}, "[q1]", nil},
		{"named phase", mk(phase("P", pl), task("a", 1, pl, "", ""), phase("Q", pl), protocol.BlueprintNode{ID: "q1", Kind: protocol.KindTask, Depth: 1, ParentID: "Q", Status: pl, Order: 3}), NextOptions{Phase: "q"}, "[q1]", nil},
		{"page", mk(phase("P", pl), task("a", 1, pl, "", ""), task("b", 2, pl, "", ""), task("c", 3, pl, "", "")), NextOptions{Limit: 2, Cursor: "2"}, "[c]", nil},
		{"unknown phase", mk(phase("P", pl)), NextOptions{Phase: "nope"}, "", ErrUnknownPhase},
		{"bad cursor", mk(phase("P", pl)), NextOptions{Cursor: "x"}, "", ErrBadCursor},
	} {
		p, err := Next(tc.tree, tc.opt)
		if !errors.Is(err, tc.err) {
			t.Errorf("%s: Next error %v, want %v", tc.name, err, tc.err)
			continue
		}
		var got []string
		for _, n := range p.Tasks {
			got = append(got, n.Node.ID)
		}
		if tc.err == nil && fmt.Sprint(got) != tc.want {
			t.Errorf("%s: Next = %v, want %s", tc.name, got, tc.want)
		}
	}
}

// TestNextNeverUnmet: over a generated tree with random statuses, no task
// Next returns has a dependency that is not done, and paging returns each
// ready task once.
func TestNextNeverUnmet(t *testing.T) {
	tr := bigTaskTree(2000)
	for i := range tr.Nodes {
		if i%3 == 0 && tr.Nodes[i].Kind == protocol.KindTask {
			tr.Nodes[i].Status = protocol.NodeDone
		}
	}
	idx := tr.Index()
	seen := map[string]bool{}
	cursor := ""
	for {
		p, err := Next(tr, NextOptions{Cursor: cursor, Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		for _, nt := range p.Tasks {
			if seen[nt.Node.ID] {
				t.Fatalf("%s returned twice", nt.Node.ID)
			}
			seen[nt.Node.ID] = true
			for _, d := range nt.Node.DependsOn {
				if tr.Nodes[idx[d]].Status != protocol.NodeDone {
					t.Fatalf("%s returned with unmet dependency %s", nt.Node.ID, d)
				}
			}
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	if len(seen) == 0 {
		t.Fatal("nothing ready")
	}
}

// bigTaskTree is one phase with n tasks under stories of ten, each task
// depending on the one before it in its story and, every seventh, on a
// task of the previous story.
func bigTaskTree(n int) *Tree {
	nodes := []protocol.BlueprintNode{{ID: "P", Kind: protocol.KindPhase, Title: "P", Status: protocol.NodePlanned}}
	story := ""
	for i := 0; i < n; i++ {
		if i%10 == 0 {
			story = fmt.Sprintf("s%d", i/10)
			nodes = append(nodes, protocol.BlueprintNode{ID: story, Kind: protocol.KindStory, ParentID: "P", Depth: 1, Order: len(nodes), Status: protocol.NodePlanned})
		}
		tk := protocol.BlueprintNode{ID: fmt.Sprintf("t%d", i), Kind: protocol.KindTask, ParentID: story, Depth: 2, Order: len(nodes), Status: protocol.NodePlanned,
			Priority: []protocol.NodePriority{"high", "medium", "low"}[i%3], Estimate: []protocol.Estimate{"XS", "S", "M", "L", "XL"}[i%5]}
		if i%10 != 0 {
			tk.DependsOn = append(tk.DependsOn, fmt.Sprintf("t%d", i-1))
		}
		if i%7 == 0 && i >= 10 {
			tk.DependsOn = append(tk.DependsOn, fmt.Sprintf("t%d", i-10+i%10/2))
		}
		nodes = append(nodes, tk)
	}
	return &Tree{Nodes: nodes}
}

func BenchmarkNext10k(b *testing.B) {
	tr := bigTaskTree(10000)
	for i := range tr.Nodes {
		if i%4 == 0 && tr.Nodes[i].Kind == protocol.KindTask {
			tr.Nodes[i].Status = protocol.NodeDone
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Next(tr, NextOptions{Limit: 50}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRead(t *testing.T) {
	tr := bigTaskTree(25) // P, s0, t0..t9, s1, t10..t19, s2, t20..t24
	ids := func(ns []protocol.BlueprintNode) string {
		var s []string
		for _, n := range ns {
			s = append(s, n.ID)
		}
		return fmt.Sprint(s)
	}
	got, next, err := Read(tr, "", 1, "", 0)
	if err != nil || ids(got) != "[P s0 s1 s2]" || next != "" {
		t.Fatalf("depth 1: %s %q %v", ids(got), next, err)
	}
	got, next, err = Read(tr, "s1", 0, "", 4)
	if err != nil || ids(got) != "[s1 t10 t11 t12]" || next == "" {
		t.Fatalf("s1 page 1: %s %q %v", ids(got), next, err)
	}
	var all []protocol.BlueprintNode
	all = append(all, got...)
	for next != "" {
		got, next, err = Read(tr, "s1", 0, next, 4)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, got...)
	}
	if len(all) != 11 || all[10].ID != "t19" {
		t.Fatalf("s1 pages: %s", ids(all))
	}
	if _, _, err := Read(tr, "nope", 0, "", 0); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("unknown node: %v", err)
	}
	if _, _, err := Read(tr, "s1", 0, "0", 0); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("cursor outside the subtree: %v", err)
	}
}

// TestPlainText: a document without Markdown headings: nodes start at the
// lines the planner names, nesting follows kinds, coverage counts them.
func TestPlainText(t *testing.T) {
	doc := "Billing system\n\nPhase one: ledger\nThe ledger MUST balance.\n\nFeature: entries\nEntries are required to be signed.\n\nPhase two: reports\nReports.\n"
	d := mustParse(t, doc)
	c := Split(d, 0)[0]
	raw := `{"nodes":[` +
		`{"kind":"phase","heading":"Phase one: ledger","title":"","summary":"","priority":"","risk":"","estimate":"","dependsOn":[]},` +
		`{"kind":"feature","heading":"feature: ENTRIES","title":"Entries","summary":"","priority":"","risk":"","estimate":"","dependsOn":[]},` +
		`{"kind":"phase","heading":"Phase two: reports","title":"","summary":"","priority":"","risk":"","estimate":"","dependsOn":["Phase one: ledger"]}],"next":""}`
	p, err := ParsePage(d, c, Begin(c), 0, []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Merge(d, p.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Nodes) != 3 || tr.Nodes[1].ParentID != tr.Nodes[0].ID || tr.Nodes[2].ParentID != "" || tr.Nodes[2].DependsOn[0] != tr.Nodes[0].ID {
		t.Fatalf("tree %+v", tr.Nodes)
	}
	if got := doc[tr.Nodes[1].Start:tr.Nodes[1].SectionEnd]; got != "Feature: entries\nEntries are required to be signed.\n\n" {
		t.Fatalf("feature's text %q", got)
	}
	cov := Measure(d, tr)
	if len(cov.Gaps) != 1 || doc[cov.Gaps[0].Start:cov.Gaps[0].End] != "Billing system\n\n" {
		t.Fatalf("gaps %v", cov.Gaps)
	}
	for _, s := range cov.Normative {
		if s.NodeID == "" {
			t.Fatalf("unmapped %q", s.Text)
		}
	}
	if len(cov.Normative) != 2 {
		t.Fatalf("normative %v", cov.Normative)
	}
}
