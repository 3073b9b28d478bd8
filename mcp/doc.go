// Package mcp is apserver's client of Model Context Protocol servers, an
// adapter over the official Go SDK (github.com/modelcontextprotocol/go-sdk):
// it connects to a configured server over stdio (a child process) or
// streamable HTTP, lists its tools and resources, calls a tool, reads a
// resource, and passes what the server asks of the client (elicitations,
// progress) to callbacks. It translates and decides nothing: which tools
// the model sees, when to ask for approval and what the client is told
// belong to session.
//
// A Pool holds one connection per configured server, shared by all
// threads. A server is started the first time something needs it (Tools,
// Call, ReadResource); a server that failed or exited is started again on
// the next use, but not before a backoff that doubles with each failure in
// a row (1 s up to 1 min). A stdio server's stderr goes to the log line by
// line, never to apserver's stdout; the process is in its own process
// group and receives SIGKILL if apserver dies, and Close stops every
// server.
//
// mcp imports the SDK and the standard library only; it must not import
// session, server, store or config.
package mcp
