package autodrive

import (
	"fmt"
	"testing"

	"github.com/apserver/apserver/protocol"
)

// TestAttentionSummary: a summary goes out only when it changes; an item
// set again keeps its first time; a run's wait hides behind its task
// thread's own item; oldest first; Snapshot is what was last sent.
func TestAttentionSummary(t *testing.T) {
	var sent []string
	a := NewAttention(func(method string, params any) {
		n := params.(protocol.AttentionNotification)
		s := fmt.Sprintf("%s %d", method, n.Count)
		for _, it := range n.Items {
			s += fmt.Sprintf(" %s/%s@%d", it.ThreadID, it.Kind, it.SinceMs)
		}
		sent = append(sent, s)
	})
	run := AttnKey{Thread: "run:r1", Kind: "run"}
	req := AttnKey{Thread: "task", Kind: protocol.AttentionApproval, Req: 7}
	a.Clear(req) // nothing to clear: nothing sent
	a.Set(run, protocol.AttentionItem{ThreadID: "task", Kind: protocol.AttentionPaused, SinceMs: 100})
	a.Set(req, protocol.AttentionItem{ThreadID: "task", Kind: protocol.AttentionApproval, SinceMs: 150})
	a.Set(req, protocol.AttentionItem{ThreadID: "task", Kind: protocol.AttentionApproval, SinceMs: 900}) // no change
	a.Set(AttnKey{Thread: "other", Kind: protocol.AttentionPaused}, protocol.AttentionItem{ThreadID: "other", Kind: protocol.AttentionPaused, SinceMs: 50})
	if n := a.Snapshot(); n.Count != 2 || n.OldestSinceMs == nil || *n.OldestSinceMs != 50 {
		t.Errorf("Snapshot() = %+v, want 2 items, the oldest at 50", n)
	}
	a.Clear(req)
	a.Clear(run)
	a.Clear(AttnKey{Thread: "other", Kind: protocol.AttentionPaused})
	want := []string{
		"attention 1 task/paused@100",
		"attention 1 task/approval@150",
		"attention 2 other/paused@50 task/approval@150",
		"attention 2 other/paused@50 task/paused@100",
		"attention 1 other/paused@50",
		"attention 0",
	}
	if fmt.Sprint(sent) != fmt.Sprint(want) {
		t.Errorf("sent =\n%q\nwant\n%q", sent, want)
	}
}

// TestAttentionRunsAndRelays: a run's item names the run and is one per
// run; a relayed request's item is keyed by its id and thread.
func TestAttentionRunsAndRelays(t *testing.T) {
	a := NewAttention(func(string, any) {})
	a.SetRun("r1", protocol.AttentionItem{ThreadID: "plan", Kind: protocol.AttentionPaused, SinceMs: 10})
	a.SetRun("r1", protocol.AttentionItem{ThreadID: "plan", Kind: protocol.AttentionQuestion, SinceMs: 20})
	a.SetRelay(4, protocol.AttentionItem{ThreadID: "w1", Kind: protocol.AttentionApproval, SinceMs: 30})
	n := a.Snapshot()
	if n.Count != 2 || n.Items[0].RunID != "r1" || n.Items[0].Kind != protocol.AttentionQuestion || n.Items[0].SinceMs != 10 || n.Items[1].ThreadID != "w1" {
		t.Fatalf("Snapshot() = %+v, want the run's latest item (first set at 10) and the relayed request", n)
	}
	a.ClearRelay(4, "other") // another thread's request 4: not this one
	a.ClearRun("r2")
	if n := a.Snapshot(); n.Count != 2 {
		t.Errorf("clearing other keys changed the summary: %+v", n)
	}
	a.ClearRelay(4, "w1")
	a.ClearRun("r1")
	if n := a.Snapshot(); n.Count != 0 {
		t.Errorf("Snapshot() after clearing = %+v, want empty", n)
	}
}
