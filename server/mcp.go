package server

import (
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

// registerMCP wires the MCP server methods (protocol/mcp.go, docs/mcp.md).
func registerMCP(s *Server, m *session.Manager) {
	Handle(s, protocol.MethodMcpServerStatusList, m.ListMcpServerStatus)
	Handle(s, protocol.MethodMcpServerToolCall, m.CallMcpTool)
	Handle(s, protocol.MethodMcpResourceRead, m.ReadMcpResource)
	Handle(s, protocol.MethodMcpServerReload, m.ReloadMcpServers)
}
