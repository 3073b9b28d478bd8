package contextwindow

import (
	"testing"

	"github.com/apserver/apserver/compaction"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/model"
)

// TestWindowsLearnPerProvider: a refusal teaches the window of that
// provider's model only, a later refusal can only lower it, and a
// configured window is never overridden.
func TestWindowsLearnPerProvider(t *testing.T) {
	var w Windows
	c := &config.Config{}
	const m = "local-model-without-a-known-window"
	if win, trig := w.Limits(c, "p1", m); win != 0 || trig != 0 {
		t.Fatalf("Limits before any refusal = %d, %d; want 0, 0", win, trig)
	}
	w.Learn(c, "p1", m, 10000)
	if win, trig := w.Limits(c, "p1", m); win != 10000 || trig != c.CompactTrigger(10000) {
		t.Errorf("Limits after a refusal at 10000 = %d, %d; want 10000, %d", win, trig, c.CompactTrigger(10000))
	}
	if win, _ := w.Limits(c, "p2", m); win != 0 {
		t.Errorf("another provider's window = %d, want 0 (unknown)", win)
	}
	w.Learn(c, "p1", m, 20000)
	w.Learn(c, "p1", m, 0)
	if win, _ := w.Limits(c, "p1", m); win != 10000 {
		t.Errorf("window after a larger and an empty refusal = %d, want 10000", win)
	}
	w.Learn(c, "p1", m, 8000)
	if win, _ := w.Limits(c, "p1", m); win != 8000 {
		t.Errorf("window after a smaller refusal = %d, want 8000", win)
	}
	sized := &config.Config{ModelContextWindow: 50000}
	w.Learn(sized, "p1", "sized", 100)
	if win, _ := w.Limits(sized, "p1", "sized"); win != 50000 {
		t.Errorf("configured window after a refusal = %d, want 50000", win)
	}
}

func TestEntry(t *testing.T) {
	for _, tc := range []struct {
		in   model.EntryKind
		want compaction.Kind
	}{
		{model.EntryUser, compaction.User}, {model.EntryAssistant, compaction.Assistant},
		{model.EntryToolCall, compaction.ToolCall}, {model.EntryToolOutput, compaction.ToolOutput},
		{model.EntryKind(0), compaction.Other},
	} {
		e := model.Entry{Kind: tc.in, Text: "t", CallID: "c", Name: "n", Arguments: "a", Output: "o"}
		want := compaction.Entry{Kind: tc.want, Text: "t", CallID: "c", Name: "n", Arguments: "a", Output: "o"}
		if got := Entry(e); got != want {
			t.Errorf("Entry(%v) = %+v, want %+v", tc.in, got, want)
		}
	}
	h := []model.Entry{{Kind: model.EntryUser, Text: "hello"}, {Kind: model.EntryToolOutput, CallID: "c", Output: "out"}}
	es := Entries(h)
	if len(es) != 2 || es[0].Kind != compaction.User || es[1].Output != "out" {
		t.Errorf("Entries = %+v", es)
	}
	if got, want := Bytes(h), es[0].Bytes()+es[1].Bytes(); got != want || got == 0 {
		t.Errorf("Bytes = %d, want %d (non-zero)", got, want)
	}
}
