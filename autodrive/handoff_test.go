package autodrive

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

func TestHandoffText(t *testing.T) {
	for _, tc := range []struct {
		pinned, summary string
		want            []string
		not             []string
	}{
		{"", "", []string{"continues from thread t1,", "## Objective\nship it"}, []string{"## Summary"}},
		{"\n\n## Plan\n- a", "did a", []string{"ship it\n\n## Plan\n- a\n\n## Summary of the work so far\ndid a"}, nil},
	} {
		got := HandoffText("t1", "ship it", tc.pinned, tc.summary)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("HandoffText(%q, %q) = %q, want it to contain %q", tc.pinned, tc.summary, got, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(got, w) {
				t.Errorf("HandoffText(%q, %q) = %q, want no %q", tc.pinned, tc.summary, got, w)
			}
		}
	}
}

// TestStoredRuns: the stored drives, but for those of the threads the
// caller has seen loaded, and for one whose snapshot does not decode.
func TestStoredRuns(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for id, data := range map[string]string{
		"a": mustJSON(t, fullauto.Drive{Objective: "oa", State: protocol.FullAutoRunning}),
		"b": mustJSON(t, fullauto.Drive{Objective: "ob", State: protocol.FullAutoPaused}),
		"c": `[1]`, // JSON, but no drive
	} {
		if err := db.CreateThread(ctx, store.Thread{ID: id, Cwd: "/w", CreatedAt: 1, UpdatedAt: 1}); err != nil {
			t.Fatal(err)
		}
		if err := db.PutDrive(ctx, store.Drive{ThreadID: id, State: "running", Data: []byte(data)}); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := StoredRuns(ctx, db, map[string]bool{"b": true})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].ThreadID != "a" || runs[0].Objective == nil || *runs[0].Objective != "oa" {
		t.Errorf("StoredRuns(seen b) = %+v, want only a's", runs)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
