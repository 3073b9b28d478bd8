package session

import "github.com/apserver/apserver/autodrive"

// decisionModel returns the configured decision model (the config's
// "decision" role, autodrive.DecisionModel), or nil.
func (m *Manager) decisionModel() *autodrive.DecisionModel {
	if _, ok := m.opts.Config.Roles[autodrive.DecisionRole]; !ok {
		return nil
	}
	name, prov, err := m.opts.Config.ResolveModel(autodrive.DecisionRole, "")
	if err != nil {
		m.log.Warn("decision model unavailable", "err", err)
		return nil
	}
	return &autodrive.DecisionModel{Name: name, Client: m.modelClient(prov), Stream: m.sched.Stream}
}
