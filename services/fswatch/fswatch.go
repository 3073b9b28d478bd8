package fswatch

import (
	"context"
	"errors"
	"path/filepath"
	"sync"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
	"github.com/apserver/apserver/tools/fswatch"
)

// Service answers fs/watch and fs/unwatch. Any goroutine may use it.
type Service struct {
	notify func(method string, params any)

	// mu guards w, made on first use, and closed.
	mu     sync.Mutex
	w      *fswatch.Watcher
	closed bool
}

// New returns a Service that sends fs/changed with notify.
func New(notify func(method string, params any)) *Service {
	return &Service{notify: notify}
}

// Watch implements fs/watch: a recursive, debounced watch whose changes
// arrive as fs/changed.
func (s *Service) Watch(ctx context.Context, p protocol.FsWatchParams, reply port.Reply) {
	if !filepath.IsAbs(p.Path) {
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "Invalid request: path must be absolute: %s", p.Path))
		return
	}
	w, err := s.watcher()
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

// Unwatch implements fs/unwatch; an unknown id is not an error.
func (s *Service) Unwatch(ctx context.Context, p protocol.FsUnwatchParams, reply port.Reply) {
	s.Forget(p.WatchID)
	reply(struct{}{}, nil)
}

// Forget ends watch id, if there is one (server calls it for the watches
// of a connection that closed).
func (s *Service) Forget(id string) {
	s.mu.Lock()
	w := s.w
	s.mu.Unlock()
	if w != nil {
		w.Unwatch(id)
	}
}

func (s *Service) watcher() (*fswatch.Watcher, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w != nil {
		return s.w, nil
	}
	if s.closed {
		return nil, errors.New("fs/watch: the server is shutting down")
	}
	w, err := fswatch.New(0, func(id string, paths []string) {
		s.notify(protocol.NotifyFsChanged, protocol.FsChangedNotification{WatchID: id, ChangedPaths: paths})
	})
	if err != nil {
		return nil, err
	}
	s.w = w
	return w, nil
}

// Close stops the watcher.
func (s *Service) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.w != nil {
		s.w.Close()
	}
}
