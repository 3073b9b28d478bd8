package projects

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apserver/apserver/store"
)

// BenchmarkRouteIntentOff is what intent from chat adds to a turn in a
// workspace that is not a project (every turn of a plain thread): one
// read of the project's settings, no model request.
func BenchmarkRouteIntentOff(b *testing.B) {
	db, err := store.Open(filepath.Join(b.TempDir(), "s.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s := New(Options{Store: func() (*store.Store, error) { return db, nil }})
	ws := b.TempDir()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if out := s.RouteIntent(ctx, IntentRequest{ThreadID: "t", Cwd: ws, Text: "hello"}); !out.Answer {
			b.Fatal(out)
		}
	}
}
