package brain

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
)

// bigProject is 1,000 decisions (every 50th scoped to the task's files)
// and a 10,000-task blueprint, with the preview's input for task 5000.
func bigProject() (State, Input) {
	var ds []protocol.ProjectDecision
	for i := 0; i < 1000; i++ {
		d := protocol.ProjectDecision{ID: fmt.Sprintf("d-%04d", i), Title: fmt.Sprintf("Decision %d about module %d", i, i%97),
			Text: strings.Repeat("A sentence that explains the decision. ", 6), Why: "because", Status: protocol.DecisionActive,
			Scope:       protocol.DecisionScope{Files: []string{fmt.Sprintf("mod%d/**", i%97)}, Tags: []string{fmt.Sprintf("tag%d", i%13)}},
			CreatedAtMs: int64(i), UpdatedAtMs: int64(i)}
		if i%50 == 0 {
			d.Scope.Files = []string{"svc/orders/**"}
		}
		ds = append(ds, d)
	}
	st := State{Project: "big", Goals: []string{"ship"}, Decisions: ds}
	for i := 0; i < 10000; i++ {
		status := protocol.NodePlanned
		switch i % 4 {
		case 1:
			status = protocol.NodeDone
		case 2:
			status = protocol.NodeInProgress
		}
		st.Tasks = append(st.Tasks, TaskState{ID: fmt.Sprintf("t-%05d", i), NodeID: fmt.Sprintf("n-%04d", i/10), Title: "Task title " + fmt.Sprint(i), Status: status, Order: i})
	}
	st.Blueprint = &BlueprintState{ID: "bp", Title: "Big", Version: 1, Done: 2500, Total: 10000}
	in := Input{Role: "implementer",
		Task:      Task{ID: "t-05000", Title: "Orders service", Text: "Implement the orders service.", Files: []string{"svc/orders/service.go"}, Nodes: []string{"n-0500"}},
		Node:      &protocol.BlueprintNode{ID: "n-0500", Kind: protocol.KindStory, Title: "Orders", Status: protocol.NodeInProgress},
		Excerpt:   "EXCERPT-5000: the orders service keeps orders. " + strings.Repeat("More of the source text. ", 200),
		Decisions: ds,
	}
	return st, in
}

func TestBigPreview(t *testing.T) {
	st, in := bigProject()
	in.Snapshot = Snapshot(st)
	got := Build(in)
	if Tokens(got) > DefaultBudget {
		t.Fatalf("preview has %d tokens, budget %d", Tokens(got), DefaultBudget)
	}
	if !strings.Contains(got, "EXCERPT-5000") {
		t.Error("preview lacks the task's excerpt")
	}
	for i := 0; i < 1000; i += 50 {
		if !strings.Contains(got, fmt.Sprintf("- d-%04d ", i)) {
			t.Errorf("preview lacks matching decision d-%04d", i)
		}
	}
}

// BenchmarkPreview is the context block of an implementer on 1,000
// decisions and a 10,000-task blueprint (target: < 20 ms per op); the
// snapshot is the projection, rendered when the state changes.
func BenchmarkPreview(b *testing.B) {
	st, in := bigProject()
	in.Snapshot = Snapshot(st)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if Tokens(Build(in)) > DefaultBudget {
			b.Fatal("over budget")
		}
	}
}

// BenchmarkPreviewWithSnapshot renders the snapshot of the 10,000 tasks
// too, as a preview does when the projection is out of date.
func BenchmarkPreviewWithSnapshot(b *testing.B) {
	st, in := bigProject()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		in.Snapshot = Snapshot(st)
		if Tokens(Build(in)) > DefaultBudget {
			b.Fatal("over budget")
		}
	}
}
