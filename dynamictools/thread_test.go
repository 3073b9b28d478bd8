package dynamictools

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
)

func TestFromSettingsAndModelTools(t *testing.T) {
	specs := []protocol.DynamicToolSpec{
		{Name: "open_file", Description: "Opens a file", InputSchema: json.RawMessage(`{"$schema":"x","type":"object","properties":{"path":{"type":"string"}}}`)},
		{Type: "namespace", Name: "git", Tools: []protocol.DynamicToolSpec{{Name: "blame", Description: "Blames"}}},
	}
	enc, err := Encode(specs)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := FromSettings(enc)
	if err != nil || len(tools) != 2 || tools[0].Name != "open_file" || tools[1].Name != "git__blame" || tools[1].Tool != "blame" || *tools[1].Namespace != "git" {
		t.Fatalf("FromSettings = %+v, %v", tools, err)
	}
	mt := ModelTools(tools)
	if len(mt) != 2 || mt[0].Name != "open_file" || mt[0].Description != "Opens a file" || strings.Contains(string(mt[0].Parameters), "$schema") ||
		mt[1].Name != "git__blame" || string(mt[1].Parameters) != `{"type":"object","properties":{}}` {
		t.Errorf("ModelTools = %+v", mt)
	}
	if tools, err := FromSettings(""); tools != nil || err != nil {
		t.Errorf(`FromSettings("") = %v, %v; want none`, tools, err)
	}
	if _, err := FromSettings("{"); err == nil {
		t.Error("FromSettings of broken JSON succeeded")
	}
}

func TestComplete(t *testing.T) {
	tests := []struct {
		name     string
		raw      string
		callErr  error
		status   protocol.ItemStatus
		success  bool
		forModel string // contained
		failure  bool
	}{
		{"answered", `{"contentItems":[{"type":"inputText","text":"done"}],"success":true}`, nil, protocol.ItemCompleted, true, "done", false},
		{"the tool failed", `{"contentItems":[{"type":"inputText","text":"no such file"}],"success":false}`, nil, protocol.ItemFailed, false, "The tool reported a failure:\nno such file", false},
		{"unreadable answer", `{"contentItems":[{"type":"audio"}],"success":true}`, nil, protocol.ItemFailed, false, "The editor's tool open_file failed: the editor's answer has contentItems[0].type", true},
		{"call failed", ``, errors.New("the editor is gone"), protocol.ItemFailed, false, "The editor's tool open_file failed: the editor is gone", true},
	}
	for _, tc := range tests {
		item := protocol.DynamicToolCallItem{ID: "i", Status: protocol.ItemInProgress}
		out, failure := Complete(&item, "open_file", json.RawMessage(tc.raw), tc.callErr, 0)
		if item.Status != tc.status || item.Success == nil || *item.Success != tc.success || !strings.Contains(out, tc.forModel) ||
			(failure != nil) != tc.failure || item.ContentItems == nil {
			t.Errorf("%s: Complete = %q, %v; item %+v", tc.name, out, failure, item)
		}
	}
	item := protocol.DynamicToolCallItem{}
	out, _ := Complete(&item, "x", json.RawMessage(`{"contentItems":[{"type":"inputText","text":"`+strings.Repeat("a", 100)+`"}],"success":true}`), nil, 10)
	if !strings.HasPrefix(out, "aaaaaaaaaa\n…") || len(item.ContentItems[0].Text) > 80 {
		t.Errorf("Complete with limit 10 = %q, item text %q", out, item.ContentItems[0].Text)
	}
}
