// Package contextwindow is what session knows of a model's context window
// without a thread: the window and the compaction trigger of a model as a
// provider serves it, configured or learned from a request the provider
// refused as too long (Windows); the model's history entries as the
// pure package compaction reads them, with their size; the summary request
// a compaction makes (Summarize) and the history that replaces the old one
// (Compacted). What to compact and when is the pure package compaction's.
//
// It must not import session or server.
package contextwindow

import (
	"sync"

	"github.com/apserver/apserver/compaction"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/model"
)

// Windows are the context windows learned from requests a provider
// refused as too long, for models no configuration sizes. The zero value
// is ready; any goroutine may use it.
type Windows struct {
	learned sync.Map // key → tokens
}

// key keys a learned context window: the same model name served by two
// providers (a hosted model and a local quantization of it, two
// gateways) may have two windows, so a refusal by one provider says
// nothing about the other.
type key struct{ provider, model string }

// Limits are the token limits of modelName as provider serves it: its
// context window (0 unknown) and the automatic-compaction trigger (0
// never).
func (w *Windows) Limits(c *config.Config, provider, modelName string) (window, trigger int64) {
	window = c.ContextWindow(modelName)
	if window == 0 {
		if v, ok := w.learned.Load(key{provider, modelName}); ok {
			window = v.(int64)
		}
	}
	return window, c.CompactTrigger(window)
}

// Learn notes that provider refused a request of about tokens as too long
// for modelName, whose window no configuration gives: the window is at
// most that for that provider, and its later requests compact before
// they reach 90% of it.
func (w *Windows) Learn(c *config.Config, provider, modelName string, tokens int64) {
	if c.ContextWindow(modelName) > 0 || tokens <= 0 {
		return
	}
	k := key{provider, modelName}
	for {
		old, loaded := w.learned.LoadOrStore(k, tokens)
		if !loaded || old.(int64) <= tokens || w.learned.CompareAndSwap(k, old, tokens) {
			return
		}
	}
}

// Entry is what compaction reads of a history entry.
func Entry(e model.Entry) compaction.Entry {
	k := compaction.Other
	switch e.Kind {
	case model.EntryUser:
		k = compaction.User
	case model.EntryAssistant:
		k = compaction.Assistant
	case model.EntryToolCall:
		k = compaction.ToolCall
	case model.EntryToolOutput:
		k = compaction.ToolOutput
	}
	return compaction.Entry{Kind: k, Text: e.Text, CallID: e.CallID, Name: e.Name, Arguments: e.Arguments, Output: e.Output}
}

// Entries is what compaction reads of a history.
func Entries(h []model.Entry) []compaction.Entry {
	out := make([]compaction.Entry, len(h))
	for i, e := range h {
		out[i] = Entry(e)
	}
	return out
}

// Bytes is the size compaction counts of a history.
func Bytes(es []model.Entry) int {
	n := 0
	for _, e := range es {
		n += Entry(e).Bytes()
	}
	return n
}
