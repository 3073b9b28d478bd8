package fswatch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apserver/apserver/protocol"
)

type answer struct {
	res any
	err error
}

func call[P any](f func(context.Context, P, func(any, error)), p P) answer {
	got := make(chan answer, 1)
	f(context.Background(), p, func(res any, err error) { got <- answer{res, err} })
	return <-got
}

// TestWatchNotifies: a change under a watched directory arrives as
// fs/changed with the watch's id; a relative path and a duplicate id are
// refused; after Close no watch starts (no watcher outlives the server).
func TestWatchNotifies(t *testing.T) {
	changed := make(chan protocol.FsChangedNotification, 16)
	s := New(func(method string, params any) {
		if method == protocol.NotifyFsChanged {
			changed <- params.(protocol.FsChangedNotification)
		}
	})
	dir := t.TempDir()
	watch := func(p protocol.FsWatchParams) answer {
		return call(func(ctx context.Context, p protocol.FsWatchParams, r func(any, error)) { s.Watch(ctx, p, r) }, p)
	}
	if a := watch(protocol.FsWatchParams{WatchID: "w", Path: "rel"}); a.err == nil {
		t.Errorf("fs/watch of a relative path = %v, want an error", a.res)
	}
	if a := watch(protocol.FsWatchParams{WatchID: "w", Path: dir}); a.err != nil {
		t.Fatalf("fs/watch: %v", a.err)
	}
	if a := watch(protocol.FsWatchParams{WatchID: "w", Path: dir}); a.err == nil {
		t.Errorf("a second fs/watch with the same id = %v, want an error", a.res)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-changed:
		if n.WatchID != "w" || len(n.ChangedPaths) == 0 {
			t.Errorf("fs/changed = %+v, want watch w with the file", n)
		}
	case <-time.After(30 * time.Second): // a failure guard, not a wait for the change
		t.Fatal("no fs/changed")
	}
	call(func(ctx context.Context, p protocol.FsUnwatchParams, r func(any, error)) { s.Unwatch(ctx, p, r) }, protocol.FsUnwatchParams{WatchID: "w"})
	if a := watch(protocol.FsWatchParams{WatchID: "w", Path: dir}); a.err != nil {
		t.Errorf("fs/watch after fs/unwatch of the id: %v", a.err)
	}
	s.Close()
	if a := watch(protocol.FsWatchParams{WatchID: "w2", Path: dir}); a.err == nil {
		t.Errorf("fs/watch after Close = %v, want an error", a.res)
	}
}

// TestNoWatchAfterClose: a service closed before its first watch makes no
// watcher afterwards (one would outlive the server).
func TestNoWatchAfterClose(t *testing.T) {
	s := New(func(string, any) {})
	s.Close()
	a := call(func(ctx context.Context, p protocol.FsWatchParams, r func(any, error)) { s.Watch(ctx, p, r) }, protocol.FsWatchParams{WatchID: "w", Path: t.TempDir()})
	if a.err == nil {
		t.Errorf("fs/watch after Close = %v, want an error", a.res)
	}
	if s.w != nil {
		t.Errorf("a watcher was made after Close")
	}
}
