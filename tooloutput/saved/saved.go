// Package saved keeps the whole tool outputs that were cut to fit the
// model's context window (package tooloutput decides the cut), in the data
// directory, one folder a thread, for read_output to page through. It is
// the file side of the budget: session calls it on the thread's goroutine
// (session/tooloutput.go). It must not import session.
package saved

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/tooloutput"
)

// Outputs are the saved outputs under a data directory ("": none can be
// saved).
type Outputs struct{ DataDir string }

// Path is where the thread's output named id is saved.
func (o Outputs) Path(threadID, id string) (string, error) {
	if o.DataDir == "" {
		return "", errors.New("no data directory to save outputs in")
	}
	if err := tooloutput.CheckID(id); err != nil {
		return "", err
	}
	return filepath.Join(o.DataDir, tooloutput.Dir, threadID, id+".txt"), nil
}

// Save saves the thread's output s under id, readable by the user only.
func (o Outputs) Save(threadID, id, s string) error {
	p, err := o.Path(threadID, id)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(s), 0o600)
}

// Read implements read_output for the thread: its arguments read, then
// lines of the saved output, the page itself held to budget() bytes.
func (o Outputs) Read(threadID string, raw []byte, budget func() int) (string, error) {
	p, err := tooloutput.ParseArgs(raw)
	if err != nil {
		return "", err
	}
	path, err := o.Path(threadID, p.ID)
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
	return tooloutput.Page(p, string(data), budget()), nil
}

// Cut cuts, in hist (the history a completed item adds), every tool
// output past the output budget to its head and tail, saving the whole
// output for read_output first. budget is asked once, when an output is
// long enough to need it; 0 leaves hist as it is. aggregated, when not
// nil, is a command's whole output (its item's aggregatedOutput, whatever
// the formatting for the model had already cut). An output whose save
// fails stays as it is, and failed is told. The caller's slice is never
// changed.
func (o Outputs) Cut(threadID string, hist []model.Entry, aggregated *string, budget func() int, failed func(callID string, err error)) []model.Entry {
	var limit int
	copied := false
	for i, e := range hist {
		if e.Kind != model.EntryToolOutput || e.CallID == "" || len(e.Output) <= tooloutput.MinBudget {
			continue
		}
		if limit == 0 {
			if limit = budget(); limit == 0 {
				return hist
			}
		}
		if len(e.Output) <= limit {
			continue
		}
		head, whole := "", e.Output
		if aggregated != nil {
			if h, ok := tooloutput.CommandHead(e.Output); ok {
				head, whole = h, *aggregated
			}
		}
		id := tooloutput.ID(whole)
		if err := o.Save(threadID, id, whole); err != nil {
			failed(e.CallID, err)
			continue
		}
		if !copied { // the caller's slice stays as it was
			hist, copied = append([]model.Entry(nil), hist...), true
		}
		hist[i].Output = head + tooloutput.Elide(whole, limit-len(head), id)
	}
	return hist
}
