package server

import (
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

// registerTools wires the workspace methods: revert, file watching and
// policy/explain.
func registerTools(s *Server, m *session.Manager) {
	Handle(s, protocol.MethodThreadRevert, m.RevertThread)
	Handle(s, protocol.MethodFsWatch, m.WatchFS)
	Handle(s, protocol.MethodFsUnwatch, m.UnwatchFS)
	Handle(s, protocol.MethodPolicyExplain, m.ExplainPolicy)
}
