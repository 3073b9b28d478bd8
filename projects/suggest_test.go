package projects

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apserver/apserver/manager"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// fakeAttention records the project attention items.
type fakeAttention struct {
	mu    sync.Mutex
	items map[string]protocol.AttentionItem
}

func (a *fakeAttention) set(cwd string, it *protocol.AttentionItem) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if it == nil {
		delete(a.items, cwd)
		return
	}
	a.items[cwd] = *it
}

// TestSuggestApprove: in suggest mode ticks propose (stored, in
// attention) and start nothing; Approve refuses what is not the pending
// proposal and starts the pending one once; the next tick proposes the
// next task.
func TestSuggestApprove(t *testing.T) {
	ctx := context.Background()
	f := newFake(nil, []string{"a", "b"})
	_, db := newService(t, f, time.Now)
	att := &fakeAttention{items: map[string]protocol.AttentionItem{}}
	s := New(Options{Store: func() (*store.Store, error) { return db, nil }, Runs: f, Blueprints: f, Attention: att.set})
	ws := t.TempDir()
	if _, err := s.UpdateSettings(ctx, ws, func(st *manager.Settings) {
		st.Mode, st.BlueprintID, st.MaxParallelRuns = manager.ModeSuggest, "bp", 2
	}); err != nil {
		t.Fatal(err)
	}
	var id string
	for range 3 {
		d, err := s.Tick(ctx, ws)
		if err != nil || d.Result != manager.ResultWaitingForApproval || d.ProposalID == "" || (id != "" && d.ProposalID != id) {
			t.Fatalf("tick in suggest: %+v %v", d, err)
		}
		id = d.ProposalID
	}
	if f.starts != 0 {
		t.Fatalf("%d runs started before an approval", f.starts)
	}
	if it, ok := att.items[ws]; !ok || it.ProposalID != id || it.TaskID != "a" || it.Kind != protocol.AttentionApproval {
		t.Errorf("attention: %+v", att.items)
	}
	if st, _ := s.Settings(ctx, ws); st.Proposal == nil || st.Proposal.ID != id {
		t.Errorf("stored proposal: %+v", st.Proposal)
	}
	if _, err := s.Approve(ctx, ws, "prop_other"); err == nil || !strings.Contains(err.Error(), "proposalId") {
		t.Errorf("Approve(another id) = %v", err)
	}
	d, err := s.Approve(ctx, ws, id)
	if err != nil || d.Result != manager.ResultStartedRun || d.RunID == "" || f.starts != 1 {
		t.Fatalf("Approve = %+v %v (%d starts)", d, err, f.starts)
	}
	if _, ok := att.items[ws]; ok {
		t.Errorf("attention after the approval: %+v", att.items)
	}
	if _, err := s.Approve(ctx, ws, id); err == nil {
		t.Error("an approval was used twice")
	}
	d, err = s.Tick(ctx, ws)
	if err != nil || d.Result != manager.ResultWaitingForApproval || d.ProposalID == id || len(d.TaskIDs) != 1 || d.TaskIDs[0] != "b" || f.starts != 1 {
		t.Errorf("tick after the approval: %+v %v (%d starts)", d, err, f.starts)
	}
	if _, err := s.UpdateSettings(ctx, ws, func(st *manager.Settings) { st.Mode = manager.ModeSemiAuto }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Approve(ctx, ws, d.ProposalID); err == nil || !strings.Contains(err.Error(), "not suggest") {
		t.Errorf("Approve in semi_auto = %v", err)
	}
	if n, diffs, err := s.Replay(ctx, ws); err != nil || len(diffs) != 0 || n < 5 {
		t.Errorf("replay: %d ticks, %v, %v", n, diffs, err)
	}
}
