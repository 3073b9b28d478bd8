package patch

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"",
		patchText("*** Add File: a", "+x", "", "+y"),
		patchText("*** Update File: a", "*** Move to: b", "@@ class A:", "@@   def f():", " x", "", "-y", "+z", "*** End of File"),
		patchText("*** Update File: a", "@@ -1,3 +1,3 @@ f", "-x", "@@", " y", "+z", "*** Delete File: c"),
		"apply_patch <<'EOF'\r\n*** Begin Patch\r\n*** Delete File: a\r\n*** End Patch\r\nEOF\r\n",
		patchText("*** Update File: a", "@@ f", "@@", "-x"),
		patchText("*** Update File: a", "+only added"),
	} {
		f.Add(s, "x\ny\n  z\r\n")
	}
	f.Fuzz(func(t *testing.T, text, content string) {
		p, err := Parse(text)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse error %v is not a *ParseError", err)
			}
			if n := strings.Count(text, "\n") + 1; pe.Line < 1 || pe.Line > n {
				t.Fatalf("Parse error %v: line not in 1..%d", err, n)
			}
			return
		}
		if len(p.Ops) == 0 {
			t.Fatalf("Parse(%q) has no operations and no error", text)
		}
		for _, op := range p.Ops {
			if op.Path == "" {
				t.Fatalf("Parse(%q) gave an empty path", text)
			}
		}
		// Nothing exists; then everything exists.
		if _, err := Apply(p, memFS(nil)); err != nil {
			var ae *ApplyError
			if !errors.As(err, &ae) {
				t.Fatalf("Apply error %v is not an *ApplyError", err)
			}
		}
		everything := func(string) ([]byte, error) { return []byte(content), nil }
		if _, err := Apply(p, everything); err != nil {
			var ae *ApplyError
			if !errors.As(err, &ae) {
				t.Fatalf("Apply error %v is not an *ApplyError", err)
			}
		}
	})
}

// normalizeLines returns s without carriage returns, ending in a newline
// unless empty, with CRLF line endings if crlf.
func normalizeLines(s string, crlf bool) string {
	s = strings.ReplaceAll(s, "\r", "")
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	if crlf {
		s = strings.ReplaceAll(s, "\n", "\r\n")
	}
	return s
}

// applyFromDiff applies fromDiff(a, b) to a and returns the new contents, or
// a, false if the patch is empty.
func applyFromDiff(t *testing.T, a, b string) (string, bool) {
	t.Helper()
	text := fromDiff("f", []byte(a), []byte(b))
	if text == "" {
		return a, false
	}
	p, err := Parse(text)
	if err != nil {
		t.Fatalf("Parse(fromDiff(%q, %q)) = %v; patch:\n%s", a, b, err, text)
	}
	rs, err := Apply(p, memFS(map[string]string{"f": a}))
	if err != nil {
		t.Fatalf("Apply(fromDiff(%q, %q)) = %v; patch:\n%s", a, b, err, text)
	}
	return string(rs[0].New), true
}

func FuzzRoundTrip(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nB\nc\n", false)
	f.Add("", "x\n", true)
	f.Add("x\n", "", false)
	f.Add("x\nx\nx\ny\nx\nx\nx\nz\nx\n", "x\nx\ny\nx\nx\nx\nx\nz\nx\nq", false)
	f.Add("a\nx\nx\nx\nk\nx\nx\nx\nz\nx\nx\nx\nk\nx\nx\nx\nz\nx\nx\nx\ne\n", "A\nx\nx\nx\nk\nx\nx\nx\nz\nx\nx\nx\nk\nx\nx\nx\nZ\nx\nx\nx\ne\n", true)
	f.Add("\n\n\n", "\n \n\n\n", false)
	f.Add("*** End Patch\n@@\n", " *** End of File\n+\n", false)
	f.Add("“x”\n  y\n", "\"x\"\ny\n", true)
	f.Fuzz(func(t *testing.T, a, b string, crlf bool) {
		// Line text always survives.
		ra, rb := strings.ReplaceAll(a, "\r", ""), strings.ReplaceAll(b, "\r", "")
		got, _ := applyFromDiff(t, ra, rb)
		if g, w := texts(splitFile(got)), texts(splitFile(rb)); !reflect.DeepEqual(g, w) {
			t.Fatalf("Apply(fromDiff(%q, %q)) = %q, want the lines of %q", ra, rb, got, rb)
		}
		// With a newline at the end of each file, bytes do too.
		na, nb := normalizeLines(a, crlf), normalizeLines(b, crlf)
		got, changed := applyFromDiff(t, na, nb)
		if !changed && na != nb {
			t.Fatalf("fromDiff(%q, %q) = \"\"", na, nb)
		}
		if na == "" {
			nb = normalizeLines(nb, false) // a new file's lines end in "\n"
		}
		if got != nb {
			t.Fatalf("Apply(fromDiff(%q, %q)) = %q", na, nb, got)
		}
		// Few distinct lines make hunks ambiguous and fuzzy matches likely.
		sa, sb := fromAlphabet(a), fromAlphabet(b)
		if got, _ := applyFromDiff(t, sa, sb); got != sb {
			t.Fatalf("Apply(fromDiff(%q, %q)) = %q", sa, sb, got)
		}
	})
}

