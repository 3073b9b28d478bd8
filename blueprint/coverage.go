package blueprint

import (
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/apserver/apserver/protocol"
)

// MaxGaps bounds the gaps Coverage lists (the first ones).
const MaxGaps = 100

// maxSentenceText bounds the text of a normative sentence in a report.
const maxSentenceText = 300

// Coverage is how much of a document a tree holds.
type Coverage struct {
	// Total is the document's non-boilerplate bytes: every line but blank
	// lines, code fences, thematic breaks and a leading front matter block.
	Total int
	// Covered is the part of Total inside a node's own text
	// [Start, SectionEnd).
	Covered int
	// Gaps are the uncovered ranges, in order (the first MaxGaps).
	Gaps []protocol.ByteRange
	// Normative lists every sentence with MUST, SHALL, must or required
	// (any case), with the node that holds it ("" when none).
	Normative []protocol.NormativeSentence
}

// Ratio is Covered / Total (1 for an empty document).
func (c *Coverage) Ratio() float64 {
	if c.Total == 0 {
		return 1
	}
	return float64(c.Covered) / float64(c.Total)
}

// Measure computes the coverage of d by t.
func Measure(d *Doc, t *Tree) *Coverage {
	c := &Coverage{}
	text := d.Text
	// Node sections are disjoint and in order.
	secs := make([]protocol.ByteRange, 0, len(t.Nodes))
	for _, n := range t.Nodes {
		secs = append(secs, protocol.ByteRange{Start: n.Start, End: n.SectionEnd})
	}
	owner := func(off int) int {
		i := sort.Search(len(secs), func(i int) bool { return secs[i].End > off })
		if i < len(secs) && secs[i].Start <= off {
			return i
		}
		return -1
	}
	gapOpen := -1
	closeGap := func(end int) {
		if gapOpen >= 0 {
			if len(c.Gaps) < MaxGaps {
				c.Gaps = append(c.Gaps, protocol.ByteRange{Start: gapOpen, End: end})
			}
			gapOpen = -1
		}
	}
	front := frontMatterEnd(text)
	fence := false
	para := -1 // start of the current paragraph
	for pos := front; pos < len(text); {
		e := strings.IndexByte(text[pos:], '\n')
		next := len(text)
		if e < 0 {
			e = len(text)
		} else {
			e += pos
			next = e + 1
		}
		line := text[pos:e]
		trimmed := strings.TrimSpace(line)
		isFence := fenceOf(strings.TrimLeft(line, " ")) != ""
		if isFence {
			fence = !fence
		}
		boiler := trimmed == "" || isFence || isBreak(trimmed)
		heading := !fence && !isFence && strings.HasPrefix(trimmed, "#")
		if boiler || heading {
			if para >= 0 {
				c.sentences(text, para, pos, owner, t)
				para = -1
			}
		} else if para < 0 {
			para = pos
		}
		if !boiler {
			c.Total += len(line)
			// Count the covered part of the line.
			covered := 0
			for off := pos; off < e; {
				i := owner(off)
				if i < 0 {
					j := sort.Search(len(secs), func(j int) bool { return secs[j].Start > off })
					stop := e
					if j < len(secs) && secs[j].Start < e {
						stop = secs[j].Start
					}
					if gapOpen < 0 {
						gapOpen = off
					}
					off = stop
					continue
				}
				closeGap(off)
				stop := min(secs[i].End, e)
				covered += stop - off
				off = stop
			}
			c.Covered += covered
		}
		pos = next
	}
	if para >= 0 {
		c.sentences(text, para, len(text), owner, t)
	}
	closeGap(len(text))
	return c
}

// sentences adds the normative sentences of text[start:end] (a paragraph).
func (c *Coverage) sentences(text string, start, end int, owner func(int) int, t *Tree) {
	p := text[start:end]
	s := 0
	for i := 0; i <= len(p); i++ {
		last := i == len(p)
		if !last {
			ch := p[i]
			if !(ch == '.' || ch == '!' || ch == '?') || (i+1 < len(p) && p[i+1] != ' ' && p[i+1] != '\n') {
				continue
			}
		}
		e := i
		if !last {
			e = i + 1
		}
		sent := p[s:e]
		if isNormative(sent) {
			lead := len(sent) - len(strings.TrimLeft(sent, " \n\t-*0123456789."))
			ns := protocol.NormativeSentence{Start: start + s + lead, End: start + e, Text: clip(strings.Join(strings.Fields(sent), " "))}
			if o := owner(ns.Start); o >= 0 {
				ns.NodeID = t.Nodes[o].ID
			}
			c.Normative = append(c.Normative, ns)
		}
		s = e
	}
}

func clip(s string) string {
	if len(s) <= maxSentenceText {
		return s
	}
	i := maxSentenceText
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// normativeWords are the words that make a sentence normative.
var normativeWords = []string{"must", "shall", "required"}

func isNormative(s string) bool {
	for _, w := range normativeWords {
		if containsWordFold(s, w) {
			return true
		}
	}
	return false
}

// containsWordFold reports whether s holds w (lower case ASCII) as a whole
// word, ignoring case.
func containsWordFold(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if !strings.EqualFold(s[i:i+len(w)], w) {
			continue
		}
		if i > 0 && isWordByte(s[i-1]) {
			continue
		}
		if j := i + len(w); j < len(s) && isWordByte(s[j]) {
			continue
		}
		return true
	}
	return false
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// isBreak reports a thematic break: three or more -, * or _ and spaces.
func isBreak(s string) bool {
	if len(s) < 3 {
		return false
	}
	c := s[0]
	if c != '-' && c != '*' && c != '_' {
		return false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case c:
			n++
		case ' ', '\t':
		default:
			return false
		}
	}
	return n >= 3
}

// frontMatterEnd is the end of a leading "---" front matter block, or 0.
func frontMatterEnd(text string) int {
	if !strings.HasPrefix(text, "---\n") {
		return 0
	}
	if i := strings.Index(text[4:], "\n---\n"); i >= 0 {
		return 4 + i + 5
	}
	return 0
}
