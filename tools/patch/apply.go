package patch

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// Result is one file's change as computed by Apply.
type Result struct {
	Kind   Kind
	Path   string
	MoveTo string // Update only: the new path, or ""
	// Old is the file's contents before the patch: nil for an Add of a new
	// file, set when an Add overwrites an existing one.
	Old []byte
	// New is the file's contents after the patch, nil for Delete. After a
	// move, New belongs at MoveTo and Path is to be removed.
	New []byte
}

// ApplyError reports a patch that doesn't fit the files it changes.
type ApplyError struct {
	Path string // the operation's path
	// Line is the patch line of the hunk line that failed to match, or of the
	// operation for errors about the whole file.
	Line int
	Text string // the hunk line that failed to match, if any
	Msg  string
	Err  error // the underlying error, if any, such as fs.ErrNotExist
}

func (e *ApplyError) Error() string {
	var b strings.Builder
	b.WriteString("apply_patch: ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "patch line %d: ", e.Line)
	}
	b.WriteString(e.Msg)
	if e.Text != "" {
		fmt.Fprintf(&b, ": %q", e.Text)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *ApplyError) Unwrap() error { return e.Err }

// Apply computes the result of every operation in p, reading the files it
// needs through read, which must return an error satisfying
// errors.Is(err, fs.ErrNotExist) for a missing file. Apply writes nothing: on
// any error, returned as an *ApplyError, nothing is to be written.
//
// Add over an existing file is an overwrite whose Result has Old set. Update
// or Delete of a missing file, a Move to onto an existing file, a path that
// two operations touch (counting Move to destinations), and a hunk that isn't
// found are errors.
func Apply(p *Patch, read func(path string) ([]byte, error)) ([]Result, error) {
	if p == nil {
		return nil, nil
	}
	claimed := make(map[string]bool)
	claim := func(op *FileOp, name string) error {
		clean := path.Clean(name)
		if claimed[clean] {
			return &ApplyError{Path: op.Path, Line: op.Line, Msg: "file " + name + " is changed twice in one patch"}
		}
		claimed[clean] = true
		return nil
	}
	results := make([]Result, 0, len(p.Ops))
	for i := range p.Ops {
		op := &p.Ops[i]
		if op.Path == "" {
			return nil, &ApplyError{Line: op.Line, Msg: "empty path"}
		}
		if err := claim(op, op.Path); err != nil {
			return nil, err
		}
		if op.Kind == Update && op.MoveTo != "" && path.Clean(op.MoveTo) != path.Clean(op.Path) {
			if err := claim(op, op.MoveTo); err != nil {
				return nil, err
			}
		}
		r, err := applyOp(op, read)
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	return results, nil
}

func applyOp(op *FileOp, read func(string) ([]byte, error)) (Result, error) {
	r := Result{Kind: op.Kind, Path: op.Path}
	fail := func(msg string, err error) (Result, error) {
		return Result{}, &ApplyError{Path: op.Path, Line: op.Line, Msg: msg, Err: err}
	}
	switch op.Kind {
	case Add:
		old, err := read(op.Path)
		switch {
		case err == nil:
			if old == nil {
				old = []byte{}
			}
			r.Old = old
		case !errors.Is(err, fs.ErrNotExist):
			return fail("reading file", err)
		}
		r.New = []byte(op.Contents)
	case Delete:
		old, err := read(op.Path)
		if errors.Is(err, fs.ErrNotExist) {
			return fail("cannot delete", fs.ErrNotExist)
		} else if err != nil {
			return fail("reading file", err)
		}
		r.Old = old
	case Update:
		old, err := read(op.Path)
		if errors.Is(err, fs.ErrNotExist) {
			return fail("cannot update", fs.ErrNotExist)
		} else if err != nil {
			return fail("reading file", err)
		}
		if op.MoveTo != "" && path.Clean(op.MoveTo) != path.Clean(op.Path) {
			_, err := read(op.MoveTo)
			if err == nil {
				return fail("cannot move to "+op.MoveTo, fs.ErrExist)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return fail("reading "+op.MoveTo, err)
			}
			r.MoveTo = op.MoveTo
		}
		r.Old = old
		var herr *ApplyError
		if r.New, herr = applyHunks(old, op.Hunks); herr != nil {
			herr.Path = op.Path
			return Result{}, herr
		}
	default:
		return fail(fmt.Sprintf("unknown operation %v", op.Kind), nil)
	}
	return r, nil
}

// fileLine is one line of a file: its text and its line ending, which is
// "\n", "\r\n", or "" for a last line without a newline.
type fileLine struct {
	text, eol string
}

// splitFile splits s into lines.
func splitFile(s string) []fileLine {
	var lines []fileLine
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, fileLine{text: s})
			break
		}
		l := fileLine{text: s[:i], eol: "\n"}
		if strings.HasSuffix(l.text, "\r") {
			l = fileLine{text: s[:i-1], eol: "\r\n"}
		}
		lines = append(lines, l)
		s = s[i+1:]
	}
	return lines
}

