package session

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tools/fswatch"
)

// WatchFS implements fs/watch: a recursive, debounced watch whose changes
// arrive as fs/changed. Watch ids belong to the connection (there is one
// per process).
func (m *Manager) WatchFS(ctx context.Context, p protocol.FsWatchParams, reply Reply) {
	if !filepath.IsAbs(p.Path) {
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "Invalid request: path must be absolute: %s", p.Path))
		return
	}
	w, err := m.watcher()
	if err != nil {
		reply(nil, err)
		return
	}
	canon, err := w.Watch(p.WatchID, p.Path)
	if errors.Is(err, fswatch.ErrExists) {
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "watchId already exists: %s", p.WatchID))
		return
	}
	if err != nil {
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "fs/watch: %v", err))
		return
	}
	reply(protocol.FsWatchResult{Path: canon}, nil)
}

// UnwatchFS implements fs/unwatch; an unknown id is not an error.
func (m *Manager) UnwatchFS(ctx context.Context, p protocol.FsUnwatchParams, reply Reply) {
	m.mu.Lock()
	w := m.fsw.w
	m.mu.Unlock()
	if w != nil {
		w.Unwatch(p.WatchID)
	}
	reply(struct{}{}, nil)
}

func (m *Manager) watcher() (*fswatch.Watcher, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fsw.w != nil {
		return m.fsw.w, nil
	}
	w, err := fswatch.New(0, func(id string, paths []string) {
		m.notify(protocol.NotifyFsChanged, protocol.FsChangedNotification{WatchID: id, ChangedPaths: paths})
	})
	if err != nil {
		return nil, err
	}
	m.fsw.w = w
	return w, nil
}

// watchState is the Manager's fs/watch state, guarded by m.mu.
type watchState struct{ w *fswatch.Watcher }

// closeWatcher stops fs/watch; m.mu is held.
func (m *Manager) closeWatcher() {
	if m.fsw.w != nil {
		m.fsw.w.Close()
	}
}
