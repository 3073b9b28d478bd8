package server

import (
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

// registerThreadOps wires thread/delete, thread/metadata/update and
// thread/shellCommand.
func registerThreadOps(s *Server, m *session.Manager) {
	Handle(s, protocol.MethodThreadDelete, m.DeleteThread)
	Handle(s, protocol.MethodThreadMetadataUpdate, m.UpdateThreadMetadata)
	Handle(s, protocol.MethodThreadShellCommand, m.ShellCommand)
}
