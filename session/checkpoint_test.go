package session

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/tools/checkpoint"
)

// dirSize is the total size of the regular files under dir.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCheckpointsPruned runs turns that each replace an incompressible file,
// in a store that keeps two snapshots and collects garbage at once: the
// store stays near two snapshots' worth instead of growing with every turn,
// and the last turn, whose snapshots are kept, still reverts.
func TestCheckpointsPruned(t *testing.T) {
	if _, err := os.Stat("/dev/urandom"); err != nil {
		t.Skip("no /dev/urandom")
	}
	t.Parallel()
	const blobSize, turns = 300_000, 8
	srv, err := scripted.Start(scripted.Script{Default: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Command: fmt.Sprintf("head -c %d /dev/urandom > blob", blobSize)}}},
		{Text: "written."},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	data := t.TempDir()
	h := &harness{srv: srv, dbPath: filepath.Join(t.TempDir(), "a.db"), c: newFakeClient()}
	h.m = NewManager(Options{
		OpenStore:   func() (*store.Store, error) { return store.Open(h.dbPath, store.Options{}) },
		Config:      testConfig(t, srv.URL()),
		Client:      h.c,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		DataDir:     data,
		Checkpoints: checkpoint.Options{MaxSnapshots: 2, GCLooseObjects: 1},
	})
	t.Cleanup(func() { _ = h.m.Close() })

	ws := t.TempDir()
	id := h.startThread(t, protocol.ThreadStartParams{ThreadSettings: protocol.ThreadSettings{
		Cwd:            &ws,
		ApprovalPolicy: &protocol.AskForApproval{Mode: protocol.ApprovalNever},
		Sandbox:        ptr(protocol.SandboxDangerFullAccess),
	}}).Thread.ID
	var prev []byte
	var last protocol.Turn
	for i := range turns {
		last = h.startTurn(t, id, fmt.Sprintf("turn %d", i))
		h.c.waitFor(t, fmt.Sprintf("turn %d completed", i), func(l []event) bool {
			return len(filter(l, protocol.NotifyTurnCompleted, id)) == i+1
		})
		if i == turns-2 {
			if prev, err = os.ReadFile(filepath.Join(ws, "blob")); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The revert waits for the store, so the last turn's pruning is over
	// when it is answered.
	res := mustCall[protocol.ThreadRevertResult](t, h, "thread/revert", func(r Reply) {
		h.m.RevertThread(context.Background(), protocol.ThreadRevertParams{ThreadID: id, BeforeTurnID: last.ID}, r)
	})
	if len(res.RestoredPaths) != 1 || res.RestoredPaths[0] != "blob" {
		t.Errorf("revert restored %q, want [blob]", res.RestoredPaths)
	}
	got, err := os.ReadFile(filepath.Join(ws, "blob"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(prev) {
		t.Errorf("after revert, blob is not the file the turn before the last one wrote")
	}
	size := dirSize(t, filepath.Join(data, "checkpoints"))
	if max := int64(4 * blobSize); size > max {
		t.Errorf("checkpoint store is %d bytes after %d turns of %d-byte files with 2 snapshots kept; want at most %d", size, turns, blobSize, max)
	}
	t.Logf("checkpoint store: %d bytes", size)
}