// texts returns the text of each line.
func texts(lines []fileLine) []string {
	t := make([]string, len(lines))
	for i, l := range lines {
		t[i] = l.text
	}
	return t
}

// lineEnding returns the dominant line ending of lines, "\n" on a tie.
func lineEnding(lines []fileLine) string {
	crlf := 0
	for _, l := range lines {
		switch l.eol {
		case "\r\n":
			crlf++
		case "\n":
			crlf--
		}
	}
	if crlf > 0 {
		return "\r\n"
	}
	return "\n"
}

// applyHunks applies hunks in order to the file old. Its error lacks the
// Path.
func applyHunks(old []byte, hunks []Hunk) ([]byte, *ApplyError) {
	lines := splitFile(string(old))
	m := &matcher{lines: texts(lines)}
	// An edit replaces the n lines at pos following body.
	type edit struct {
		pos, n int
		body   []Line
	}
	var edits []edit
	pos := 0 // where the next search starts
	for hi := range hunks {
		h := &hunks[hi]
		start, anchor := pos, -1
		for ci, c := range h.Context {
			idx := m.seekHeader(c, start)
			if idx < 0 {
				return nil, &ApplyError{Line: lineAt(h.Line, ci-len(h.Context)), Text: c, Msg: "context not found"}
			}
			anchor, start = idx, idx+1
		}
		if anchor >= 0 {
			start = anchor // the body may begin with the @@ line itself
		}
		if len(oldSide(h.Lines)) == 0 {
			at := len(lines)
			if anchor >= 0 {
				at = anchor + 1
				pos = at
			}
			edits = append(edits, edit{pos: at, body: h.Lines})
			continue
		}
		idx, body := m.findBody(h, start)
		if idx < 0 {
			j := 0
			for h.Lines[j].Op == '+' {
				j++
			}
			return nil, &ApplyError{Line: lineAt(h.Line, j), Text: h.Lines[j].Text, Msg: "context not found"}
		}
		n := len(oldSide(body))
		edits = append(edits, edit{pos: idx, n: n, body: body})
		pos = idx + n
	}
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].pos < edits[j].pos })

	eol := lineEnding(lines)
	out := make([]fileLine, 0, len(lines))
	cur := 0
	for _, e := range edits {
		out = append(out, lines[cur:e.pos]...)
		cur = e.pos
		for _, l := range e.body {
			switch l.Op {
			case ' ':
				out = append(out, lines[cur])
				cur++
			case '-':
				cur++
			default:
				out = append(out, fileLine{text: l.Text, eol: eol})
			}
		}
	}
	out = append(out, lines[cur:]...)
	var b strings.Builder
	for i, l := range out {
		b.WriteString(l.text)
		if l.eol == "" && i < len(out)-1 {
			l.eol = eol // the old last line is no longer last
		}
		b.WriteString(l.eol)
	}
	return []byte(b.String()), nil
}

