package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
)

// JSON-RPC error codes used on the wire. The server package picks one per
// error with errors.Is on the sentinels below; nothing else chooses codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	CodeOverloaded     = -32001
)

// Sentinels that callers wrap (fmt.Errorf("...: %w", ErrX)) so the server can
// map them to a JSON-RPC code. Codex answers most domain errors with -32600;
// we do the same (protocol/codex/CORE.md §2).
var (
	// ErrInvalidRequest: a well-formed request that cannot be served
	// (unknown thread, no active turn, wrong state). Maps to -32600.
	ErrInvalidRequest = errors.New("invalid request")
	// ErrInvalidParams: params missing a required field or of the wrong
	// type. Maps to -32602. The message names the field.
	ErrInvalidParams = errors.New("invalid params")
	// ErrMethodNotFound maps to -32601.
	ErrMethodNotFound = errors.New("method not found")
	// ErrOverloaded maps to -32001 (retryable).
	ErrOverloaded = errors.New("server overloaded; retry later")
)

// Error is an error whose message goes to the client verbatim, wrapping one
// of the sentinels above for the code.
type Error struct {
	Kind error  // one of the sentinels
	Msg  string // what the client reads
	// Data, when set, is the JSON-RPC error's data (valid JSON).
	Data json.RawMessage
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

// Errorf builds an *Error of the given kind with a formatted message.
func Errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// MissingField is the -32602 error for an absent required field, worded as
// Codex words it.
func MissingField(name string) error {
	return Errorf(ErrInvalidParams, "Invalid params: missing field `%s`", name)
}

// RPCError is a JSON-RPC error object, as received from the client in answer
// to a server request.
type RPCError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }
