package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tooloutput"
)

// Tool output budget (docs/protocol.md, "Compaction"): package tooloutput
// decides what the model sees of a tool output past its share of the
// window; this file saves the whole outputs in the data directory and
// reads them back for read_output.

// outputBudget is the bytes one tool output may take of the turn's model
// input; 0 when the window is unknown (tools cap their own output then).
func (t *thread) outputBudget(tr *turn) int {
	_, trigger := t.turnLimits(tr)
	if trigger <= 0 {
		return 0
	}
	return tooloutput.Budget(trigger - approxTokens(len(tr.prompt)+t.toolsBytes()))
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
		if e.Kind != model.EntryToolOutput || e.CallID == "" || len(e.Output) <= tooloutput.MinBudget {
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
			if h, ok := tooloutput.CommandHead(e.Output); ok {
				head, whole = h, *c.AggregatedOutput
			}
		}
		id := tooloutput.ID(whole)
		if err := t.saveOutput(id, whole); err != nil {
			t.m.log.Warn("saving a tool output for read_output", "thread", t.id, "call", e.CallID, "err", err)
			continue
		}
		if !copied { // the caller's slice stays as it was
			hist, copied = append([]model.Entry(nil), hist...), true
		}
		hist[i].Output = head + tooloutput.Elide(whole, budget-len(head), id)
	}
	return hist
}

// outputPath is where the output named id is saved.
func (t *thread) outputPath(id string) (string, error) {
	dir := t.m.opts.DataDir
	if dir == "" {
		return "", errors.New("no data directory to save outputs in")
	}
	if err := tooloutput.CheckID(id); err != nil {
		return "", err
	}
	return filepath.Join(dir, tooloutput.Dir, t.id, id+".txt"), nil
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
	p, err := tooloutput.ParseArgs(raw)
	if err != nil {
		return "", err
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
	budget := t.outputBudget(tr)
	if budget == 0 {
		budget = maxShownOutput
	}
	return tooloutput.Page(p, string(data), budget), nil
}
