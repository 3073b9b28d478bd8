package blueprints

import (
	"context"
	"testing"

	"github.com/apserver/apserver/blueprint"
	"github.com/apserver/apserver/internal/specgen"
	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
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
	if err := specgen.StoreTenThousandTasks(ctx, st, "bp_bench"); err != nil {
		b.Fatal(err)
	}
	return s
}
