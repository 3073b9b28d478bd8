package server

import (
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

// registerMCP wires the MCP server methods (protocol/mcp.go, docs/mcp.md).
// The servers are package mcpservers', shared by every thread.
func registerMCP(s *Server, m *session.Manager) {
	srv := m.MCPServers()
	Handle(s, protocol.MethodMcpServerStatusList, srv.ListStatus)
	Handle(s, protocol.MethodMcpServerToolCall, srv.CallTool)
	Handle(s, protocol.MethodMcpResourceRead, srv.ReadResource)
	Handle(s, protocol.MethodMcpServerReload, srv.Reload)
}
