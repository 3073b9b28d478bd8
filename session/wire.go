package session

import (
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/threadwire"
)

// StreamedResult is the answer of a thread/resume, thread/fork or
// thread/read that carries a stored thread's turns, streamed by the
// server (threadwire.StreamedResult).
type StreamedResult = threadwire.StreamedResult

// wireThread renders a store row as a protocol Thread (turns empty).
func (m *Manager) wireThread(meta store.Thread, status protocol.ThreadStatus) protocol.Thread {
	return threadwire.Thread(meta, status, m.opts.Version)
}
