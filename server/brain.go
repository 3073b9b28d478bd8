package server

import (
	"encoding/json"

	"github.com/apserver/apserver/brains"
	"github.com/apserver/apserver/protocol"
)

// RegisterBrain wires the project brain's methods (docs/brain.md) to the
// brains service: project/decision/add|update|revoke|list,
// project/snapshot/read, project/context/preview, alignment/explain and
// project/summary/list.
// Projections an earlier process left out of date are rewritten once the
// client has sent initialized. Call it after Register.
func RegisterBrain(s *Server, svc *brains.Service) {
	handleLater(s, protocol.MethodProjectDecisionAdd, svc.AddDecision)
	handleLater(s, protocol.MethodProjectDecisionUpdate, svc.UpdateDecision)
	handleLater(s, protocol.MethodProjectDecisionRevoke, svc.RevokeDecision)
	handleLater(s, protocol.MethodProjectDecisionList, svc.ListDecisions)
	handleLater(s, protocol.MethodProjectSnapshotRead, svc.SnapshotRead)
	handleLater(s, protocol.MethodProjectContextPreview, svc.ContextPreview)
	handleLater(s, protocol.MethodAlignmentExplain, svc.Explain)
	handleLater(s, protocol.MethodProjectSummaryList, svc.ListSummaries)
	prev := s.notifHandlers[protocol.MethodInitialized]
	s.notifHandlers[protocol.MethodInitialized] = func(raw json.RawMessage) {
		if prev != nil {
			prev(raw)
		}
		go svc.Restore()
	}
}
