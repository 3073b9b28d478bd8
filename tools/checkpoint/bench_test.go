package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkTurnCheckpoints measures what a turn that runs a tool pays in
// the session: a snapshot before its first tool, then one file changed, a
// snapshot and the diff against the start (the final turn/diff/updated).
// The workspace holds 200 small files in 10 directories.
func BenchmarkTurnCheckpoints(b *testing.B) {
	ctx := context.Background()
	ws := b.TempDir()
	for d := range 10 {
		dir := filepath.Join(ws, fmt.Sprintf("pkg%d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 20 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", f)), []byte(fmt.Sprintf("package pkg%d\n\nconst n%d = %d\n", d, f, f)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	s, err := Open(ctx, b.TempDir(), ws, Options{})
	if err != nil {
		b.Fatal(err)
	}
	target := filepath.Join(ws, "pkg0", "f0.go")
	i := 0
	for b.Loop() {
		start, err := s.Snapshot(ctx, "start")
		if err != nil {
			b.Fatal(err)
		}
		i++
		if err := os.WriteFile(target, []byte(fmt.Sprintf("package pkg0\n\nconst n0 = %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
		end, err := s.Snapshot(ctx, "end")
		if err != nil {
			b.Fatal(err)
		}
		if d, err := s.Diff(ctx, start.ID, end.ID); err != nil || d == "" {
			b.Fatalf("diff %q, %v", d, err)
		}
	}
}
