package server

import (
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

// registerThreadOps wires thread/delete, thread/metadata/update,
// thread/shellCommand, thread/settings/update and review/start.
func registerThreadOps(s *Server, m *session.Manager) {
	Handle(s, protocol.MethodThreadDelete, m.DeleteThread)
	Handle(s, protocol.MethodThreadMetadataUpdate, m.UpdateThreadMetadata)
	Handle(s, protocol.MethodThreadShellCommand, m.ShellCommand)
	Handle(s, protocol.MethodReviewStart, m.StartReview)
	Handle(s, protocol.MethodThreadSettingsUpdate, checked(m.UpdateThreadSettings, func(p *protocol.ThreadSettingsUpdateParams) error {
		return m.ValidateTurnStart(p.TurnStart())
	}))
}