// alphabet holds lines that differ only in ways fuzzy matching ignores.
var alphabet = []string{"x", "x ", " x", "y", "", "“x”", "\"x\"", "*** End of File"}

// fromAlphabet returns a file with a line from alphabet for each byte of s.
func fromAlphabet(s string) string {
	var b strings.Builder
	for i := range len(s) {
		b.WriteString(alphabet[int(s[i])%len(alphabet)])
		b.WriteByte('\n')
	}
	return b.String()
}

func FuzzUnifiedDiff(f *testing.F) {
	for _, tc := range gitCases {
		f.Add(tc.old, tc.new, uint8(3))
	}
	f.Add("a\nb\nc\nd\ne\nf\ng\n", "a\nc\nd\ne\nf\nh\n", uint8(1))
	f.Fuzz(func(t *testing.T, a, b string, context uint8) {
		d := hunks([]byte(a), []byte(b), int(context%8))
		if a == b {
			if d != "" {
				t.Fatalf("hunks(%q, %q) = %q, want \"\"", a, b, d)
			}
			return
		}
		if got := applyUnified(t, a, d); got != b {
			t.Fatalf("applying hunks(%q, %q) =\n%s\ngave %q", a, b, d, got)
		}
	})
}

// fromDiff returns an apply_patch text that updates path from before to
// after, or "" if they have the same lines (the generator of the
// round-trip property: Apply(fromDiff(a, b)) == b). Its hunks carry three lines of
// context, more where needed for each to be found where it belongs; a hunk
// that reaches the end of the file ends with "*** End of File".
//
// The format compares line text only: a change of line endings, or of the
// newline at the end of the file, is not rendered.
func fromDiff(path string, before, after []byte) string {
	a, b := texts(splitFile(string(before))), texts(splitFile(string(after)))
	steps := diffLines(terminated(a), terminated(b))
	gs := groups(steps, 3)
	if len(gs) == 0 {
		return ""
	}
	aAt := func(k int) int {
		if k < len(steps) {
			return steps[k].a
		}
		return len(a)
	}
	hunk := func(lo, hi int, eof bool) Hunk {
		h := Hunk{EOF: eof}
		for _, s := range steps[lo:hi] {
			if s.op == '+' {
				h.Lines = append(h.Lines, Line{Op: '+', Text: b[s.b]})
			} else {
				h.Lines = append(h.Lines, Line{Op: s.op, Text: a[s.a]})
			}
		}
		return h
	}
	m := &matcher{lines: a}
	var out strings.Builder
	out.WriteString(beginMarker + "\n" + updatePrefix + " " + path + "\n")
	prevHi := 0
	for _, g := range gs {
		lo, hi := g[0], g[1]
		eof := aAt(hi) == len(a)
		h := hunk(lo, hi, eof)
		// Widen the leading context until the hunk is found where it
		// belongs. It always is once it starts where the search does.
		for grow := 1; len(oldSide(h.Lines)) > 0 && lo > prevHi; grow *= 2 {
			if idx, body := m.findBody(&h, aAt(prevHi)); idx == aAt(lo) && len(body) == len(h.Lines) {
				break
			}
			lo = max(lo-grow, prevHi)
			h = hunk(lo, hi, eof)
		}
		out.WriteString("@@\n")
		for _, l := range h.Lines {
			out.WriteByte(l.Op)
			out.WriteString(l.Text)
			out.WriteByte('\n')
		}
		if eof {
			out.WriteString(eofMarker + "\n")
		}
		prevHi = hi
	}
	out.WriteString(endMarker + "\n")
	return out.String()
}

// terminated returns each line with a newline appended.
func terminated(lines []string) []string {
	t := make([]string, len(lines))
	for i, l := range lines {
		t[i] = l + "\n"
	}
	return t
}
