package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

func TestRunEventLog(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), FileName)
	s := openTest(t, path)
	for i := 1; i <= 3; i++ {
		row := RunRow{ID: "r1", Cwd: "/repo", Status: "running", Run: []byte(fmt.Sprintf(`{"n":%d}`, i))}
		seq, err := s.AppendRunEvent(ctx, row, "ev", []byte(fmt.Sprintf(`{"i":%d}`, i)), int64(100*i))
		if err != nil || seq != int64(i) {
			t.Fatalf("AppendRunEvent #%d = %d, %v", i, seq, err)
		}
	}
	if _, err := s.AppendRunEvent(ctx, RunRow{ID: "r2", Cwd: "/repo", Status: "waiting", Run: []byte(`{}`)}, "ev", []byte(`{}`), 500); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendRunEvent(ctx, RunRow{ID: "r2", Cwd: "/repo", Status: "waiting", Run: []byte(`{}`)}, "ev", []byte(`{not json`), 600); err == nil {
		t.Error("a malformed event was stored")
	}
	s.Close()

	// Reopened, as after a restart.
	s = openTest(t, path)
	evs, err := s.RunEvents(ctx, "r1")
	if err != nil || len(evs) != 3 {
		t.Fatalf("RunEvents = %v, %v", evs, err)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) || string(e.Event) != fmt.Sprintf(`{"i":%d}`, i+1) || e.At != int64(100*(i+1)) {
			t.Errorf("event %d = %+v", i, e)
		}
	}
	rows, err := s.RunRows(ctx)
	if err != nil || len(rows) != 2 || rows[0].ID != "r2" || string(rows[1].Run) != `{"n":3}` || rows[1].CreatedAt != 100 || rows[1].UpdatedAt != 300 {
		t.Fatalf("RunRows = %+v, %v", rows, err)
	}
	if evs, _ := s.RunEvents(ctx, "r2"); len(evs) != 1 {
		t.Errorf("r2 has %d events after a refused append, want 1", len(evs))
	}
	if _, err := s.RunEvents(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("RunEvents(unknown) = %v, want ErrNotFound", err)
	}
}
