package server

import "github.com/apserver/apserver/protocol"

// checkDynamicTools refuses thread/start's dynamicTools from a client that
// did not opt into the experimental API, as Codex does.
func (s *Server) checkDynamicTools(p *protocol.ThreadStartParams) error {
	if len(p.DynamicTools) == 0 {
		return nil
	}
	if ip, ok := s.Initialized(); ok && ip.Capabilities != nil && ip.Capabilities.ExperimentalAPI {
		return nil
	}
	return protocol.Errorf(protocol.ErrInvalidRequest, "thread/start.dynamicTools requires experimentalApi capability")
}
