package server

import (
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

// registerTurn wires the turn/* methods to the session.
func registerTurn(s *Server, m *session.Manager) {
	Handle(s, protocol.MethodTurnStart, checked(m.StartTurn, func(p *protocol.TurnStartParams) error {
		return m.ValidateTurnStart(*p)
	}))
	Handle(s, protocol.MethodTurnSteer, m.SteerTurn)
	Handle(s, protocol.MethodTurnInterrupt, m.InterruptTurn)
}

// Register wires every session method into the server; the methods beside
// the threads are RegisterServices'.
func Register(s *Server, m *session.Manager) {
	registerThread(s, m)
	registerThreadOps(s, m)
	registerTurn(s, m)
	registerTools(s, m)
	registerFullAuto(s, m)
	registerClientInfo(s, m)
	registerMCP(s, m)
	registerCodex171(s, m)
}
