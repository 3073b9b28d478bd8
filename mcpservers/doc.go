// Package mcpservers owns the configured MCP servers beside the threads:
// one pool of connections (package mcp) every thread shares, built from
// the configuration (a stdio server's environment, an HTTP server's
// headers), the startup notifications, and the methods a client calls
// about the servers themselves (mcpServerStatus/list, mcpServer/tool/call,
// mcpServer/resource/read, config/mcpServer/reload), which server
// registers. The tools' names as a model sees them and when a call needs
// approval are package mcptool's rules; a thread's calls and their items
// are session's (session/mcptools.go).
//
// It is a leaf: it imports config, mcp, protocol and session/port's
// types, never session.
package mcpservers
