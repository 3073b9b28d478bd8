// Package modelstream carries a model stream's events from the goroutine
// that reads the stream to the thread goroutine that acts on them: a
// bounded queue that wakes its reader once per burst (Queue), and the
// merging of a burst's text deltas for a client that falls behind
// (Coalesce).
//
// It knows no thread: an event is tagged with a turn of the caller's type
// and the sampling generation. It must not import session or server.
package modelstream

import (
	"context"
	"strings"
	"sync"

	"github.com/apserver/apserver/model"
)

// Event is one event of a sampling goroutine, tagged with the turn and
// generation it belongs to. Done marks the end of the stream (Err is its
// result).
type Event[T comparable] struct {
	Turn T
	Gen  int
	Ev   model.Event
	Done bool
	Err  error
}

// Queue hands model events from a sampling goroutine to the thread
// goroutine. The producer appends under a mutex and signals only when the
// queue goes from empty to non-empty, so a fast stream costs one wake-up per
// burst instead of one per delta; the thread drains the whole burst at once.
//
// The queue is bounded: once MaxQueuedBytes wait (each event's strings
// and its own size, so that a flood of tiny or empty events counts as
// much as a few large ones), Push blocks until the thread takes them. A thread held up (by a client that
// reads slowly, say: its notifications wait for room in the output queue)
// thus slows the model stream down to its own pace instead of letting the
// queue grow with everything the model sends meanwhile.
type Queue[T comparable] struct {
	wake chan struct{}
	// room is signalled when Take empties the queue.
	room chan struct{}

	mu    sync.Mutex
	evs   []Event[T]
	bytes int // cost of the events queued
}

// MaxQueuedBytes bounds what waits for the thread goroutine: the cost of
// the events queued.
const MaxQueuedBytes = 256 << 10

// eventSize is what an event costs the queue besides its strings: no less
// than the size of an Event (TestEventSize), 264 bytes on 64-bit machines.
const eventSize = 272

// cost is what e holds in the queue: its own size and its strings.
func cost[T comparable](e Event[T]) int {
	n := eventSize + len(e.Ev.ItemID) + len(e.Ev.Text) + len(e.Ev.Call.CallID) + len(e.Ev.Call.Name) + len(e.Ev.Call.Arguments)
	for _, s := range e.Ev.Summary {
		n += len(s)
	}
	for _, s := range e.Ev.Content {
		n += len(s)
	}
	return n
}

// NewQueue returns an empty queue.
func NewQueue[T comparable]() Queue[T] {
	return Queue[T]{wake: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

// Wake is signalled when events wait to be taken.
func (q *Queue[T]) Wake() <-chan struct{} { return q.wake }

// Push queues e. While the queue is full it waits for room, or returns
// false, dropping e, once ctx ends (the stream's events are stale then).
// The final event of a stream (Done) never waits.
func (q *Queue[T]) Push(ctx context.Context, e Event[T]) bool {
	for {
		q.mu.Lock()
		if e.Done || q.bytes < MaxQueuedBytes {
			q.evs = append(q.evs, e)
			q.bytes += cost(e)
			first := len(q.evs) == 1
			q.mu.Unlock()
			if first {
				select {
				case q.wake <- struct{}{}:
				default:
				}
			}
			return true
		}
		q.mu.Unlock()
		select {
		case <-q.room:
		case <-ctx.Done():
			return false
		}
	}
}

// Take returns everything queued, reusing spare as the next buffer.
func (q *Queue[T]) Take(spare []Event[T]) []Event[T] {
	q.mu.Lock()
	evs := q.evs
	q.evs = spare[:0]
	q.bytes = 0
	q.mu.Unlock()
	select {
	case q.room <- struct{}{}:
	default:
	}
	return evs
}

// Rearm wakes the reader again when events wait: a panic may have come
// between the wake-up and taking them, and Push signals only when the
// queue goes from empty to non-empty.
func (q *Queue[T]) Rearm() {
	q.mu.Lock()
	n := len(q.evs)
	q.mu.Unlock()
	if n > 0 {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

// Coalesce merges, in place, each run of consecutive text deltas of one
// message (same turn, generation and item) in a burst into one delta with
// their text: a client that keeps up sees every delta on its own, one that
// falls behind gets fewer, larger ones. It returns evs shortened.
func Coalesce[T comparable](evs []Event[T]) []Event[T] {
	out := evs[:0]
	var merged strings.Builder
	for i := 0; i < len(evs); i++ {
		e := evs[i]
		if !e.Done && e.Ev.Kind == model.EvTextDelta {
			j := i + 1
			for j < len(evs) && !evs[j].Done && evs[j].Turn == e.Turn && evs[j].Gen == e.Gen &&
				evs[j].Ev.Kind == model.EvTextDelta && evs[j].Ev.ItemID == e.Ev.ItemID {
				j++
			}
			if j > i+1 {
				merged.Reset()
				for k := i; k < j; k++ {
					merged.WriteString(evs[k].Ev.Text)
				}
				e.Ev.Text = merged.String()
				i = j - 1
			}
		}
		out = append(out, e)
	}
	return out
}
