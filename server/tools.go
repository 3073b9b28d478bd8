package server

import (
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

// registerTools wires the workspace methods: revert and policy/explain
// (file watching is services/fswatch's, RegisterServices).
func registerTools(s *Server, m *session.Manager) {
	Handle(s, protocol.MethodThreadRevert, m.RevertThread)
	Handle(s, protocol.MethodPolicyExplain, m.ExplainPolicy)
}
