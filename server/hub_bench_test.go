package server

import (
	"io"
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

// notifyVia sends a thread's notification the way the session does: with
// the thread id when the client takes it.
func notifyVia(c session.Client, threadID, method string, params any) {
	if rc, ok := c.(interface {
		NotifyThread(threadID, method string, params any)
	}); ok {
		rc.NotifyThread(threadID, method, params)
		return
	}
	c.Notify(method, params)
}

// BenchmarkHubNotify is the socket hot path: one agent-message delta to a
// hub of four initialized connections, three of them following the thread.
func BenchmarkHubNotify(b *testing.B) {
	h := NewHub(nil)
	for i := range 4 {
		s := New(strings.NewReader(""), io.Discard, Options{Hub: h})
		s.state.Store(&connState{})
		h.attach(s)
		if i > 0 {
			h.mark(s, "thread-1")
		}
	}
	c := h.Client()
	delta := protocol.DeltaNotification{ThreadID: "thread-1", TurnID: "turn-1", ItemID: "item-1",
		Delta: strings.Repeat("word ", 8)}
	b.ReportAllocs()
	for b.Loop() {
		notifyVia(c, "thread-1", protocol.NotifyAgentMessageDelta, delta)
	}
}
