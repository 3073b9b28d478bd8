package server

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/apserver/apserver/protocol"
)

// Encoding. Every function appends one complete line ending in '\n'.

// lineBuf is one outgoing line. It is pooled; the writer returns it.
type lineBuf struct {
	b   []byte
	enc *json.Encoder // writes to this lineBuf
}

func (lb *lineBuf) Write(p []byte) (int, error) {
	lb.b = append(lb.b, p...)
	return len(p), nil
}

var linePool = sync.Pool{New: func() any {
	lb := &lineBuf{b: make([]byte, 0, 512)}
	lb.enc = json.NewEncoder(lb)
	lb.enc.SetEscapeHTML(false)
	return lb
}}

func getLine() *lineBuf {
	lb := linePool.Get().(*lineBuf)
	lb.b = lb.b[:0]
	return lb
}

func putLine(lb *lineBuf) {
	if cap(lb.b) <= keepLineCap {
		linePool.Put(lb)
	}
}

// appendJSON appends the compact JSON encoding of v. On error lb is unchanged.
func (lb *lineBuf) appendJSON(v any) error {
	n := len(lb.b)
	if err := lb.enc.Encode(v); err != nil {
		lb.b = lb.b[:n]
		return err
	}
	lb.b = lb.b[:len(lb.b)-1] // Encode ends with '\n'
	return nil
}

// appendNotification appends {"method":…,"params":…,"emittedAtMs":…}.
// params nil is omitted.
func (lb *lineBuf) appendNotification(method string, params any) error {
	lb.b = append(lb.b, `{"method":`...)
	lb.b = appendString(lb.b, method)
	if params != nil {
		lb.b = append(lb.b, `,"params":`...)
		if err := lb.appendJSON(params); err != nil {
			return fmt.Errorf("encoding %s params: %w", method, err)
		}
	}
	lb.b = append(lb.b, `,"emittedAtMs":`...)
	lb.b = strconv.AppendInt(lb.b, time.Now().UnixMilli(), 10)
	lb.b = append(lb.b, '}', '\n')
	return nil
}

// largeNotification encodes an item notification whose item carries a
// long string (a pasted message, an answer cut at its cap, a command's
// output) without copying the string: the line is a head, the params
// (protocol.Large, escaped by the writer straight into the output) and a
// tail, byte for byte what appendNotification writes. ok is false for
// any other notification, which appendNotification encodes.
func largeNotification(method string, params any) (it outItem, ok bool) {
	switch params.(type) {
	case protocol.ItemStartedNotification, protocol.ItemCompletedNotification:
	default:
		return outItem{}, false
	}
	l, ok, err := protocol.MarshalLarge(params, false) // as lineBuf's encoder: no HTML escaping
	if err != nil || !ok {
		return outItem{}, false // the ordinary encoding says what is wrong
	}
	lb := getLine()
	lb.b = append(lb.b, `{"method":`...)
	lb.b = appendString(lb.b, method)
	lb.b = append(lb.b, `,"params":`...)
	tail := append([]byte(`,"emittedAtMs":`), strconv.FormatInt(time.Now().UnixMilli(), 10)...)
	tail = append(tail, '}', '\n')
	return outItem{lb: lb, large: l, tail: tail}, true
}

// appendCall appends a server request {"id":N,"method":…,"params":…}.
func (lb *lineBuf) appendCall(id jsonrpc2.ID, method string, params any) error {
	lb.b = append(lb.b, `{"id":`...)
	lb.b = appendID(lb.b, id)
	lb.b = append(lb.b, `,"method":`...)
	lb.b = appendString(lb.b, method)
	if params != nil {
		lb.b = append(lb.b, `,"params":`...)
		if err := lb.appendJSON(params); err != nil {
			return fmt.Errorf("encoding %s params: %w", method, err)
		}
	}
	lb.b = append(lb.b, '}', '\n')
	return nil
}

// appendResult appends {"id":…,"result":…}.
func (lb *lineBuf) appendResult(id jsonrpc2.ID, result any) error {
	lb.b = append(lb.b, `{"id":`...)
	lb.b = appendID(lb.b, id)
	lb.b = append(lb.b, `,"result":`...)
	if err := lb.appendJSON(result); err != nil {
		return err
	}
	lb.b = append(lb.b, '}', '\n')
	return nil
}

// appendError appends {"id":…,"error":{"code":…,"message":…,"data":…}}; id
// nil is null, data nil (or not valid JSON) is omitted.
func (lb *lineBuf) appendError(id *jsonrpc2.ID, code int64, msg string, data json.RawMessage) {
	lb.b = append(lb.b, `{"id":`...)
	if id == nil {
		lb.b = append(lb.b, "null"...)
	} else {
		lb.b = appendID(lb.b, *id)
	}
	lb.b = append(lb.b, `,"error":{"code":`...)
	lb.b = strconv.AppendInt(lb.b, code, 10)
	lb.b = append(lb.b, `,"message":`...)
	lb.b = appendString(lb.b, msg)
	if data != nil {
		lb.b = append(lb.b, `,"data":`...)
		if lb.appendJSON(data) != nil {
			lb.b = lb.b[:len(lb.b)-len(`,"data":`)]
		}
	}
	lb.b = append(lb.b, '}', '}', '\n')
}

func (lb *lineBuf) appendRequest(r *jsonrpc2.Request) error {
	var params any
	if r.Params != nil {
		params = *r.Params
	}
	if r.Notif {
		return lb.appendNotification(r.Method, params)
	}
	return lb.appendCall(r.ID, r.Method, params)
}

func (lb *lineBuf) appendResponse(r *jsonrpc2.Response) error {
	if r.Error != nil {
		var data json.RawMessage
		if r.Error.Data != nil {
			data = *r.Error.Data
		}
		lb.appendError(&r.ID, r.Error.Code, r.Error.Message, data)
		return nil
	}
	var result any
	if r.Result != nil {
		result = *r.Result
	}
	return lb.appendResult(r.ID, result)
}

// appendMessage appends the canonical line for m: only the members that
// define it, raw values verbatim. stamp adds emittedAtMs to notifications.
func appendMessage(b []byte, m message, stamp bool) []byte {
	b = append(b, '{')
	switch m.kind {
	case kindRequest, kindResponse:
		b = append(b, `"id":`...)
		b = appendID(b, m.id)
		if m.kind == kindRequest {
			b = append(b, ',')
		}
	}
	switch m.kind {
	case kindRequest, kindNotification:
		b = append(b, `"method":`...)
		b = appendString(b, m.method)
		if m.params != nil {
			b = append(b, `,"params":`...)
			b = append(b, m.params...)
		}
		if stamp && m.kind == kindNotification {
			b = append(b, `,"emittedAtMs":`...)
			b = strconv.AppendInt(b, time.Now().UnixMilli(), 10)
		}
	case kindResponse:
		if m.errObj != nil {
			b = append(b, `,"error":`...)
			b = append(b, m.errObj...)
		} else {
			b = append(b, `,"result":`...)
			b = append(b, m.result...)
		}
	}
	return append(b, '}', '\n')
}

func appendID(b []byte, id jsonrpc2.ID) []byte {
	if id.IsString {
		return appendString(b, id.Str)
	}
	return strconv.AppendInt(b, int64(id.Num), 10)
}

// appendString appends s as a JSON string, as encoding/json writes it
// without HTML escaping (protocol.AppendJSONString).
func appendString(b []byte, s string) []byte { return protocol.AppendJSONString(b, s) }
