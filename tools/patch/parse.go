package patch

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Kind is what a FileOp does to its file.
type Kind int

// The kinds of file operation. The zero Kind is invalid.
const (
	Add Kind = iota + 1
	Update
	Delete
)

// String returns "add", "update" or "delete".
func (k Kind) String() string {
	switch k {
	case Add:
		return "add"
	case Update:
		return "update"
	case Delete:
		return "delete"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Line is one line of a hunk.
type Line struct {
	Op   byte   // ' ' context, '-' removed, '+' added
	Text string // the line without its prefix and newline
}

// Hunk is one change to a file: lines to find and what replaces them.
type Hunk struct {
	// Context holds the text of the hunk's @@ lines, outermost first; a bare
	// "@@" adds nothing.
	Context []string
	// Lines are the hunk's body lines in order.
	Lines []Line
	// EOF reports an "*** End of File" marker: the hunk belongs at the end of
	// the file.
	EOF bool
	// Line is the patch line of the first body line; the @@ lines holding
	// Context are the lines just above it. Zero if unknown.
	Line int
}

// FileOp is one operation of a patch.
type FileOp struct {
	Kind     Kind
	Path     string
	MoveTo   string // Update only: the new path, or ""
	Contents string // Add only: the new file's contents
	Hunks    []Hunk // Update only
	Line     int    // the patch line holding the operation's *** line
}

// Patch is a parsed apply_patch text.
type Patch struct {
	Ops []FileOp
}

// ParseError reports a patch that can't be parsed.
type ParseError struct {
	Line int    // 1-based line number in the patch text
	Text string // that line
	Msg  string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("patch line %d: %s: %q", e.Line, e.Msg, e.Text)
}

const (
	beginMarker  = "*** Begin Patch"
	endMarker    = "*** End Patch"
	eofMarker    = "*** End of File"
	addPrefix    = "*** Add File:"
	deletePrefix = "*** Delete File:"
	updatePrefix = "*** Update File:"
	movePrefix   = "*** Move to:"
)

var (
	// heredocStart matches the first line of a heredoc wrapper; the closing
	// word is in one of the three groups.
	heredocStart = regexp.MustCompile(`^(?:apply_patch|applypatch)?\s*<<-?\s*(?:'(\w+)'|"(\w+)"|(\w+))$`)
	// unifiedRange matches the ranges of a unified-diff hunk header after its
	// leading "@@"; group 1 is the text after the closing "@@".
	unifiedRange = regexp.MustCompile(`^\s*-\d+(?:,\d+)? \+\d+(?:,\d+)? @@(.*)$`)
)

// Parse parses an apply_patch text, leniently as described in the package
// doc. It returns a *ParseError for text it can't read, and never panics.
func Parse(text string) (*Patch, error) {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	lo, hi := trimBlank(lines, 0, len(lines))
	if lo < hi {
		if m := heredocStart.FindStringSubmatch(strings.TrimSpace(lines[lo])); m != nil {
			word := m[1] + m[2] + m[3]
			lo++
			if lo < hi && strings.TrimSpace(lines[hi-1]) == word {
				hi--
			}
			lo, hi = trimBlank(lines, lo, hi)
		}
	}
	if lo == hi {
		return nil, &ParseError{Line: 1, Text: lines[0], Msg: "empty patch"}
	}
	if strings.TrimSpace(lines[lo]) != beginMarker {
		return nil, &ParseError{Line: lo + 1, Text: lines[lo], Msg: "patch must start with " + beginMarker}
	}
	if hi-1 == lo || strings.TrimSpace(lines[hi-1]) != endMarker {
		return nil, &ParseError{Line: hi, Text: lines[hi-1], Msg: "patch must end with " + endMarker}
	}
	p := &parser{lines: lines, i: lo + 1, end: hi - 1}
	var ops []FileOp
	for p.i < p.end {
		t := strings.TrimSpace(p.lines[p.i])
		var op FileOp
		var err error
		switch {
		case t == "":
			p.i++
			continue
		case strings.HasPrefix(t, addPrefix):
			op, err = p.add()
		case strings.HasPrefix(t, deletePrefix):
			op, err = p.delete()
		case strings.HasPrefix(t, updatePrefix):
			op, err = p.update()
		default:
			return nil, p.errorf(p.i, "expected %q, %q or %q", addPrefix, updatePrefix, deletePrefix)
		}
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	if len(ops) == 0 {
		return nil, &ParseError{Line: hi, Text: lines[hi-1], Msg: "patch has no file operations"}
	}
	return &Patch{Ops: ops}, nil
}

// trimBlank narrows lines[lo:hi] to exclude blank lines at either end.
func trimBlank(lines []string, lo, hi int) (int, int) {
	for lo < hi && strings.TrimSpace(lines[lo]) == "" {
		lo++
	}
	for hi > lo && strings.TrimSpace(lines[hi-1]) == "" {
		hi--
	}
	return lo, hi
}

// parser reads the operations in lines[i:end].
type parser struct {
	lines  []string
	i, end int
}

func (p *parser) errorf(i int, format string, args ...any) *ParseError {
	return &ParseError{Line: i + 1, Text: p.lines[i], Msg: fmt.Sprintf(format, args...)}
}

// path returns the path after prefix on line i.
func (p *parser) path(i int, prefix string) (string, error) {
	path := strings.TrimSpace(strings.TrimSpace(p.lines[i])[len(prefix):])
	if path == "" {
		return "", p.errorf(i, "empty path")
	}
	return path, nil
}

func (p *parser) add() (FileOp, error) {
	path, err := p.path(p.i, addPrefix)
	if err != nil {
		return FileOp{}, err
	}
	op := FileOp{Kind: Add, Path: path, Line: p.i + 1}
	p.i++
	var content []string
	blanks := 0 // blank lines seen since the last '+' line
	for ; p.i < p.end; p.i++ {
		l := p.lines[p.i]
		if strings.HasPrefix(l, "+") {
			for ; blanks > 0; blanks-- {
				content = append(content, "")
			}
			content = append(content, l[1:])
			continue
		}
		if strings.TrimSpace(l) != "" {
			break
		}
		blanks++
	}
	if len(content) > 0 {
		op.Contents = strings.Join(content, "\n") + "\n"
	}
	return op, nil
}

func (p *parser) delete() (FileOp, error) {
	path, err := p.path(p.i, deletePrefix)
	if err != nil {
		return FileOp{}, err
	}
	op := FileOp{Kind: Delete, Path: path, Line: p.i + 1}
	p.i++
	return op, nil
}

func (p *parser) update() (FileOp, error) {
	path, err := p.path(p.i, updatePrefix)
	if err != nil {
		return FileOp{}, err
	}
	op := FileOp{Kind: Update, Path: path, Line: p.i + 1}
	p.i++
	if j, _ := trimBlank(p.lines, p.i, p.end); j < p.end && strings.HasPrefix(strings.TrimSpace(p.lines[j]), movePrefix) {
		if op.MoveTo, err = p.path(j, movePrefix); err != nil {
			return FileOp{}, err
		}
		p.i = j + 1
	}
	for p.i < p.end {
		l := p.lines[p.i]
		if strings.TrimSpace(l) == "" {
			p.i++
			continue
		}
		if strings.HasPrefix(l, "***") {
			break
		}
		h, err := p.hunk()
		if err != nil {
			return FileOp{}, err
		}
		op.Hunks = append(op.Hunks, h)
	}
	if len(op.Hunks) == 0 && op.MoveTo == "" {
		return FileOp{}, p.errorf(op.Line-1, "update has no hunks")
	}
	return op, nil
}

// hunk parses one hunk starting at a non-blank line that isn't a *** line.
func (p *parser) hunk() (Hunk, error) {
	var h Hunk
	first := p.i
	for ; p.i < p.end && strings.HasPrefix(p.lines[p.i], "@@"); p.i++ {
		text := header(p.lines[p.i])
		if text == "" {
			if len(h.Context) > 0 {
				return Hunk{}, p.errorf(p.i, "bare @@ after an @@ context line")
			}
			continue
		}
		h.Context = append(h.Context, text)
	}
	h.Line = p.i + 1
	trailing := 0 // blank lines at the end of h.Lines
	for ; p.i < p.end; p.i++ {
		l := p.lines[p.i]
		if strings.TrimRightFunc(l, unicode.IsSpace) == eofMarker {
			h.EOF = true
			p.i++
			break
		}
		if l != "" && (l[0] == ' ' || l[0] == '-' || l[0] == '+') {
			h.Lines = append(h.Lines, Line{Op: l[0], Text: l[1:]})
			trailing = 0
			continue
		}
		if strings.TrimSpace(l) != "" {
			break
		}
		h.Lines = append(h.Lines, Line{Op: ' '})
		trailing++
	}
	h.Lines = h.Lines[:len(h.Lines)-trailing]
	if len(h.Lines) > 0 {
		return h, nil
	}
	if p.i < p.end && !h.EOF {
		if l := p.lines[p.i]; !strings.HasPrefix(l, "***") && !strings.HasPrefix(l, "@@") {
			return Hunk{}, p.errorf(p.i, "expected a hunk line starting with ' ', '-' or '+'")
		}
	}
	return Hunk{}, p.errorf(first, "hunk has no lines")
}

// header returns the context text of an @@ line, "" for a bare one.
func header(l string) string {
	text := l[len("@@"):]
	if m := unifiedRange.FindStringSubmatch(text); m != nil {
		text = m[1]
	}
	if strings.TrimSpace(text) == "" {
		return ""
	}
	return strings.TrimRightFunc(strings.TrimPrefix(text, " "), unicode.IsSpace)
}
