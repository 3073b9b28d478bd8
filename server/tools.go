package server

import (
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

// registerTools wires the workspace methods: revert (file watching and
// policy/explain are services/fswatch's and services/explain's,
// RegisterServices).
func registerTools(s *Server, m *session.Manager) {
	Handle(s, protocol.MethodThreadRevert, m.RevertThread)
}
