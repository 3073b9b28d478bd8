package server

import (
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

// registerCommandExec wires command/exec and its write, resize and
// terminate. Behind a Hub the process ids are the connection's (hub.go
// scopeID), output deltas go to that connection only, and its processes
// are terminated when it closes.
func registerCommandExec(s *Server, m *session.Manager) {
	Handle(s, protocol.MethodCommandExec, m.CommandExec)
	Handle(s, protocol.MethodCommandExecWrite, m.CommandExecWrite)
	Handle(s, protocol.MethodCommandExecResize, m.CommandExecResize)
	Handle(s, protocol.MethodCommandExecTerminate, m.CommandExecTerminate)
}
