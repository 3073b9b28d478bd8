package session

import "github.com/apserver/apserver/modelstream"

// modelEvent is one event of a sampling goroutine, tagged with its turn
// and generation; eventQueue hands them to the thread goroutine, woken
// once per burst (package modelstream).
type (
	modelEvent = modelstream.Event[*turn]
	eventQueue = modelstream.Queue[*turn]
)

// drainModelEvents processes a burst of model events on the thread
// goroutine. When Options.CoalesceDeltas is on, consecutive text deltas of
// one message in the burst become one item/agentMessage/delta
// (modelstream.Coalesce); the completed item always carries the full text.
func (t *thread) drainModelEvents() {
	all := t.events.Take(t.spareEvents)
	evs := all
	if t.m.opts.CoalesceDeltas {
		evs = modelstream.Coalesce(all)
	}
	for _, e := range evs {
		if e.Done {
			t.onModelDone(e.Turn, e.Gen, e.Err)
			continue
		}
		t.onModelEvent(e.Turn, e.Gen, e.Ev)
	}
	clear(all)
	t.spareEvents = all
}
