package blueprint

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// DefaultChunkTokens is the default chunk budget, in tokens.
const DefaultChunkTokens = 12000

// bytesPerToken is the estimate Split uses: about four bytes of English
// text make one token.
const bytesPerToken = 4

// Heading is a Markdown ATX heading ("## Title") of the document, outside
// fenced code blocks. Start is the offset of its line; Text is a substring
// of the document (not a copy).
type Heading struct {
	Start, End int // the line, without its newline
	Level      int // 1 for "#" … 6
	Text       string
}

// Doc is a document and its headings. Text is shared, never copied.
type Doc struct {
	Text     string
	Headings []Heading
}

// Errors of Parse.
var (
	ErrEmpty  = errors.New("the document is empty")
	ErrBinary = errors.New("the document is not text (binary or not UTF-8)")
)

// Parse checks that text is a text document (UTF-8, no NUL bytes, not
// blank) and finds its headings.
func Parse(text string) (*Doc, error) {
	if strings.TrimSpace(text) == "" {
		return nil, ErrEmpty
	}
	if strings.IndexByte(text, 0) >= 0 || !utf8.ValidString(text) {
		return nil, ErrBinary
	}
	d := &Doc{Text: text}
	fence := ""
	for pos := 0; pos < len(text); {
		end := strings.IndexByte(text[pos:], '\n')
		next := len(text)
		if end < 0 {
			end = len(text)
		} else {
			end += pos
			next = end + 1
		}
		line := strings.TrimRight(text[pos:end], "\r")
		trimmed := strings.TrimLeft(line, " ")
		if f := fenceOf(trimmed); f != "" && len(line)-len(trimmed) < 4 {
			switch {
			case fence == "":
				fence = f
			case strings.HasPrefix(trimmed, fence) && strings.TrimSpace(strings.TrimLeft(trimmed, fence[:1])) == "":
				fence = ""
			}
		} else if fence == "" && len(line)-len(trimmed) < 4 {
			if lvl, t := atx(trimmed); lvl > 0 {
				d.Headings = append(d.Headings, Heading{Start: pos, End: pos + len(line), Level: lvl, Text: t})
			}
		}
		pos = next
	}
	return d, nil
}

// fenceOf returns the fence a line opens or closes ("```" or "~~~" or
// longer), or "".
func fenceOf(line string) string {
	for _, c := range []byte{'`', '~'} {
		n := 0
		for n < len(line) && line[n] == c {
			n++
		}
		if n >= 3 {
			return line[:n]
		}
	}
	return ""
}

// atx parses an ATX heading: its level and its text, trimmed of the
// closing #s.
func atx(line string) (int, string) {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(line) && line[n] != ' ' && line[n] != '\t') {
		return 0, ""
	}
	t := strings.TrimSpace(line[n:])
	if c := strings.TrimRight(t, "#"); len(c) < len(t) && (c == "" || strings.HasSuffix(c, " ")) {
		t = strings.TrimSpace(c)
	}
	if t == "" {
		return 0, ""
	}
	return n, t
}

// Chunk is a range of the document sent to the planner in one request.
// Context holds the indexes (into Doc.Headings) of the headings the chunk
// starts inside of, outermost first: the parents its first nodes belong to.
type Chunk struct {
	Index      int
	Start, End int
	Context    []int
}

// Tokens estimates the chunk's size in tokens.
func (c Chunk) Tokens() int { return (c.End - c.Start + bytesPerToken - 1) / bytesPerToken }

// Split cuts the document into chunks of at most budget tokens (the
// default when budget <= 0), on heading boundaries: a chunk ends where a
// heading starts, unless a single section is larger than the budget, which
// is then cut at blank lines, else at line ends, else inside a line (never
// inside a UTF-8 sequence). The chunks cover the document exactly, in
// order.
func Split(d *Doc, budget int) []Chunk {
	if budget <= 0 {
		budget = DefaultChunkTokens
	}
	maxBytes := budget * bytesPerToken
	n := len(d.Text)
	// Section boundaries: 0, each heading's start, n.
	bounds := make([]int, 0, len(d.Headings)+2)
	bounds = append(bounds, 0)
	for _, h := range d.Headings {
		if h.Start > 0 {
			bounds = append(bounds, h.Start)
		}
	}
	bounds = append(bounds, n)

	var chunks []Chunk
	emit := func(s, e int) {
		if e > s {
			chunks = append(chunks, Chunk{Index: len(chunks), Start: s, End: e})
		}
	}
	start := 0
	for i := 1; i < len(bounds); i++ {
		b := bounds[i]
		if b-start <= maxBytes {
			continue
		}
		// bounds[i-1]..b does not fit after start.
		prev := bounds[i-1]
		if prev > start {
			emit(start, prev)
			start = prev
		}
		for b-start > maxBytes {
			cut := cutPoint(d.Text, start, start+maxBytes)
			emit(start, cut)
			start = cut
		}
	}
	emit(start, n)
	// Context: the open headings at each chunk's start.
	var stack []int
	hi := 0
	for ci := range chunks {
		for hi < len(d.Headings) && d.Headings[hi].Start < chunks[ci].Start {
			h := d.Headings[hi]
			for len(stack) > 0 && d.Headings[stack[len(stack)-1]].Level >= h.Level {
				stack = stack[:len(stack)-1]
			}
			stack = append(stack, hi)
			hi++
		}
		if len(stack) > 0 {
			chunks[ci].Context = append([]int(nil), stack...)
		}
	}
	return chunks
}

// cutPoint finds where to end a chunk that starts at start and must end by
// limit (start < limit < len(text)): after the last blank line, else the
// last line end, else the last rune boundary before limit.
func cutPoint(text string, start, limit int) int {
	seg := text[start:limit]
	if i := strings.LastIndex(seg, "\n\n"); i > 0 {
		return start + i + 2
	}
	if i := strings.LastIndexByte(seg, '\n'); i > 0 {
		return start + i + 1
	}
	c := limit
	for c > start+1 && !utf8.RuneStart(text[c]) {
		c--
	}
	return c
}

// HeadingsIn returns the indexes of the headings that start in [start, end).
func (d *Doc) HeadingsIn(start, end int) (lo, hi int) {
	lo = searchHeading(d.Headings, start)
	hi = searchHeading(d.Headings, end)
	return lo, hi
}

// searchHeading is the index of the first heading starting at or after off.
func searchHeading(hs []Heading, off int) int {
	lo, hi := 0, len(hs)
	for lo < hi {
		m := (lo + hi) / 2
		if hs[m].Start < off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
