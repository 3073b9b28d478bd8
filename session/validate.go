package session

import (
	"github.com/apserver/apserver/paramcheck"
	"github.com/apserver/apserver/protocol"
)

// ValidateThreadSettings checks the overrides of thread/start, thread/resume
// and thread/fork against the configuration (paramcheck.ThreadSettings).
func (m *Manager) ValidateThreadSettings(s protocol.ThreadSettings) error {
	return paramcheck.ThreadSettings(&m.opts.Config, s)
}

// ValidateTurnStart checks turn/start's cwd, model, effort, summary, images
// and outputSchema against the configuration (paramcheck.TurnStart).
func (m *Manager) ValidateTurnStart(p protocol.TurnStartParams) error {
	return paramcheck.TurnStart(&m.opts.Config, p)
}
