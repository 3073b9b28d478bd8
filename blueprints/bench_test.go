package blueprints

import (
	"context"
	"testing"

	"github.com/apserver/apserver/blueprint"
	"github.com/apserver/apserver/internal/specgen"
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
