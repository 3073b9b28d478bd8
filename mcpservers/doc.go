// Package mcpservers owns the configured MCP servers beside the threads:
// one pool of connections (package mcp) every thread shares, built from
// the configuration (a stdio server's environment, an HTTP server's
// headers), the startup notifications, and the methods a client calls
// about the servers themselves (mcpServerStatus/list, mcpServer/tool/call,
// mcpServer/resource/read, config/mcpServer/reload), which server
// registers. For the threads it lists the tools under their model names
// (Tools, Lookup), keeps the tools a thread's user allowed for the session
// (Approve), and calls a tool with the server's elicitations routed to the
// call in flight (Call). The names and when a call needs approval are
// package mcptool's rules; a thread's approvals asked, elicitations
// forwarded and items are session's (session/mcptools.go).
//
// It is a leaf: it imports config, mcp, mcptool, model (a tool as the
// model is offered it), protocol and session/port's types, never session.
package mcpservers
