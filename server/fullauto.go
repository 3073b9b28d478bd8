package server

import (
	"encoding/json"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

// registerFullAuto wires the full-auto methods (apserver's extension,
// docs/fullauto.md) and Codex's thread/goal/* to the session. Runs that were
// going when apserver last stopped come back once the client has sent
// initialized, so that what they re-send reaches a client that is ready.
func registerFullAuto(s *Server, m *session.Manager) {
	Handle(s, protocol.MethodFullAutoStart, m.StartFullAuto)
	Handle(s, protocol.MethodFullAutoPause, m.PauseFullAuto)
	Handle(s, protocol.MethodFullAutoResume, m.ResumeFullAuto)
	Handle(s, protocol.MethodFullAutoStop, m.StopFullAuto)
	Handle(s, protocol.MethodFullAutoStatus, m.FullAutoStatus)
	Handle(s, protocol.MethodThreadGoalSet, m.SetGoal)
	Handle(s, protocol.MethodThreadGoalGet, m.GetGoal)
	Handle(s, protocol.MethodThreadGoalClear, m.ClearGoal)
	HandleNotification(s, protocol.MethodInitialized, func(json.RawMessage) { m.RestoreFullAuto() })
}
