package modelstream

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"unsafe"

	"github.com/apserver/apserver/model"
)

// TestQueueBounded: the model goroutine waits once MaxQueuedBytes wait
// for the thread, goes on when the thread takes them, gives up when its
// stream ends, and never waits with the final (done) event. Events count
// with their size, not only their text: a flood of empty ones (a model
// endpoint is untrusted) waits as soon as a few large ones would.
func TestQueueBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   model.Event
	}{
		{"1 KiB deltas", model.Event{Kind: model.EvTextDelta, Text: strings.Repeat("x", 1<<10)}},
		{"empty deltas", model.Event{Kind: model.EvTextDelta}},
		{"tool call", model.Event{Kind: model.EvToolCall, ItemID: "fc_1", Call: model.ToolCall{CallID: "call_1", Name: "exec_command", Arguments: strings.Repeat("y", 3000)}}},
		{"reasoning", model.Event{Kind: model.EvTextDelta, Summary: []string{strings.Repeat("s", 500)}, Content: []string{strings.Repeat("c", 700)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := NewQueue[int]()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				ev := Event[int]{Ev: tc.ev}
				var pushed atomic.Int64
				go func() {
					// A queue that never waits fails the count below
					// instead of growing for ever.
					for pushed.Load() < 100_000 && q.Push(ctx, ev) {
						pushed.Add(1)
					}
				}()
				synctest.Wait()
				size := eventSize + len(tc.ev.Text) + len(tc.ev.ItemID) + len(tc.ev.Call.CallID) + len(tc.ev.Call.Name) + len(tc.ev.Call.Arguments)
				for _, s := range append(slices.Clone(tc.ev.Summary), tc.ev.Content...) {
					size += len(s)
				}
				want := int64((MaxQueuedBytes + size - 1) / size)
				if n := pushed.Load(); n != want {
					t.Fatalf("pushed %d events of %d bytes before waiting, want %d (%d bytes)", n, size, want, MaxQueuedBytes)
				}
				if !q.Push(ctx, Event[int]{Done: true}) {
					t.Fatal("the done event was refused")
				}
				if evs := q.Take(nil); int64(len(evs)) != want+1 {
					t.Fatalf("took %d events, want %d", len(evs), want+1)
				}
				synctest.Wait()
				if n := pushed.Load(); n <= want {
					t.Errorf("the producer did not go on after take (pushed %d)", n)
				}
				cancel()
				synctest.Wait() // the producer returned: push gave up on the ended stream
			})
		})
	}
}

// TestEventSize: the queue's cost of an event is no less than its size,
// whatever the turn's type, so the bound holds in memory as well.
func TestEventSize(t *testing.T) {
	for _, size := range []uintptr{unsafe.Sizeof(Event[*int]{}), unsafe.Sizeof(Event[string]{}), unsafe.Sizeof(Event[int]{})} {
		if size > eventSize {
			t.Errorf("an Event is %d bytes, more than eventSize (%d)", size, eventSize)
		}
	}
}

// TestCoalesce: runs of text deltas of one message merge; a delta of
// another item, turn or generation, another kind of event or the end of
// the stream breaks a run.
func TestCoalesce(t *testing.T) {
	d := func(turn, gen int, item, text string) Event[int] {
		return Event[int]{Turn: turn, Gen: gen, Ev: model.Event{Kind: model.EvTextDelta, ItemID: item, Text: text}}
	}
	done := Event[int]{Turn: 1, Gen: 1, Done: true}
	reasoning := Event[int]{Turn: 1, Gen: 1, Ev: model.Event{Kind: model.EvReasoningTextDelta, Text: "r"}}
	in := []Event[int]{d(1, 1, "m", "a"), d(1, 1, "m", "b"), d(1, 1, "m", "c"), d(1, 1, "n", "d"), d(1, 1, "n", "e"),
		reasoning, d(1, 1, "n", "f"), d(1, 2, "n", "g"), d(2, 2, "n", "h"), d(2, 2, "n", "i"), done, d(1, 1, "m", "j")}
	want := []Event[int]{d(1, 1, "m", "abc"), d(1, 1, "n", "de"), reasoning, d(1, 1, "n", "f"), d(1, 2, "n", "g"), d(2, 2, "n", "hi"), done, d(1, 1, "m", "j")}
	if got := Coalesce(in); !reflect.DeepEqual(got, want) {
		t.Errorf("Coalesce =\n%+v\nwant\n%+v", got, want)
	}
	if got := Coalesce([]Event[int]{}); len(got) != 0 {
		t.Errorf("Coalesce(empty) = %v", got)
	}
}
