package blueprints

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/apserver/apserver/blueprint"
	"github.com/apserver/apserver/internal/specgen"
	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// BenchmarkIngestLarge: a whole ingestion of the ~500,000-word generated
// specification (72 chunks) through the model client, the store and the
// merge, with a scripted model that answers at once (in process, so its
// work is counted too).
func BenchmarkIngestLarge(b *testing.B) {
	sp := specgen.Generate(1, specgen.Large)
	d, err := blueprint.Parse(sp.Text)
	if err != nil {
		b.Fatal(err)
	}
	answers := sp.Answers(d, 0, 0)
	f := newFixture(b, specgen.Script(answers))
	b.ReportAllocs()
	b.SetBytes(int64(len(sp.Text)))
	for b.Loop() {
		s, closeFn := f.service(b, 0, 4, nil)
		res, err := s.Ingest(context.Background(), protocol.BlueprintIngestParams{Text: sp.Text})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Wait(context.Background(), res.Blueprint.ID); err != nil {
			b.Fatal(err)
		}
		bp, err := s.blueprint(context.Background(), mustStore(b, s), res.Blueprint.ID)
		if err != nil || bp.Primary.Status != protocol.JobReady || bp.Primary.Nodes != len(sp.Nodes) {
			b.Fatalf("%+v %v", bp.Primary, err)
		}
		closeFn()
	}
}

// BenchmarkNextMethod10k: blueprint/next as the server answers it (load
// the stored tree, decode it, order the ready tasks) on a tree of 10,000
// tasks.
func BenchmarkNextMethod10k(b *testing.B) {
	s := tenThousandTasks(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r, err := s.Next(ctx, protocol.BlueprintNextParams{BlueprintID: "bp_bench", Limit: 50})
		if err != nil || len(r.Data) == 0 {
			b.Fatal(len(r.Data), err)
		}
	}
}

// BenchmarkReadExpand10k: what an editor's tree asks when a node of a
// 10,000-task blueprint is expanded (blueprint/read from that node, two
// levels, every page): the phase (1,000 stories and their 10,000 tasks)
// and one story (its ten tasks).
func BenchmarkReadExpand10k(b *testing.B) {
	s := tenThousandTasks(b)
	ctx := context.Background()
	for _, node := range []string{"P", "s500"} {
		b.Run(node, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				n, cursor := 0, ""
				for {
					r, err := s.Read(ctx, protocol.BlueprintReadParams{BlueprintID: "bp_bench", NodeID: node, Depth: 2, Cursor: cursor, Limit: 1000})
					if err != nil {
						b.Fatal(err)
					}
					n += len(r.Nodes)
					if cursor = r.NextCursor; cursor == "" {
						break
					}
				}
				if n == 0 {
					b.Fatal("no nodes")
				}
			}
		})
	}
}

// tenThousandTasks is a service holding blueprint bp_bench: one phase P,
// stories s0..s999 of ten chained tasks each, a quarter of them done.
func tenThousandTasks(b *testing.B) *Service {
	f := newFixture(b, scripted.Script{})
	s, _ := f.service(b, 0, 4, nil)
	st := mustStore(b, s)
	ctx := context.Background()
	bp := store.BlueprintRow{ID: "bp_bench", Title: "bench"}
	if err := st.CreateBlueprintVersion(ctx, bp, store.BlueprintVersionRow{ID: "v1", Status: "ingesting", Document: "# P\n"}, json.RawMessage(`{}`)); err != nil {
		b.Fatal(err)
	}
	var rows []store.BlueprintNodeRow
	add := func(n protocol.BlueprintNode) {
		n.Order = len(rows)
		raw, _ := json.Marshal(n)
		rows = append(rows, store.BlueprintNodeRow{Ord: n.Order, ID: n.ID, Node: raw})
	}
	add(protocol.BlueprintNode{ID: "P", Kind: protocol.KindPhase, Title: "P", Anchor: []string{"P"}, Status: protocol.NodePlanned})
	story := ""
	for i := 0; i < 10000; i++ {
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
	if err := st.FinishBlueprintVersion(ctx, "v1", rows, nil, json.RawMessage(`{}`)); err != nil {
		b.Fatal(err)
	}
	return s
}
