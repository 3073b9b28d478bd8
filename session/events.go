package session

import (
	"context"
	"strings"
	"sync"

	"github.com/apserver/apserver/model"
)

// modelEvent is one event of a sampling goroutine, tagged with the turn and
// generation it belongs to. done marks the end of the stream (err is its
// result).
type modelEvent struct {
	tr   *turn
	gen  int
	ev   model.Event
	done bool
	err  error
}

// eventQueue hands model events from a sampling goroutine to the thread
// goroutine. The producer appends under a mutex and signals only when the
// queue goes from empty to non-empty, so a fast stream costs one wake-up per
// burst instead of one per delta; the thread drains the whole burst at once.
//
// The queue is bounded: once maxQueuedText bytes of event text wait, push
// blocks until the thread takes them. A thread held up (by a client that
// reads slowly, say: its notifications wait for room in the output queue)
// thus slows the model stream down to its own pace instead of letting the
// queue grow with everything the model sends meanwhile.
type eventQueue struct {
	wake chan struct{}
	// room is signalled when take empties the queue.
	room chan struct{}

	mu   sync.Mutex
	evs  []modelEvent
	text int // bytes of event text queued
}

// maxQueuedText bounds the event text waiting for the thread goroutine.
const maxQueuedText = 256 << 10

func newEventQueue() eventQueue {
	return eventQueue{wake: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

// push queues e. While the queue is full it waits for room, or returns
// false, dropping e, once ctx ends (the stream's events are stale then).
// The final event of a stream (done) never waits.
func (q *eventQueue) push(ctx context.Context, e modelEvent) bool {
	for {
		q.mu.Lock()
		if e.done || q.text < maxQueuedText {
			q.evs = append(q.evs, e)
			q.text += len(e.ev.Text)
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

// take returns everything queued, reusing spare as the next buffer.
func (q *eventQueue) take(spare []modelEvent) []modelEvent {
	q.mu.Lock()
	evs := q.evs
	q.evs = spare[:0]
	q.text = 0
	q.mu.Unlock()
	select {
	case q.room <- struct{}{}:
	default:
	}
	return evs
}

// drainModelEvents processes a burst of model events on the thread
// goroutine. When Options.CoalesceDeltas is on, consecutive text deltas of
// one message in the burst become one item/agentMessage/delta: a client that
// keeps up sees every delta on its own, one that falls behind gets fewer,
// larger ones, and the completed item always carries the full text.
func (t *thread) drainModelEvents() {
	evs := t.events.take(t.spareEvents)
	coalesce := t.m.opts.CoalesceDeltas
	var merged strings.Builder
	for i := 0; i < len(evs); i++ {
		e := evs[i]
		if e.done {
			t.onModelDone(e.tr, e.gen, e.err)
			continue
		}
		if coalesce && e.ev.Kind == model.EvTextDelta {
			j := i + 1
			for j < len(evs) && !evs[j].done && evs[j].tr == e.tr && evs[j].gen == e.gen &&
				evs[j].ev.Kind == model.EvTextDelta && evs[j].ev.ItemID == e.ev.ItemID {
				j++
			}
			if j > i+1 {
				merged.Reset()
				for k := i; k < j; k++ {
					merged.WriteString(evs[k].ev.Text)
				}
				e.ev.Text = merged.String()
				i = j - 1
			}
		}
		t.onModelEvent(e.tr, e.gen, e.ev)
	}
	clear(evs)
	t.spareEvents = evs
}
