package server

import (
	"context"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

// registerClientInfo wires the thread lists a Codex client such as the
// 0.169 TUI calls besides threads and turns (protocol/clientinfo.go); what
// it asks that is about no thread is services/clientinfo's
// (RegisterServices).
func registerClientInfo(s *Server, m *session.Manager) {
	Handle(s, protocol.MethodThreadLoadedList, m.ListLoadedThreads)
	Handle(s, protocol.MethodThreadTurnsList, m.ListTurns)
	Handle(s, protocol.MethodThreadItemsList, m.ListItems)
	Handle(s, protocol.MethodBackgroundTerminalList, m.ListBackgroundTerminals)
	Handle(s, protocol.MethodThreadUnsubscribe, func(_ context.Context, p protocol.ThreadIDParams, reply session.Reply) {
		switch {
		case !m.Loaded(p.ThreadID):
			reply(protocol.ThreadUnsubscribeResult{Status: "notLoaded"}, nil)
		case s.hub == nil:
			// The only connection: its subscription is the thread's
			// output itself, which stays.
			reply(protocol.ThreadUnsubscribeResult{Status: "notSubscribed"}, nil)
		case s.hub.unsubscribe(s, p.ThreadID):
			reply(protocol.ThreadUnsubscribeResult{Status: "unsubscribed"}, nil)
		default:
			reply(protocol.ThreadUnsubscribeResult{Status: "notSubscribed"}, nil)
		}
	})
}
