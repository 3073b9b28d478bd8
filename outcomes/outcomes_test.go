package outcomes

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
)

// TestHubRoutesByThread: a stream hears its own thread's outcomes, in
// order, and nothing of another thread; Publish never waits for a reader.
func TestHubRoutesByThread(t *testing.T) {
	var h Hub
	a, b := h.Watch("a"), h.Watch("b")
	defer a.Close()
	defer b.Close()
	for i := range 100 { // nobody reads yet: Publish must not block
		h.Publish(port.UsageReported{ThreadID: "a", TurnID: string(rune('0' + i%10))})
	}
	h.Publish(port.TurnEnded{ThreadID: "b", TurnID: "t"})
	h.Publish(port.TurnEnded{ThreadID: "c", TurnID: "nobody"})
	ctx := context.Background()
	for i := range 100 {
		o, err := a.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if u, ok := o.(port.UsageReported); !ok || u.TurnID != string(rune('0'+i%10)) {
			t.Fatalf("a's outcome %d = %#v", i, o)
		}
	}
	o, err := b.Next(ctx)
	if err != nil || !reflect.DeepEqual(o, port.TurnEnded{ThreadID: "b", TurnID: "t"}) {
		t.Fatalf("b.Next = %#v, %v", o, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if o, err := a.Next(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("a.Next with nothing queued and ctx ended = %#v, %v; want context.Canceled", o, err)
	}
}

// TestStreamClose: Close drops what is queued, ends a waiting Next with
// ErrClosed, and the hub forgets the stream.
func TestStreamClose(t *testing.T) {
	var h Hub
	s, s2 := h.Watch("a"), h.Watch("a")
	h.Publish(port.TurnEnded{ThreadID: "a"})
	done := make(chan error, 1)
	if _, err := s2.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	go func() { _, err := s2.Next(context.Background()); done <- err }()
	s.Close()
	s2.Close()
	if err := <-done; !errors.Is(err, port.ErrClosed) {
		t.Errorf("Next waiting across Close = %v, want ErrClosed", err)
	}
	if _, err := s.Next(context.Background()); !errors.Is(err, port.ErrClosed) {
		t.Errorf("Next after Close = %v, want ErrClosed", err)
	}
	h.Publish(port.TurnEnded{ThreadID: "a"})
	h.mu.Lock()
	n := len(h.by)
	h.mu.Unlock()
	if n != 0 {
		t.Errorf("hub keeps %d threads after their streams closed", n)
	}
}

func TestOf(t *testing.T) {
	failed := &protocol.TurnError{Message: "x"}
	item := protocol.AgentMessageItem{ID: "m", Text: "hi"}
	for _, tc := range []struct {
		method string
		params any
		want   port.Outcome
	}{
		{protocol.NotifyTurnCompleted, protocol.TurnNotification{Turn: protocol.Turn{ID: "t", Status: protocol.TurnFailed, Error: failed}},
			port.TurnEnded{ThreadID: "th", TurnID: "t", Status: protocol.TurnFailed, Error: failed}},
		{protocol.NotifyTurnStarted, protocol.TurnNotification{Turn: protocol.Turn{ID: "t"}}, nil},
		{protocol.NotifyItemCompleted, protocol.ItemCompletedNotification{TurnID: "t", Item: item},
			port.ItemCompleted{ThreadID: "th", TurnID: "t", Item: item}},
		{protocol.NotifyFullAutoStatusChanged, protocol.FullAutoStatusChangedNotification{Run: protocol.FullAutoRun{ThreadID: "th"}, State: "paused"},
			port.FullAutoChanged{ThreadID: "th", Run: protocol.FullAutoRun{ThreadID: "th", State: "paused"}}},
		{protocol.NotifyWarning, protocol.WarningNotification{Message: "w"}, nil},
	} {
		if got := Of("th", tc.method, tc.params); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Of(th, %s, %#v) = %#v, want %#v", tc.method, tc.params, got, tc.want)
		}
	}
}
