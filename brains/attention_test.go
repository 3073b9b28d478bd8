package brains

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// TestProposedDecisionsInAttention: a proposed decision that waits on a
// human is the project's attention item, naming it; confirming it takes
// the item out and keeps who confirmed; a restart puts a waiting one
// back. ConfirmRunDecisions confirms only the run's decisions of the
// task and sources given, with by as who confirmed them.
func TestProposedDecisionsInAttention(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	proj := filepath.Join(dir, "p")
	st := openStore(t, filepath.Join(dir, "a.db"))
	defer st.Close()
	var mu sync.Mutex
	items := map[string]*protocol.AttentionItem{}
	attn := func(cwd string, it *protocol.AttentionItem) {
		mu.Lock()
		defer mu.Unlock()
		items[cwd] = it
	}
	item := func() *protocol.AttentionItem {
		mu.Lock()
		defer mu.Unlock()
		return items[proj]
	}
	s := New(Options{Store: func() (*store.Store, error) { return st, nil }, Debounce: -1})
	defer s.Close()
	s.SetAttention(attn)
	proposed := protocol.DecisionProposed
	d, err := s.AddDecision(ctx, protocol.ProjectDecisionAddParams{Cwd: proj, Title: "Use Redis", Text: "Cache in Redis.", Source: "model", Status: &proposed})
	if err != nil {
		t.Fatal(err)
	}
	if it := item(); it == nil || it.Kind != protocol.AttentionApproval || it.Cwd != proj || !strings.Contains(it.Reason, d.Decision.ID) {
		t.Fatalf("attention item = %+v", it)
	}
	up, err := s.UpdateDecision(ctx, protocol.ProjectDecisionUpdateParams{ID: d.Decision.ID, Status: ptr(protocol.DecisionActive)})
	if err != nil || up.Decision.ConfirmedBy != "user" {
		t.Fatalf("confirmed by a human: %+v, %v", up.Decision, err)
	}
	if it := item(); it != nil {
		t.Fatalf("after the confirmation, attention item = %+v", it)
	}

	// A run's: only the task's model decisions, by the trust named.
	if err := s.RecordRunDecisions(ctx, proj, "r1", []protocol.ProjectDecisionAddParams{{Title: "Planned", Text: "p", Source: "planner", Status: &proposed}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.addDecision(ctx, protocol.ProjectDecisionAddParams{Cwd: proj, Title: "From t1", Text: "x", Source: "model", Status: &proposed}, "r1", "t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.addDecision(ctx, protocol.ProjectDecisionAddParams{Cwd: proj, Title: "From t2", Text: "y", Source: "model", Status: &proposed}, "r1", "t2"); err != nil {
		t.Fatal(err)
	}
	if err := s.ConfirmRunDecisions(ctx, proj, "r1", "t1", "run trust implementation=auto", "model"); err != nil {
		t.Fatal(err)
	}
	ds, err := s.Decisions(ctx, proj)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range ds {
		got[d.Title] = string(d.Status) + " " + d.ConfirmedBy
	}
	if got["From t1"] != "active run trust implementation=auto" || got["From t2"] != "proposed " || got["Planned"] != "proposed " {
		t.Fatalf("after ConfirmRunDecisions: %v", got)
	}
	// r1 is unknown to the store: its proposed decisions wait on a human,
	// and a restart puts them back in the attention summary.
	mu.Lock()
	items = map[string]*protocol.AttentionItem{}
	mu.Unlock()
	s2 := New(Options{Store: func() (*store.Store, error) { return st, nil }, Debounce: -1})
	defer s2.Close()
	s2.SetAttention(attn)
	s2.Restore()
	if it := item(); it == nil || !strings.Contains(it.Reason, "2 proposed decision(s)") || !strings.Contains(it.Reason, `"From t2"`) || it.RunID != "r1" {
		t.Fatalf("after a restart, attention item = %+v", it)
	}
}