// lineAt returns the patch line off lines from base, or 0 if base is unknown.
func lineAt(base, off int) int {
	if base <= 0 {
		return 0
	}
	return base + off
}

// oldSide returns the text of the lines of body that must be in the file.
func oldSide(body []Line) []string {
	var old []string
	for _, l := range body {
		if l.Op != '+' {
			old = append(old, l.Text)
		}
	}
	return old
}

// The levels of fuzz in matching lines, tried in order.
const (
	exact = iota
	trimEnd
	trimBoth
	normalized
	levels
)

// key returns the form of s that lines are compared in at level.
func key(level int, s string) string {
	switch level {
	case trimEnd:
		return strings.TrimRightFunc(s, unicode.IsSpace)
	case trimBoth:
		return strings.TrimSpace(s)
	case normalized:
		return strings.Map(asciiPunct, strings.TrimSpace(s))
	}
	return s
}

// asciiPunct maps typographic punctuation and spaces to ASCII.
func asciiPunct(r rune) rune {
	switch {
	case r >= '\u2010' && r <= '\u2015', r == '\u2212':
		return '-'
	case r >= '\u2018' && r <= '\u201B':
		return '\''
	case r >= '\u201C' && r <= '\u201F':
		return '"'
	case r == '\u00A0', r >= '\u2002' && r <= '\u200A', r == '\u202F', r == '\u205F', r == '\u3000':
		return ' '
	}
	return r
}

// matcher finds lines in a file.
type matcher struct {
	lines []string
	keys  [levels][]string // keys[level][i] is key(level, lines[i]), filled on first use
}

func (m *matcher) keysAt(level int) []string {
	if level == exact {
		return m.lines
	}
	if m.keys[level] == nil {
		k := make([]string, len(m.lines))
		for i, l := range m.lines {
			k[i] = key(level, l)
		}
		m.keys[level] = k
	}
	return m.keys[level]
}

// seek returns the first index at or after start where pat matches, trying
// every index at one level before the next, or -1. With eof, the end of
// the file is tried first at every level.
func (m *matcher) seek(pat []string, start int, eof bool) int {
	n, k := len(m.lines), len(pat)
	if eof && n-k >= start {
		for level := range levels {
			if m.matchAt(pat, n-k, level) {
				return n - k
			}
		}
	}
	for level := range levels {
		want := make([]string, k)
		for j, p := range pat {
			want[j] = key(level, p)
		}
		lines := m.keysAt(level)
		for i := start; i+k <= n; i++ {
			if slices.Equal(lines[i:i+k], want) {
				return i
			}
		}
	}
	return -1
}

func (m *matcher) matchAt(pat []string, at, level int) bool {
	lines := m.keysAt(level)[at:]
	for j, p := range pat {
		if lines[j] != key(level, p) {
			return false
		}
	}
	return true
}

// seekHeader returns the first index at or after start of a line matching
// the @@ context text, or -1. Failing a match at every level, it accepts a
// line that contains the text.
func (m *matcher) seekHeader(text string, start int) int {
	if i := m.seek([]string{text}, start, false); i >= 0 {
		return i
	}
	want := key(normalized, text)
	if want == "" {
		return -1
	}
	lines := m.keysAt(normalized)
	for i := start; i < len(lines); i++ {
		if strings.Contains(lines[i], want) {
			return i
		}
	}
	return -1
}

// findBody finds where the lines of h that must be in the file are, searching
// from start, and returns that index and the body used, or -1. If they aren't
// found, it retries without trailing empty context or removed lines, which
// models add for the newline at the end of the file.
func (m *matcher) findBody(h *Hunk, start int) (int, []Line) {
	body := h.Lines
	for {
		if idx := m.seek(oldSide(body), start, h.EOF); idx >= 0 {
			return idx, body
		}
		k := len(body) - 1
		if body[k].Op == '+' || body[k].Text != "" {
			return -1, nil
		}
		body = body[:k]
		if len(oldSide(body)) == 0 {
			return -1, nil
		}
	}
}
