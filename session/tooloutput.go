package session

import (
	"github.com/apserver/apserver/compaction"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tooloutput"
	"github.com/apserver/apserver/tooloutput/saved"
)

// Tool output budget (docs/protocol.md, "Compaction"): package tooloutput
// decides what the model sees of a tool output past its share of the
// window; package tooloutput/saved saves the whole outputs in the data
// directory and reads them back for read_output. This file gives them the
// thread's budget.

// outputBudget is the bytes one tool output may take of the turn's model
// input; 0 when the window is unknown (tools cap their own output then).
func (t *thread) outputBudget(tr *turn) int {
	_, trigger := t.turnLimits(tr)
	if trigger <= 0 {
		return 0
	}
	return tooloutput.Budget(trigger - compaction.ApproxTokens(len(tr.prompt)+t.toolsBytes()))
}

func (t *thread) savedOutputs() saved.Outputs { return saved.Outputs{DataDir: t.m.opts.DataDir} }

// budgetOutputs cuts, in hist (the history a completed item adds), every
// tool output past the turn's output budget to its head and tail, saving
// the whole output for read_output first (saved.Outputs.Cut). For a
// command the whole output is the item's aggregatedOutput.
func (t *thread) budgetOutputs(tr *turn, item protocol.ThreadItem, hist []model.Entry) []model.Entry {
	var aggregated *string
	if c, ok := item.(protocol.CommandExecutionItem); ok {
		aggregated = c.AggregatedOutput
	}
	return t.savedOutputs().Cut(t.id, hist, aggregated, func() int { return t.outputBudget(tr) }, func(callID string, err error) {
		t.m.log.Warn("saving a tool output for read_output", "thread", t.id, "call", callID, "err", err)
	})
}

func (t *thread) saveOutput(id, s string) error { return t.savedOutputs().Save(t.id, id, s) }

// readOutput implements read_output: lines of a saved output, the page
// itself held to the output budget.
func (t *thread) readOutput(tr *turn, raw []byte) (string, error) {
	return t.savedOutputs().Read(t.id, raw, func() int {
		if budget := t.outputBudget(tr); budget != 0 {
			return budget
		}
		return maxShownOutput
	})
}
