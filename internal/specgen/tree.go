package specgen

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// StoreTenThousandTasks stores blueprint bpID (version v1, ready) with one
// phase P and stories s0..s999 of ten chained tasks each, a quarter of
// them done: the 10,000-task blueprint the blueprints' and the manager's
// benchmarks read.
func StoreTenThousandTasks(ctx context.Context, st *store.Store, bpID string) error {
	if err := st.CreateBlueprintVersion(ctx, store.BlueprintRow{ID: bpID, Title: "bench"}, store.BlueprintVersionRow{ID: "v1", Status: "ingesting", Document: "# P\n"}, json.RawMessage(`{}`)); err != nil {
		return err
	}
	var rows []store.BlueprintNodeRow
	add := func(n protocol.BlueprintNode) {
		n.Order = len(rows)
		raw, _ := json.Marshal(n)
		rows = append(rows, store.BlueprintNodeRow{Ord: n.Order, ID: n.ID, Node: raw})
	}
	add(protocol.BlueprintNode{ID: "P", Kind: protocol.KindPhase, Title: "P", Anchor: []string{"P"}, Status: protocol.NodePlanned})
	story := ""
	for i := range 10000 {
		if i%10 == 0 {
			story = fmt.Sprintf("s%d", i/10)
			add(protocol.BlueprintNode{ID: story, Kind: protocol.KindStory, ParentID: "P", Depth: 1, Anchor: []string{"P", story}, Status: protocol.NodePlanned})
		}
		t := protocol.BlueprintNode{ID: fmt.Sprintf("t%d", i), Kind: protocol.KindTask, ParentID: story, Depth: 2, Status: protocol.NodePlanned,
			Title: fmt.Sprintf("Task %d", i), Anchor: []string{"P", story, fmt.Sprintf("Task %d", i)}, Priority: protocol.PriorityHigh, Estimate: "M"}
		if i%4 == 0 {
			t.Status = protocol.NodeDone
		}
		if i%10 != 0 {
			t.DependsOn = []string{fmt.Sprintf("t%d", i-1)}
		}
		add(t)
	}
	return st.FinishBlueprintVersion(ctx, "v1", rows, nil, json.RawMessage(`{}`))
}
