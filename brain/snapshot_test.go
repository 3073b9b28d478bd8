package brain

import (
	"math/rand"
	"testing"

	"github.com/apserver/apserver/protocol"
)

func snapshotState() State {
	return State{
		Project: "shop",
		Goals:   []string{"Ship the order API", "Keep p95 latency under 100 ms"},
		Blueprint: &BlueprintState{ID: "bp-1", Title: "Shop", Version: 2, Done: 3, Total: 8,
			Phase: &protocol.BlueprintNode{ID: "n-p1", Title: "Phase 1: orders", Status: protocol.NodeInProgress}},
		Tasks: []TaskState{
			{ID: "t-3", NodeID: "n-orders", Title: "Orders table", Status: protocol.NodeInProgress, Order: 3},
			{ID: "t-1", NodeID: "n-users", Title: "Users", Status: protocol.NodeDone, Order: 1},
			{ID: "t-4", NodeID: "n-orders", Title: "Order list", Status: protocol.NodePlanned, Order: 4},
			{ID: "t-5", NodeID: "n-pay", Title: "Payments", Status: protocol.NodeBlocked, Order: 5},
		},
		Runs: []RunState{
			{ID: "run-2", Request: "Add orders", Status: protocol.RunStatus("running"), Stage: protocol.RunStage("implementation")},
			{ID: "run-3", Request: "Add payments", Status: protocol.RunStatus("waiting"), WaitingFor: "approval", Reason: "conflicts with d-1"},
			{ID: "run-1", Request: "Users", Status: protocol.RunStatus("completed")},
		},
		Decisions: projectDecisions(),
		Risks:     []string{"payment provider undecided"},
	}
}

func TestSnapshotGolden(t *testing.T) {
	golden(t, "snapshot.md", Snapshot(snapshotState()))
}

func TestSnapshotIgnoresInputOrder(t *testing.T) {
	want := Snapshot(snapshotState())
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 20; i++ {
		s := snapshotState()
		r.Shuffle(len(s.Tasks), func(a, b int) { s.Tasks[a], s.Tasks[b] = s.Tasks[b], s.Tasks[a] })
		r.Shuffle(len(s.Runs), func(a, b int) { s.Runs[a], s.Runs[b] = s.Runs[b], s.Runs[a] })
		r.Shuffle(len(s.Decisions), func(a, b int) { s.Decisions[a], s.Decisions[b] = s.Decisions[b], s.Decisions[a] })
		if got := Snapshot(s); got != want {
			t.Fatalf("shuffled state gives other bytes:\n%s\nwant\n%s", got, want)
		}
	}
}

func TestMemoryGolden(t *testing.T) {
	golden(t, "memory.md", Memory("shop", projectDecisions()))
}

func TestApplyTransitions(t *testing.T) {
	d := protocol.ProjectDecision{Title: "Use PostgreSQL", Status: protocol.DecisionProposed}
	title := "Use PostgreSQL 16"
	log := []Event{
		{Type: EventRecorded, ID: "d-1", AtMs: 1, Decision: &d},
		{Type: EventUpdated, ID: "d-1", AtMs: 2, Patch: &Patch{Title: &title}},
		{Type: EventConfirmed, ID: "d-1", AtMs: 3},
		{Type: EventRecorded, ID: "d-2", AtMs: 4, Decision: &protocol.ProjectDecision{Title: "Use MySQL"}},
		{Type: EventSuperseded, ID: "d-1", AtMs: 4, By: "d-2"},
	}
	ds, err := Replay(log)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || ds[0].Status != protocol.DecisionSuperseded || ds[0].SupersededBy != "d-2" || ds[0].Title != title || ds[1].Status != protocol.DecisionActive {
		t.Fatalf("Replay = %+v", ds)
	}
	bad := []struct {
		cur *protocol.ProjectDecision
		ev  Event
	}{
		{&ds[0], Event{Type: EventRevoked, ID: "d-1"}},               // superseded: final
		{&ds[1], Event{Type: EventConfirmed, ID: "d-2"}},             // active, not proposed
		{&ds[1], Event{Type: EventSuperseded, ID: "d-2", By: "d-2"}}, // by itself
		{&ds[1], Event{Type: EventRecorded, ID: "d-2", Decision: &d}},
		{nil, Event{Type: EventRecorded, ID: "d-9", Decision: &protocol.ProjectDecision{Title: " "}}},
		{nil, Event{Type: EventRevoked, ID: "d-9"}},
	}
	for _, c := range bad {
		if _, err := Apply(c.cur, c.ev); err == nil {
			t.Errorf("Apply(%v, %+v) succeeded, want an error", c.cur != nil, c.ev)
		}
	}
}
