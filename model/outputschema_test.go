package model

import (
	"encoding/json"
	"testing"
)

func TestOutputSchemaOnBothWires(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"action":{"type":"string"}},"required":["action"],"additionalProperties":false}`)
	req := Request{Model: "m", Input: []Entry{{Kind: EntryUser, Text: "decide"}},
		OutputSchema: &OutputSchema{Name: "decision", Schema: schema, Strict: true}}
	tests := []struct {
		wire string
		body any
		path []string // to the format object
		typ  string
	}{
		{"responses", buildResponsesRequest(req), []string{"text", "format"}, "json_schema"},
		{"chat", buildChatRequest(req), []string{"response_format"}, "json_schema"},
	}
	for _, tc := range tests {
		b, err := json.Marshal(tc.body)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		var cur any = v
		for _, k := range tc.path {
			m, _ := cur.(map[string]any)
			cur = m[k]
		}
		f, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%s: no %v in %s", tc.wire, tc.path, b)
		}
		if f["type"] != tc.typ {
			t.Errorf("%s: format type = %v, want %s", tc.wire, f["type"], tc.typ)
		}
		js := f
		if tc.wire == "chat" {
			js, _ = f["json_schema"].(map[string]any)
		}
		if js["name"] != "decision" || js["strict"] != true {
			t.Errorf("%s: format = %v, want name decision, strict", tc.wire, f)
		}
		sch, _ := js["schema"].(map[string]any)
		if sch["type"] != "object" || sch["additionalProperties"] != false {
			t.Errorf("%s: schema = %v, want the given schema", tc.wire, js["schema"])
		}
	}
	// Without a schema neither wire sends a format.
	plain := Request{Model: "m", Input: req.Input}
	for name, body := range map[string]any{"responses": buildResponsesRequest(plain), "chat": buildChatRequest(plain)} {
		b, _ := json.Marshal(body)
		var v map[string]any
		_ = json.Unmarshal(b, &v)
		if v["text"] != nil || v["response_format"] != nil {
			t.Errorf("%s without OutputSchema: %s, want no text/response_format", name, b)
		}
	}
}
