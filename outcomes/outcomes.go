// Package outcomes is the thread port's outcome streams: each outcome of
// a thread (a turn ended, an item completed, full auto changed, a request
// asked, usage reported) queued, without blocking the publisher, on every
// stream watching that thread, and which notifications are outcomes (Of).
// session publishes; the layers above read through port.Stream.
//
// It must not import session or server.
package outcomes

import (
	"context"
	"sync"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
)

// Of is the port's outcome for a notification about threadID, if
// it is one (turn/completed, item/completed, fullAuto/statusChanged).
func Of(threadID, method string, params any) port.Outcome {
	switch p := params.(type) {
	case protocol.TurnNotification:
		if method == protocol.NotifyTurnCompleted {
			return port.TurnEnded{ThreadID: threadID, TurnID: p.Turn.ID, Status: p.Turn.Status, Error: p.Turn.Error}
		}
	case protocol.ItemCompletedNotification:
		return port.ItemCompleted{ThreadID: threadID, TurnID: p.TurnID, Item: p.Item}
	case protocol.FullAutoStatusChangedNotification:
		run := p.Run
		run.State = p.State
		return port.FullAutoChanged{ThreadID: threadID, Run: run}
	}
	return nil
}

// Hub is the port's outcome streams, by thread. Its zero value is ready;
// any goroutine may use it.
type Hub struct {
	mu sync.Mutex
	by map[string]map[*stream]bool // guarded by mu
}

// Watch opens a stream of the outcomes of thread threadID, from now on.
func (w *Hub) Watch(threadID string) port.Stream {
	s := &stream{w: w, thread: threadID, wake: make(chan struct{}, 1)}
	w.mu.Lock()
	if w.by == nil {
		w.by = map[string]map[*stream]bool{}
	}
	if w.by[threadID] == nil {
		w.by[threadID] = map[*stream]bool{}
	}
	w.by[threadID][s] = true
	w.mu.Unlock()
	return s
}

// Publish queues o on every stream watching its thread. It never blocks.
func (w *Hub) Publish(o port.Outcome) {
	w.mu.Lock()
	subs := w.by[o.Thread()]
	list := make([]*stream, 0, len(subs))
	for s := range subs {
		list = append(list, s)
	}
	w.mu.Unlock()
	for _, s := range list {
		s.push(o)
	}
}

// stream is a port.Stream.
type stream struct {
	w      *Hub
	thread string
	wake   chan struct{}

	mu     sync.Mutex
	queue  []port.Outcome // guarded by mu
	closed bool           // guarded by mu
}

func (s *stream) push(o port.Outcome) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.queue = append(s.queue, o)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *stream) Next(ctx context.Context) (port.Outcome, error) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			o := s.queue[0]
			s.queue[0] = nil
			s.queue = s.queue[1:]
			s.mu.Unlock()
			return o, nil
		}
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return nil, port.ErrClosed
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (s *stream) Close() {
	s.w.mu.Lock()
	if subs := s.w.by[s.thread]; subs != nil {
		delete(subs, s)
		if len(subs) == 0 {
			delete(s.w.by, s.thread)
		}
	}
	s.w.mu.Unlock()
	s.mu.Lock()
	s.closed = true
	s.queue = nil
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
