// Package model owns apserver's streaming clients for OpenAI-compatible
// model servers: the Responses wire (POST /responses) and the Chat
// Completions wire (POST /chat/completions), both spoken through go-openai.
//
// It turns one Request (instructions, history entries, tools) into one HTTP
// streaming request, parses the server-sent events into a small set of
// wire-independent Events, and owns the transport policy around that:
// retries with exponential backoff (honouring Retry-After) while nothing has
// been emitted yet, the per-attempt idle timeout, the caps on one
// response's output and wall time (bounds.go), and the mapping of every
// failure to a typed *Error. Memory stays flat while a response streams:
// message text is not kept here (the caller has the deltas), and the
// stream reader sees only data lines, none longer than the output allows.
//
// model knows nothing about threads, turns, storage or configuration files:
// it must not import session, server, store, tools or config. Callers build
// a Provider themselves (config.ResolveModel does that for apserver).
package model
