package patch

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/hexops/gotextdiff/myers"
)

// Hunks returns the hunks of the unified diff from before to after with three
// lines of context, without the ---/+++ lines, or "" if they are equal.
func Hunks(before, after []byte) string {
	return hunks(before, after, 3)
}

func hunks(before, after []byte, context int) string {
	if bytes.Equal(before, after) {
		return ""
	}
	a, b := rawLines(string(before)), rawLines(string(after))
	steps := diffLines(a, b)
	var out strings.Builder
	for _, g := range groups(steps, max(context, 0)) {
		lo, hi := g[0], g[1]
		na, nb := 0, 0
		for _, s := range steps[lo:hi] {
			if s.op != '+' {
				na++
			}
			if s.op != '-' {
				nb++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(steps[lo].a, na), hunkRange(steps[lo].b, nb))
		for _, s := range steps[lo:hi] {
			var l string
			if s.op == '+' {
				l = b[s.b]
			} else {
				l = a[s.a]
			}
			out.WriteByte(s.op)
			out.WriteString(l)
			if !strings.HasSuffix(l, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
	}
	return out.String()
}

// hunkRange formats the range of n lines after the first start lines.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// rawLines splits s after each newline.
func rawLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// step is one line of an edit script: a line of a kept (' '), a line of a
// removed ('-'), or a line of b added ('+'). a and b count the lines of each
// side before the step, so they index the step's line.
type step struct {
	op   byte
	a, b int
}

// The Myers diff in gotextdiff keeps a row of 2(n+m)+1 ints for each of the
// d edits it finds, so diffLines bounds what it gives it, after dropping a
// common prefix and suffix: at most maxMyers lines, of which at most
// maxMyersEdits (a lower bound on d) have no equal on the other side. Beyond
// that the differing middle is replaced whole.
const (
	maxMyers      = 2000
	maxMyersEdits = 400
)

// diffLines returns an edit script from a to b. Every line but the last of
// each must end in a newline, and no line may hold another.
func diffLines(a, b []string) []step {
	n, m := len(a), len(b)
	pre := 0
	for pre < n && pre < m && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < n-pre && suf < m-pre && a[n-1-suf] == b[m-1-suf] {
		suf++
	}
	steps := make([]step, 0, n+m-pre-suf)
	for i := range pre {
		steps = append(steps, step{' ', i, i})
	}
	ma, mb := a[pre:n-suf], b[pre:m-suf]
	mid, ok := myersSteps(ma, mb, pre)
	if !ok {
		mid = mid[:0]
		for i := range ma {
			mid = append(mid, step{'-', pre + i, pre})
		}
		for j := range mb {
			mid = append(mid, step{'+', pre + len(ma), pre + j})
		}
	}
	steps = append(steps, mid...)
	for i := range suf {
		steps = append(steps, step{' ', n - suf + i, m - suf + i})
	}
	return steps
}

// myersSteps returns the Myers edit script from a to b, which follow off
// equal lines, or false if either is empty (the script is trivial), they are
// too long, or the script is not valid.
func myersSteps(a, b []string, off int) ([]step, bool) {
	if len(a) == 0 || len(b) == 0 || len(a)+len(b) > maxMyers || unmatched(a, b) > maxMyersEdits {
		return nil, false
	}
	edits := myers.ComputeEdits("", strings.Join(a, ""), strings.Join(b, ""))
	var steps []step
	i, j := 0, 0
	for _, e := range edits {
		s, t := e.Span.Start().Line()-1, e.Span.End().Line()-1
		if s < i || t < s || t > len(a) {
			return nil, false
		}
		for ; i < s; i, j = i+1, j+1 {
			if j >= len(b) || a[i] != b[j] {
				return nil, false
			}
			steps = append(steps, step{' ', off + i, off + j})
		}
		for ; i < t; i++ {
			steps = append(steps, step{'-', off + i, off + j})
		}
		if e.NewText == "" {
			continue
		}
		for _, l := range rawLines(e.NewText) {
			if j >= len(b) || l != b[j] {
				return nil, false
			}
			steps = append(steps, step{'+', off + i, off + j})
			j++
		}
	}
	for ; i < len(a); i, j = i+1, j+1 {
		if j >= len(b) || a[i] != b[j] {
			return nil, false
		}
		steps = append(steps, step{' ', off + i, off + j})
	}
	return steps, j == len(b)
}

// unmatched returns how many lines of a and b have no equal line on the
// other side, counting repeats, which is at most the edits between them.
func unmatched(a, b []string) int {
	count := make(map[string]int, len(a))
	for _, l := range a {
		count[l]++
	}
	for _, l := range b {
		count[l]--
	}
	n := 0
	for _, c := range count {
		n += max(c, -c)
	}
	return n
}

// groups returns the ranges [lo, hi) of steps to show as hunks with context
// kept lines around each change; changes closer than 2*context kept lines
// share a hunk.
func groups(steps []step, context int) [][2]int {
	var gs [][2]int
	for k := 0; k < len(steps); {
		if steps[k].op == ' ' {
			k++
			continue
		}
		lo := max(k-context, 0)
		if len(gs) > 0 {
			lo = max(lo, gs[len(gs)-1][1])
		}
		end := k // end of the last change run in the hunk
		for {
			for end < len(steps) && steps[end].op != ' ' {
				end++
			}
			next := end // start of the next change run
			for next < len(steps) && steps[next].op == ' ' {
				next++
			}
			if next == len(steps) || next-end > 2*context {
				gs = append(gs, [2]int{lo, min(end+context, len(steps))})
				k = next
				break
			}
			end = next
		}
	}
	return gs
}
