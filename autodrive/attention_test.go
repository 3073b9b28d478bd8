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
