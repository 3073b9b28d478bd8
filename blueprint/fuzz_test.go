package blueprint

import (
	"strings"
	"testing"
)

// FuzzParsePage: no document and no answer makes ParsePage or Merge
// panic; every node it accepts starts at a line start inside the chunk or
// at a heading the chunk continues inside, and a merged tree's offsets are
// ordered and inside the document.
func FuzzParsePage(f *testing.F) {
	f.Add("# P\n\n## E\n\ntext\n", `{"nodes":[{"kind":"phase","heading":"P","title":"","summary":"","priority":"","risk":"","estimate":"","dependsOn":[]}],"next":""}`, 8)
	f.Add("plain\nline two\n", `{"nodes":[{"kind":"task","heading":"line two","title":"x","summary":"","priority":"low","risk":"high","estimate":"XL","dependsOn":["plain"]}],"next":""}`, 2)
	f.Add("# A\n```\n# B\n```\n## C ##\n", `{"nodes":[],"next":""}`, 1)
	f.Fuzz(func(t *testing.T, doc, answer string, budget int) {
		if len(doc) > 4096 || len(answer) > 4096 {
			return // a chunk per 4 bytes of a long document is slow, not wrong
		}
		d, err := Parse(doc)
		if err != nil {
			return
		}
		budget = 1 + (budget&0xff)%64
		var found []Found
		for _, c := range Split(d, budget) {
			p, err := ParsePage(d, c, Begin(c), 4, []byte(answer))
			if err != nil {
				continue
			}
			for _, n := range p.Nodes {
				inChunk := n.Start >= c.Start && n.Start < c.End && (n.Start == 0 || doc[n.Start-1] == '\n' || strings.TrimLeft(doc[strings.LastIndexByte(doc[:n.Start], '\n')+1:n.Start], " ") == "")
				inCtx := false
				for _, hi := range c.Context {
					inCtx = inCtx || d.Headings[hi].Start == n.Start
				}
				if !inChunk && !inCtx {
					t.Fatalf("node at %d: not a line of chunk [%d,%d) nor a context heading", n.Start, c.Start, c.End)
				}
			}
			found = append(found, p.Nodes...)
		}
		tr, err := Merge(d, found)
		if err != nil {
			return
		}
		for i, n := range tr.Nodes {
			if n.Start < 0 || n.SectionEnd > len(doc) || n.End > len(doc) || n.Start > n.SectionEnd || n.SectionEnd > n.End {
				t.Fatalf("node %d offsets %d %d %d of %d", i, n.Start, n.SectionEnd, n.End, len(doc))
			}
			if i > 0 && tr.Nodes[i-1].Start >= n.Start {
				t.Fatalf("reading order broken at %d", i)
			}
		}
		Measure(d, tr)
	})
}
