package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/apserver/apserver/protocol"
)

// Decoding: one incoming line into a message, or why it is not one.

type msgKind uint8

const (
	kindRequest msgKind = iota + 1
	kindNotification
	kindResponse
)

// message is one decoded incoming line.
type message struct {
	kind   msgKind
	id     jsonrpc2.ID     // request and response; an int64 id n is ID{Num: uint64(n)}
	method string          // request and notification
	params json.RawMessage // request and notification; nil when absent
	result json.RawMessage // success response
	errObj json.RawMessage // error response: the raw error object
}

// badLine is a line that is not a message.
type badLine struct {
	code    int64
	id      *jsonrpc2.ID // nil: null
	msg     string
	noReply bool // log and drop
}

type idKind uint8

const (
	idAbsent idKind = iota
	idValid
	idNull
	idFloat
	idInvalid
)

// decodeLine classifies one non-empty, trimmed line. The message it returns
// shares no memory with line.
func decodeLine(line []byte) (message, *badLine) {
	if line[0] != '{' {
		var raw json.RawMessage
		if err := json.Unmarshal(line, &raw); err != nil {
			return message{}, &badLine{code: protocol.CodeParseError, msg: "Parse error: " + err.Error()}
		}
		return message{}, invalid(nil, "expected a JSON object, got %s", jsonKind(line))
	}
	var f map[string]json.RawMessage
	if err := json.Unmarshal(line, &f); err != nil {
		return message{}, &badLine{code: protocol.CodeParseError, msg: "Parse error: " + err.Error()}
	}

	var id jsonrpc2.ID
	ik := idAbsent
	if raw, ok := f["id"]; ok {
		id, ik = parseID(raw)
	}
	var known *jsonrpc2.ID
	if ik == idValid {
		known = &id
	}

	if raw, ok := f["method"]; ok {
		var method string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &method) != nil {
			return message{}, invalid(known, "method must be a string")
		}
		m := message{method: method, params: f["params"]}
		switch ik {
		case idAbsent:
			m.kind = kindNotification
			return m, nil
		case idValid:
			m.kind = kindRequest
			m.id = id
			return m, nil
		case idNull:
			return message{}, &badLine{noReply: true, msg: fmt.Sprintf(droppedIDMsg, "null")}
		case idFloat:
			return message{}, &badLine{noReply: true, msg: fmt.Sprintf(droppedIDMsg, "float")}
		default:
			return message{}, invalid(nil, "id must be a string or a 64-bit integer")
		}
	}

	result, hasResult := f["result"]
	errObj, hasErr := f["error"]
	if hasErr && string(errObj) == "null" {
		hasErr = false
	}
	if hasResult || hasErr {
		if ik != idValid {
			return message{}, &badLine{noReply: true, msg: "response without a usable id dropped"}
		}
		m := message{kind: kindResponse, id: id}
		if hasErr {
			m.errObj = errObj
		} else {
			m.result = result
		}
		return m, nil
	}
	return message{}, invalid(known, "expected a method, result or error")
}

func invalid(id *jsonrpc2.ID, format string, args ...any) *badLine {
	return &badLine{code: protocol.CodeInvalidRequest, id: id, msg: "Invalid request: " + fmt.Sprintf(format, args...)}
}

// parseID decodes a raw id. Integers must fit in an int64 and are stored as
// ID{Num: uint64(n)}, so negative ids survive the round trip.
func parseID(raw json.RawMessage) (jsonrpc2.ID, idKind) {
	if len(raw) == 0 {
		return jsonrpc2.ID{}, idAbsent
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return jsonrpc2.ID{}, idInvalid
		}
		return jsonrpc2.ID{Str: s, IsString: true}, idValid
	case c == 'n':
		return jsonrpc2.ID{}, idNull
	case c == '-' || ('0' <= c && c <= '9'):
		if bytes.ContainsAny(raw, ".eE") {
			return jsonrpc2.ID{}, idFloat
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return jsonrpc2.ID{}, idInvalid
		}
		return jsonrpc2.ID{Num: uint64(n)}, idValid
	}
	return jsonrpc2.ID{}, idInvalid
}

// idString formats an id for logs.
func idString(id jsonrpc2.ID) string {
	if id.IsString {
		return strconv.Quote(id.Str)
	}
	return strconv.FormatInt(int64(id.Num), 10)
}

// jsonKind names the kind of a valid JSON value.
func jsonKind(raw []byte) string {
	raw = trimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func truncate(line []byte) string {
	const max = 200
	if len(line) > max {
		return string(line[:max]) + "…"
	}
	return string(line)
}
