package session

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
)

// Tool output budget (docs/protocol.md, "Compaction").
//
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
// auto's repetition checks (fullauto_turn.go masks the hex id).
const (
	toolReadOutput = "read_output"
	// outputShare: one tool output may take 1/outputShare of what the
	// window leaves after the instructions and tools (up to the trigger).
	outputShare = 4
	// minOutputBudget is the smallest budget in bytes, however small the
	// window: below it a cut output says too little to be worth it.
	minOutputBudget = 1 << 10
	// readOutputLines is read_output's default page, in lines.
	readOutputLines = 200
	// outputsDir is the data directory's folder of saved outputs, one
	// folder a thread.
	outputsDir = "outputs"
)

const readOutputDescription = "Read lines of a tool output that was cut to fit the context window. The cut output's marker names its id; offset is the first line to read (1-based), limit the number of lines (default 200)."

var readOutputSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "id": {"type": "string", "description": "The id the marker in the cut output names."},
    "offset": {"type": "integer", "description": "First line to read, 1-based. Default 1."},
    "limit": {"type": "integer", "description": "Number of lines to read. Default 200."}
  },
  "required": ["id"],
  "additionalProperties": false
}`)

// outputBudget is the bytes one tool output may take of the turn's model
// input; 0 when the window is unknown (tools cap their own output then).
func (t *thread) outputBudget(tr *turn) int {
	_, trigger := t.turnLimits(tr)
	if trigger <= 0 {
		return 0
	}
	avail := trigger - approxTokens(len(tr.prompt)+t.toolsBytes())
	return max(int(avail)*4/outputShare, minOutputBudget)
}

// budgetOutputs cuts, in hist (the history a completed item adds), every
// tool output past the turn's output budget to its head and tail, saving
// the whole output for read_output first. For a command the whole output
// is the item's aggregatedOutput, whatever the formatting for the model
// had already cut. A save that fails leaves the output as it is.
func (t *thread) budgetOutputs(tr *turn, item protocol.ThreadItem, hist []model.Entry) []model.Entry {
	var budget int
	copied := false
	for i, e := range hist {
		if e.Kind != model.EntryToolOutput || e.CallID == "" || len(e.Output) <= minOutputBudget {
			continue
		}
		if budget == 0 {
			if budget = t.outputBudget(tr); budget == 0 {
				return hist
			}
		}
		if len(e.Output) <= budget {
			continue
		}
		head, whole := "", e.Output
		if c, ok := item.(protocol.CommandExecutionItem); ok && c.AggregatedOutput != nil {
			if k := strings.Index(e.Output, "\nOutput:\n"); k >= 0 {
				head = strings.Replace(e.Output[:k+len("\nOutput:\n")], "Output truncated: the middle part was elided.\n", "", 1)
				whole = *c.AggregatedOutput
			}
		}
		id := outputID(whole)
		if err := t.saveOutput(id, whole); err != nil {
			t.m.log.Warn("saving a tool output for read_output", "thread", t.id, "call", e.CallID, "err", err)
			continue
		}
		if !copied { // the caller's slice stays as it was
			hist, copied = append([]model.Entry(nil), hist...), true
		}
		hist[i].Output = head + elideOutput(whole, budget-len(head), id)
	}
	return hist
}

// elideOutput keeps the head (a third) and the tail (two thirds: a log
// ends with its summary) of s within about budget bytes, whole lines
// where they fit, with a marker in place of the middle that says how to
// read it.
func elideOutput(s string, budget int, id string) string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
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
		b.WriteString(cutBytes(lines[0], headBytes))
		b.WriteString("…\n")
	}
	elided := 0
	for _, l := range lines[h:tl] {
		elided += len(l)
	}
	fmt.Fprintf(&b, "\n[… lines %d to %d of %d (%d bytes) are left out here to fit the model's context window. The whole output is kept: read it with read_output {\"id\": %q, \"offset\": %d, \"limit\": %d} …]\n\n",
		h+1, tl, total, elided, id, h+1, readOutputLines)
	for _, l := range lines[tl:] {
		b.WriteString(l)
	}
	return b.String()
}

// cutBytes is s cut to at most n bytes at a rune boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// outputID names a saved output: 16 hex digits of its SHA-256.
func outputID(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// outputPath is where the output named id is saved.
func (t *thread) outputPath(id string) (string, error) {
	dir := t.m.opts.DataDir
	if dir == "" {
		return "", errors.New("no data directory to save outputs in")
	}
	if len(id) != 16 || strings.Trim(id, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%q is not the id of an output: the marker of a cut output names it (16 hex digits)", id)
	}
	return filepath.Join(dir, outputsDir, t.id, id+".txt"), nil
}

func (t *thread) saveOutput(id, s string) error {
	p, err := t.outputPath(id)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(s), 0o600)
}

// readOutput implements read_output: lines of a saved output, the page
// itself held to the output budget.
func (t *thread) readOutput(tr *turn, raw []byte) (string, error) {
	var p struct {
		ID     string `json:"id"`
		Offset int    `json:"offset"`
		Limit  int    `json:"limit"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", fmt.Errorf("arguments: %w", err)
	}
	if p.ID == "" {
		return "", errors.New("id is required: the id the marker of the cut output names")
	}
	path, err := t.outputPath(p.ID)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("no saved output %q in this thread: only outputs cut to fit the context window are saved", p.ID)
	}
	if err != nil {
		return "", err
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	total := len(lines)
	first := max(p.Offset, 1)
	if first > total {
		return fmt.Sprintf("Output %s has %d lines; offset %d is past its end.", p.ID, total, first), nil
	}
	limit := p.Limit
	if limit <= 0 {
		limit = readOutputLines
	}
	budget := t.outputBudget(tr)
	if budget == 0 {
		budget = maxShownOutput
	}
	var body strings.Builder
	last := first - 1
	for last < total && last-first+1 < limit {
		l := lines[last]
		if body.Len()+len(l) > budget {
			if last == first-1 { // one line longer than the page: its start
				body.WriteString(cutBytes(l, budget))
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
	return b.String(), nil
}
