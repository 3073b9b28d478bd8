package model_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/model/scripted"
)

const testPatch = "*** Begin Patch\n*** Add File: a.txt\n+hello \"quoted\"\n*** End Patch\n"

// TestFreeformToolBothWires: a free-form tool is a Responses custom tool
// and a one-string-parameter function on Chat; either way the call comes
// back with Custom set and the raw text, and the history sends it back in
// the wire's own shape.
func TestFreeformToolBothWires(t *testing.T) {
	for _, wire := range []model.Wire{model.WireResponses, model.WireChat} {
		t.Run(string(wire), func(t *testing.T) {
			srv, err := scripted.Start(scripted.Script{Default: []scripted.Step{{
				ToolCalls: []scripted.ToolCall{{Name: "apply_patch", Input: testPatch, CallID: "call_p"}},
			}}})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			c := model.NewClient(model.Provider{Name: "s", BaseURL: srv.URL(), Wire: wire, IdleTimeout: 5 * time.Second}, nil)
			req := model.Request{
				Model: "m",
				Input: []model.Entry{{Kind: model.EntryUser, Text: "patch it"}},
				Tools: []model.Tool{{Name: "apply_patch", Description: "edit files", Freeform: &model.Freeform{Syntax: "lark", Definition: "start: /.+/s"}}},
			}
			var calls []model.ToolCall
			err = c.Stream(context.Background(), req, func(ev model.Event) {
				if ev.Kind == model.EvToolCall {
					calls = append(calls, ev.Call)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(calls) != 1 || !calls[0].Custom || calls[0].Name != "apply_patch" || calls[0].Arguments != testPatch || calls[0].CallID != "call_p" {
				t.Fatalf("calls = %+v", calls)
			}
			body := string(srv.Requests()[0].Body)
			wantTool := `"type":"custom"`
			if wire == model.WireChat {
				wantTool = `"required":["input"]`
			}
			if !strings.Contains(body, wantTool) {
				t.Errorf("request does not advertise the tool as %s: %s", wantTool, body)
			}

			req.Input = append(req.Input,
				model.Entry{Kind: model.EntryToolCall, CallID: "call_p", Name: "apply_patch", Arguments: testPatch, Custom: true},
				model.Entry{Kind: model.EntryToolOutput, CallID: "call_p", Output: "Done!", Custom: true})
			if err := c.Stream(context.Background(), req, func(model.Event) {}); err != nil {
				t.Fatal(err)
			}
			body = string(srv.Requests()[1].Body)
			want := []string{`"type":"custom_tool_call"`, `"type":"custom_tool_call_output"`, `"input":"*** Begin Patch`}
			if wire == model.WireChat {
				want = []string{`"arguments":"{\"input\":\"*** Begin Patch`, `"role":"tool"`}
			}
			for _, w := range want {
				if !strings.Contains(body, w) {
					t.Errorf("history request lacks %s: %s", w, body)
				}
			}
		})
	}
}
