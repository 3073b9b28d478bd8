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

// decodeLine classifies one non-empty, trimmed line. The raw values of the
// message it returns (params, result, error) are slices of line, not
// copies: a 10 MiB turn/start is not copied on its way to its handler. A
// caller that reuses line's memory copies them first (message.detach).
func decodeLine(line []byte) (message, *badLine) {
	if line[0] != '{' {
		var raw json.RawMessage
		if err := json.Unmarshal(line, &raw); err != nil {
			return message{}, &badLine{code: protocol.CodeParseError, msg: "Parse error: " + err.Error()}
		}
		return message{}, invalid(nil, "expected a JSON object, got %s", jsonKind(line))
	}
	if !json.Valid(line) {
		var f map[string]json.RawMessage
		err := json.Unmarshal(line, &f) // for encoding/json's description of the error
		if err == nil {
			err = fmt.Errorf("invalid JSON")
		}
		return message{}, &badLine{code: protocol.CodeParseError, msg: "Parse error: " + err.Error()}
	}
	f := topMembers(line)

	var id jsonrpc2.ID
	ik := idAbsent
	if raw, ok := f.get("id"); ok {
		id, ik = parseID(raw)
	}
	var known *jsonrpc2.ID
	if ik == idValid {
		known = &id
	}

	if raw, ok := f.get("method"); ok {
		var method string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &method) != nil {
			return message{}, invalid(known, "method must be a string")
		}
		m := message{method: method, params: f.params.raw}
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

	result, hasResult := f.get("result")
	errObj, hasErr := f.get("error")
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

// detach makes m's raw values copies, so that it outlives the buffer it
// was decoded from.
func (m *message) detach() {
	clone := func(b json.RawMessage) json.RawMessage {
		if b == nil {
			return nil
		}
		return append(json.RawMessage{}, b...)
	}
	m.params, m.result, m.errObj = clone(m.params), clone(m.result), clone(m.errObj)
}

// members are the members of a top-level object that a message reads,
// each the raw value (a slice of the line) and whether it was present.
type members struct {
	id, method, params, result, error rawMember
}

type rawMember struct {
	raw json.RawMessage
	ok  bool
}

// get mirrors reading a map[string]json.RawMessage of the object.
func (f *members) get(key string) (json.RawMessage, bool) {
	var m rawMember
	switch key {
	case "id":
		m = f.id
	case "method":
		m = f.method
	case "params":
		m = f.params
	case "result":
		m = f.result
	case "error":
		m = f.error
	}
	return m.raw, m.ok
}

// topMembers reads the members of the valid JSON object line without
// copying their values; as in a map, a later duplicate wins.
func topMembers(line []byte) *members {
	f := &members{}
	i := skipSpace(line, 1)
	for i < len(line) && line[i] != '}' {
		end := skipString(line, i)
		key := line[i+1 : end-1]
		var name string
		if bytes.IndexByte(key, '\\') >= 0 {
			_ = json.Unmarshal(line[i:end], &name)
		} else {
			name = string(key)
		}
		i = skipSpace(line, end)
		i = skipSpace(line, i+1) // the ':'
		vend := skipValue(line, i)
		v := rawMember{raw: json.RawMessage(line[i:vend:vend]), ok: true}
		switch name {
		case "id":
			f.id = v
		case "method":
			f.method = v
		case "params":
			f.params = v
		case "result":
			f.result = v
		case "error":
			f.error = v
		}
		i = skipSpace(line, vend)
		if i < len(line) && line[i] == ',' {
			i = skipSpace(line, i+1)
		}
	}
	return f
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the end of the valid JSON string at b[i] ('"').
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the end of the valid JSON value at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(b)
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
		i++
	}
	return len(b)
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
