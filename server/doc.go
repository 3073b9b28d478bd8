// Package server owns the editor connections: JSONL framing on stdio, JSON-RPC
// dispatch, the initialize handshake and its gating, request cancellation,
// the mapping of Go errors to JSON-RPC error codes, and server→client
// requests. It is the only user of github.com/sourcegraph/jsonrpc2.
//
// A Server is one connection. On stdio it is the session's only client;
// behind a socket (listen.go: ws:// and unix://, capability-token auth,
// browser Origins refused) each WebSocket is a Server of its own, and a Hub
// (hub.go) is the session's client, routing each thread's notifications
// and approval requests to the connections subscribed to it.
//
// It imports session (whose Client and Reply contracts it implements) and
// protocol; it must not import store or model.
//
// # Wire format
//
// One JSON object per line in both directions (protocol/codex/CORE.md §2). Outgoing messages
// never carry "jsonrpc":"2.0"; notifications carry "emittedAtMs". Incoming
// "jsonrpc" and unknown top-level fields are ignored. Ids are echoed with
// their type: a string stays a string, an integer (any int64, negative ones
// included) stays an integer.
//
// Bad input never ends the connection:
//
//   - a line that is not JSON: -32700 "Parse error: …", id null;
//   - a line over Options.MaxLineBytes: discarded up to its newline without
//     being buffered, -32600 "line exceeds N bytes", id null;
//   - JSON that is not a message (an array, a number, an object with no
//     method, result or error, a non-string method, an id that is neither a
//     string nor an int64): -32600 "Invalid request: …", with the id when
//     one can be recovered, else null;
//   - a request whose id is null or a float (1.5, 1e3): no reply, logged
//     (Codex drops these too);
//   - a response with an unusable or unknown id: no reply, logged.
//
// # Goroutines
//
// jsonrpc2's read loop reads every line (through this package's
// ObjectStream) and calls the handler for each request and notification in
// order; handlers must return at once and answer through their Reply, now or
// later from another goroutine. Responses to server→client requests are
// matched in the stream before jsonrpc2 sees them. One writer goroutine owns
// the output: every outgoing message is encoded by its caller and queued;
// order on the wire is the order of the calls.
//
// # The stream, by job
//
// stream.go is the jsonrpc2.ObjectStream and its state; read.go splits the
// input into lines (capped, without buffering an overlong one); decode.go
// turns a line into a message or says why it is not one; encode.go writes
// each outgoing message as one line (its strings through
// protocol.AppendJSONString, the one escaper of apserver's output; a test
// holds it to encoding/json's bytes and to model/scripted's copy); write.go
// is the writer goroutine and its queue.
//
// # Why jsonrpc2 stays
//
// Only jsonrpc2's read loop is used: it calls the handler for each incoming
// request and notification in order, and its ID, Request and Error types are
// the vocabulary of conn.go (in-flight requests, lanes, error codes). The
// stream keeps its own message model beside it because jsonrpc2 accepts
// lines Codex clients must be refused for (see the list above) and writes
// "jsonrpc":"2.0"; so the stream validates a line itself, hands jsonrpc2 a
// canonical re-encoding, and writes every outgoing line itself. The price is
// that re-encoding and jsonrpc2's second decode, about 20 µs a message
// (BenchmarkReadObject against next, a turn/start line, on 2 shared cores):
// nothing for an editor's request rate, so replacing a tested read loop that
// the lanes and the stdin-EOF drain are built on is not worth it. The
// params are kept out of that re-encoding: jsonrpc2 decodes params into
// maps and encodes them again, several copies of a 10 MiB message, so
// ReadObject keeps them aside and the handler takes them (takeParams).
//
// # Long strings
//
// A line's members are slices of the line, not copies (decode.go). An
// item notification whose item carries a long string (protocol.Large) is
// queued as a head, the params and a tail, and the writer escapes the
// long strings straight into its buffer (encode.go largeNotification), as
// it copies a streamed result's body.
package server
