package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/store"
)

// TestLongThreadAnswerIsStreamed stores a thread of 12 MB of items and
// resumes and reads it, with every turn, from the real binary: each answer
// carries every item as it was stored, in order, and the server's peak RSS
// (VmHWM, read from /proc) stays far below the answer's size: the answer
// is streamed from a spill, never held whole (docs/architecture.md,
// "Concurrency"). Holding it whole took 100 MB.
func TestLongThreadAnswerIsStreamed(t *testing.T) {
	t.Parallel()
	const (
		turns, perTurn = 120, 10
		textBytes      = 10 << 10
		maxPeakKB      = 48 << 10
	)
	dataDir := t.TempDir()
	ctx := context.Background()
	db, err := store.Open(filepath.Join(dataDir, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const id = "long-thread"
	cwd := t.TempDir()
	if err := db.CreateThread(ctx, store.Thread{ID: id, Cwd: cwd, Model: "m", CreatedAt: 1000, UpdatedAt: 1000}); err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("word ", textBytes/5)
	var ids []string
	for k := range turns {
		tid := fmt.Sprintf("turn-%04d", k)
		if _, err := db.StartTurn(ctx, store.Turn{ThreadID: id, ID: tid, StartedAt: 1000}); err != nil {
			t.Fatal(err)
		}
		for i := range perTurn {
			iid := fmt.Sprintf("item-%04d-%02d", k, i)
			b, _ := json.Marshal(map[string]any{"type": "agentMessage", "id": iid, "text": iid + " " + text, "phase": nil})
			if _, err := db.AppendItem(ctx, store.Item{ThreadID: id, TurnID: tid, ID: iid, Type: "agentMessage", Item: b,
				History: json.RawMessage(`[]`), CompletedAt: 1000}); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, iid)
		}
		if err := db.FinishTurn(ctx, store.Turn{ThreadID: id, ID: tid, Status: store.StatusCompleted, CompletedAt: 2000, DurationMs: 1000}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	c := newClient(t, startModel(t), options{dataDir: dataDir})
	if c.cmd == nil {
		t.Skip("needs the binary: the peak RSS is the process's")
	}
	c.wait = 2 * time.Minute // megabytes of JSON, checked under -race on a shared machine
	for _, req := range []struct {
		method string
		params map[string]any
	}{
		{"thread/resume", map[string]any{"threadId": id}},
		{"thread/read", map[string]any{"threadId": id, "includeTurns": true}},
	} {
		r := c.call(req.method, req.params)
		if len(r.Raw) < turns*perTurn*textBytes {
			t.Fatalf("%s: answer of %d bytes, want at least %d", req.method, len(r.Raw), turns*perTurn*textBytes)
		}
		got, _ := r.get("thread.turns").([]any)
		if len(got) != turns {
			t.Fatalf("%s: %d turns, want %d", req.method, len(got), turns)
		}
		n := 0
		for k, tr := range got {
			items, _ := tr.(map[string]any)["items"].([]any)
			if len(items) != perTurn {
				t.Fatalf("%s: turn %d has %d items, want %d", req.method, k, len(items), perTurn)
			}
			for _, it := range items {
				m := it.(map[string]any)
				if m["id"] != ids[n] || m["text"] != ids[n]+" "+text {
					t.Fatalf("%s: item %d is %v (text of %d bytes), want %s", req.method, n, m["id"], len(fmt.Sprint(m["text"])), ids[n])
				}
				n++
			}
		}
		if peak := peakRSSKB(t, c.cmd.Process.Pid); peak > maxPeakKB {
			t.Errorf("after %s of a %d MB answer: peak RSS %d kB, want at most %d kB", req.method, len(r.Raw)>>20, peak, maxPeakKB)
		}
	}
}

// peakRSSKB is the process's VmHWM in kB.
func peakRSSKB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb int
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
			return kb
		}
	}
	t.Fatal("no VmHWM")
	return 0
}
