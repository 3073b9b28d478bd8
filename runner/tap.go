package runner

import (
	"sync"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

// Tap is the session's Client as the runner sees it: it passes every
// message on to the real client unchanged and shows the runner the
// notifications of the threads it drives (turn/completed, item/completed,
// fullAuto/statusChanged).
type Tap struct {
	session.Client

	mu       sync.Mutex
	watchers map[string]*watcher // by thread id
}

// NewTap wraps c.
func NewTap(c session.Client) *Tap {
	return &Tap{Client: c, watchers: map[string]*watcher{}}
}

// Notify passes the notification on, then shows it to the thread's
// watcher, if any.
func (t *Tap) Notify(method string, params any) {
	t.Client.Notify(method, params)
	var thread string
	switch p := params.(type) {
	case protocol.TurnNotification:
		thread = p.ThreadID
	case protocol.ItemCompletedNotification:
		thread = p.ThreadID
	case protocol.FullAutoStatusChangedNotification:
		thread = p.ThreadID
	default:
		return
	}
	t.mu.Lock()
	w := t.watchers[thread]
	t.mu.Unlock()
	if w != nil {
		w.push(note{method, params})
	}
}

type note struct {
	method string
	params any
}

// watcher queues a thread's notifications for one goroutine of the runner.
// The queue is unbounded so that Notify (on a thread goroutine) never
// blocks.
type watcher struct {
	mu    sync.Mutex
	queue []note
	wake  chan struct{}
}

func (w *watcher) push(n note) {
	w.mu.Lock()
	w.queue = append(w.queue, n)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *watcher) take() []note {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.queue
	w.queue = nil
	return q
}

// watch starts collecting the thread's notifications; stop ends it.
func (t *Tap) watch(thread string) (w *watcher, stop func()) {
	w = &watcher{wake: make(chan struct{}, 1)}
	t.mu.Lock()
	t.watchers[thread] = w
	t.mu.Unlock()
	return w, func() {
		t.mu.Lock()
		if t.watchers[thread] == w {
			delete(t.watchers, thread)
		}
		t.mu.Unlock()
	}
}
