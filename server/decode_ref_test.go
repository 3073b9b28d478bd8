package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/apserver/apserver/protocol"
)

// FuzzDecodeLineSame: decodeLine, which reads the members of a line
// without copying them, decodes every line as the map-based decoder it
// replaced did (decodeLineRef, kept here as the reference).
func FuzzDecodeLineSame(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			f.Add(line)
		}
	}
	for _, s := range []string{
		`{"id":1,"method":"a","params":{"x":[1,{"y":"}\"]"}]}}`,
		`{ "id" : 2 , "method" : "b" , "params" : [ 1 , 2 ] }`,
		`{"\u0069d":3,"m\u0065thod":"c","params":"p"}`,
		`{"id":1,"id":2,"method":"a","method":"b","params":1,"params":{"z":null}}`,
		`{"id":1,"result":{"a":"\\"},"error":null}`,
		`{"id":"x\"y","error":{"code":1}}`,
		`{"method":"a","params":{"s":"é\u2028\ud800"}}`,
		`{"id":1,"method":"a","params":-1.5e3}`,
		`{"id":1,"method":"a","params":true}`,
		`{}`,
		`{"id":1,`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		line = trimSpace(line)
		if len(line) == 0 {
			return
		}
		m, bad := decodeLine(line)
		wm, wbad := decodeLineRef(line)
		if !reflect.DeepEqual(bad, wbad) {
			t.Fatalf("decodeLine(%q) = bad %+v, want %+v", line, bad, wbad)
		}
		if !reflect.DeepEqual(m, wm) {
			t.Fatalf("decodeLine(%q) = %+v, want %+v", line, m, wm)
		}
		// detach copies: the message no longer shares the line's memory.
		m.detach()
		for i := range line {
			line[i] = 'X'
		}
		if !reflect.DeepEqual(m, wm) {
			t.Fatalf("after detach and overwriting the line, %+v, want %+v", m, wm)
		}
	})
}

// decodeLineRef is the map-based decodeLine this package had before.
func decodeLineRef(line []byte) (message, *badLine) {
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
