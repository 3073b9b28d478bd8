// Package mcptool decides what the model and the client see of an MCP
// server's tools (docs/mcp.md): Codex's mcp__SERVER__TOOL names, a
// provider-safe parameters schema, when a call needs approval (Codex's
// rule over the approval mode and the tool's annotations), the approval
// request and how its answer reads, a server's elicitation forwarded and
// its answer read, and a result cut to its output limit.
//
// It decides without effects: values in, values out, no clock and no
// I/O. The mcp package connects and calls; session asks the client and
// records the items (session/mcptools.go).
package mcptool
