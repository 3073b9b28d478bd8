package autodrive

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/protocol"
)

// TestRawJSON: a decision model's answer that is not JSON still encodes
// in the log entry and the receipt (as a string); JSON stays as it is.
func TestRawJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"decision":"accept"}`, `{"decision":"accept"}`},
		{`not json {`, `"not json {"`},
		{``, ``},
	} {
		if got := string(RawJSON(json.RawMessage(tc.in))); got != tc.want {
			t.Errorf("RawJSON(%q) = %q, want %q", tc.in, got, tc.want)
		}
		e := fullauto.Entry{AtMs: 1, Event: fullauto.ModelAnsweredRequest{Answer: fullauto.RequestAnswer{Raw: RawJSON(json.RawMessage(tc.in))}}}
		if _, err := json.Marshal(e); err != nil {
			t.Errorf("the entry with the answer %q does not encode: %v", tc.in, err)
		}
	}
}

func TestRequest(t *testing.T) {
	align := func(protocol.AlignmentVerdict) string { return "aligned" }
	for _, tc := range []struct {
		req         Request
		key, reason string
		attn        protocol.AttentionKind
	}{
		{Request{Method: "item/commandExecution/requestApproval", Kind: "command", Command: "make test", Params: protocol.CommandApprovalParams{ItemID: "c1"}},
			"item/commandExecution/requestApproval\x00c1", "approve command: make test", protocol.AttentionApproval},
		{Request{Method: "item/fileChange/requestApproval", Kind: "fileChange", Paths: []string{"a", "b"}, Params: protocol.FileChangeApprovalParams{ItemID: "f"}},
			"item/fileChange/requestApproval\x00f", "approve changes to a, b", protocol.AttentionApproval},
		{Request{Method: "item/tool/requestUserInput", Kind: "question", Params: protocol.ToolRequestUserInputParams{ItemID: "q", Questions: []protocol.UserInputQuestion{{Question: "which?"}}}},
			"item/tool/requestUserInput\x00q", "answer: which?", protocol.AttentionQuestion},
		{Request{Method: "x/y", Kind: "command", Params: protocol.CommandApprovalParams{ItemID: "c"}, Alignment: &protocol.AlignmentVerdict{}},
			"x/y\x00c", "aligned", protocol.AttentionApproval},
		{Request{Method: "x/z"}, "x/z\x00", "answer x/z", protocol.AttentionApproval},
	} {
		if got := tc.req.Key(); got != tc.key {
			t.Errorf("Key(%s) = %q, want %q", tc.req.Method, got, tc.key)
		}
		if got := tc.req.Reason(align); got != tc.reason {
			t.Errorf("Reason(%s) = %q, want %q", tc.req.Method, got, tc.reason)
		}
		if got := AttentionKind(tc.req.Kind); got != tc.attn {
			t.Errorf("AttentionKind(%q) = %q, want %q", tc.req.Kind, got, tc.attn)
		}
	}
	long := Request{Method: "m", Command: string(make([]byte, 300)), Params: protocol.CommandApprovalParams{}}
	if r := long.Reason(align); len(r) != len("approve command: ")+200 {
		t.Errorf("Reason(long command) is %d bytes, want the command clipped to 200", len(r))
	}
	a := Request{Kind: "command", Command: "rm x", Paths: []string{"p"}, Rule: "prompt", RuleName: "r", Sandboxed: true, InsideWorkspace: true}.Approval()
	if a.Kind != "command" || a.Command != "rm x" || a.RuleDecision != "prompt" || a.Rule != "r" || !a.Sandboxed || !a.InsideWritableRoots || len(a.Paths) != 1 {
		t.Errorf("Approval() = %+v", a)
	}
}

func TestDeclined(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		err  error
		want bool
	}{
		{`{"decision":"decline"}`, nil, true},
		{`{"decision":"cancel"}`, nil, true},
		{`{"decision":"accept"}`, nil, false},
		{`not json`, nil, false},
		{`{"decision":"decline"}`, errors.New("gone"), false},
	} {
		if got := Declined(json.RawMessage(tc.raw), tc.err); got != tc.want {
			t.Errorf("Declined(%s, %v) = %t, want %t", tc.raw, tc.err, got, tc.want)
		}
	}
	if got := string(DecisionJSON(protocol.DecisionAccept)); got != `{"decision":"accept"}` {
		t.Errorf("DecisionJSON(accept) = %s", got)
	}
}
