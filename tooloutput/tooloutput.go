package tooloutput

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// A compaction keeps the step in flight verbatim, so one tool output that
// fills most of a small window (a test log of thousands of lines on an 8k
// local model) leaves nothing a compaction can free, and the run dies with
// contextWindowExceeded. So what one tool output may take of the window is
// budgeted: past the budget the model gets the head and the tail, and in
// place of the middle a marker naming read_output, which pages through the
// whole output. The item the client gets keeps the whole output; the
// whole output is also saved in the data directory, where read_output
// finds it, across restarts. An output is named by a digest of its text,
// not by its call: the same output cut twice reads the same to full
// auto's repetition checks (session/fullauto_turn.go masks the hex id).
const (
	// ToolName is the name of the tool that reads a cut output.
	ToolName = "read_output"
	// Share: one tool output may take 1/Share of what the window leaves
	// after the instructions and tools (up to the trigger).
	Share = 4
	// MinBudget is the smallest budget in bytes, however small the
	// window: below it a cut output says too little to be worth it.
	MinBudget = 1 << 10
	// PageLines is read_output's default page, in lines.
	PageLines = 200
	// Dir is the data directory's folder of saved outputs, one folder a
	// thread.
	Dir = "outputs"
)

// Description is read_output's description for the model.
const Description = "Read lines of a tool output that was cut to fit the context window. The cut output's marker names its id; offset is the first line to read (1-based), limit the number of lines (default 200)."

// Schema is read_output's parameters schema.
var Schema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "id": {"type": "string", "description": "The id the marker in the cut output names."},
    "offset": {"type": "integer", "description": "First line to read, 1-based. Default 1."},
    "limit": {"type": "integer", "description": "Number of lines to read. Default 200."}
  },
  "required": ["id"],
  "additionalProperties": false
}`)

// Budget is the bytes one tool output may take when availTokens (the
// trigger less the prompt and tools) are left of the window.
func Budget(availTokens int64) int {
	return max(int(availTokens)*4/Share, MinBudget)
}

// commandOutput is the line that starts a formatted command's output.
const commandOutput = "\nOutput:\n"

// CommandHead is the head of a command's output formatted for the model
// (its exit code and duration, up to and including the line that starts
// the output), without the note that the formatting cut the middle: the
// budget cuts the whole output again. ok is false when out has no such
// head.
func CommandHead(out string) (head string, ok bool) {
	k := strings.Index(out, commandOutput)
	if k < 0 {
		return "", false
	}
	return strings.Replace(out[:k+len(commandOutput)], "Output truncated: the middle part was elided.\n", "", 1), true
}

// Elide keeps the head (a third) and the tail (two thirds: a log ends
// with its summary) of s within about budget bytes, whole lines where
// they fit, with a marker in place of the middle that says how to read
// it with read_output and id.
func Elide(s string, budget int, id string) string {
	lines := splitLines(s)
	total := len(lines)
	budget = max(budget-200, 256) // the marker's own size
	headBytes, tailBytes := budget/3, budget-budget/3
	h, n := 0, 0
	for h < total && n+len(lines[h]) <= headBytes {
		n += len(lines[h])
		h++
	}
	tl, n := total, 0
	for tl > h && n+len(lines[tl-1]) <= tailBytes {
		n += len(lines[tl-1])
		tl--
	}
	var b strings.Builder
	for _, l := range lines[:h] {
		b.WriteString(l)
	}
	if h == 0 && total > 0 { // a first line longer than the head's share
		b.WriteString(CutBytes(lines[0], headBytes))
		b.WriteString("…\n")
	}
	elided := 0
	for _, l := range lines[h:tl] {
		elided += len(l)
	}
	fmt.Fprintf(&b, "\n[… lines %d to %d of %d (%d bytes) are left out here to fit the model's context window. The whole output is kept: read it with read_output {\"id\": %q, \"offset\": %d, \"limit\": %d} …]\n\n",
		h+1, tl, total, elided, id, h+1, PageLines)
	for _, l := range lines[tl:] {
		b.WriteString(l)
	}
	return b.String()
}

// splitLines is s's lines, each with its newline, without the empty
// string after a final newline.
func splitLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// CutBytes is s cut to at most n bytes at a rune boundary.
func CutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// ID names a saved output: 16 hex digits of its SHA-256.
func ID(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// CheckID refuses what is not the id of an output (and so could not be a
// file name under Dir).
func CheckID(id string) error {
	if len(id) != 16 || strings.Trim(id, "0123456789abcdef") != "" {
		return fmt.Errorf("%q is not the id of an output: the marker of a cut output names it (16 hex digits)", id)
	}
	return nil
}

// Args are read_output's arguments.
type Args struct {
	ID     string `json:"id"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

// ParseArgs decodes read_output's arguments; the id is required.
func ParseArgs(raw []byte) (Args, error) {
	var p Args
	if err := json.Unmarshal(raw, &p); err != nil {
		return Args{}, fmt.Errorf("arguments: %w", err)
	}
	if p.ID == "" {
		return Args{}, errors.New("id is required: the id the marker of the cut output names")
	}
	return p, nil
}

// Page is what read_output answers for p from the saved output data: its
// lines from p.Offset (1-based), at most p.Limit of them (PageLines when
// unset), the page itself held to budget bytes, and what is left.
func Page(p Args, data string, budget int) string {
	lines := splitLines(data)
	total := len(lines)
	first := max(p.Offset, 1)
	if first > total {
		return fmt.Sprintf("Output %s has %d lines; offset %d is past its end.", p.ID, total, first)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = PageLines
	}
	var body strings.Builder
	last := first - 1
	for last < total && last-first+1 < limit {
		l := lines[last]
		if body.Len()+len(l) > budget {
			if last == first-1 { // one line longer than the page: its start
				body.WriteString(CutBytes(l, budget))
				body.WriteString("… (the line goes on)\n")
				last++
			}
			break
		}
		body.WriteString(l)
		last++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Lines %d to %d of %d of output %s:\n", first, last, total, p.ID)
	b.WriteString(body.String())
	if last < total {
		fmt.Fprintf(&b, "\n[… %d more lines: read_output {\"id\": %q, \"offset\": %d}]", total-last, p.ID, last+1)
	}
	return b.String()
}
