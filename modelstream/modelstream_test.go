package modelstream

import (
	"context"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/apserver/apserver/model"
)

// TestQueueBounded: the model goroutine waits once MaxQueuedText bytes
// wait for the thread, goes on when the thread takes them, gives up when
// its stream ends, and never waits with the final (done) event.
func TestQueueBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := NewQueue[int]()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		delta := Event[int]{Ev: model.Event{Kind: model.EvTextDelta, Text: strings.Repeat("x", 1<<10)}}
		var pushed atomic.Int64
		go func() {
			for q.Push(ctx, delta) {
				pushed.Add(1)
			}
		}()
		synctest.Wait()
		want := int64(MaxQueuedText >> 10)
		if n := pushed.Load(); n != want {
			t.Fatalf("pushed %d deltas before waiting, want %d (%d bytes)", n, want, MaxQueuedText)
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
