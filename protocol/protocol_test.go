package protocol_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
)

func sp(s string) *string { return &s }
func ip(i int) *int       { return &i }
func i64p(i int64) *int64 { return &i }

func TestThreadItemRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typ  string
		item protocol.ThreadItem
	}{
		{"userMessage", protocol.UserMessageItem{ID: "u1", ClientID: sp("c1"), Content: []protocol.UserInput{{Type: "text", Text: "hello"}, {Type: "localImage", Path: "/tmp/a.png"}}}},
		{"agentMessage", protocol.AgentMessageItem{ID: "a1", Text: "hi there", Phase: sp("final")}},
		{"reasoning", protocol.ReasoningItem{ID: "r1", Summary: []string{"s1", "s2"}, Content: []string{"c"}}},
		{"plan", protocol.PlanItem{ID: "p1", Text: "1. do it"}},
		{"commandExecution", protocol.CommandExecutionItem{
			ID: "x1", Command: "echo hi", Cwd: "/tmp", Source: "agent", Status: protocol.ItemCompleted,
			CommandActions:   []protocol.CommandAction{{Type: "unknown", Command: "echo hi"}},
			AggregatedOutput: sp("hi\n"), ExitCode: ip(0), DurationMs: i64p(12),
		}},
		{"fileChange", protocol.FileChangeItem{ID: "f1", Status: protocol.ItemCompleted, Changes: []protocol.FileUpdateChange{
			{Path: "a.go", Kind: protocol.PatchChangeKind{Type: "update", MovePath: sp("b.go")}, Diff: "@@ -1 +1 @@\n-a\n+b\n"},
		}}},
		{"contextCompaction", protocol.ContextCompactionItem{ID: "cc1"}},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			t.Parallel()
			if got := tt.item.ItemType(); got != tt.typ {
				t.Errorf("ItemType() = %q, want %q", got, tt.typ)
			}
			b, err := json.Marshal(tt.item)
			if err != nil {
				t.Fatalf("Marshal(%#v): %v", tt.item, err)
			}
			if !strings.HasPrefix(string(b), `{"type":"`+tt.typ+`",`) {
				t.Errorf("Marshal(%T) = %s, want leading type %q", tt.item, b, tt.typ)
			}
			var head map[string]any
			if err := json.Unmarshal(b, &head); err != nil {
				t.Fatalf("Marshal(%T) produced invalid JSON %s: %v", tt.item, b, err)
			}
			if head["type"] != tt.typ || head["id"] != tt.item.ItemID() {
				t.Errorf("Marshal(%T) type/id = %v/%v, want %v/%v", tt.item, head["type"], head["id"], tt.typ, tt.item.ItemID())
			}
			got, err := protocol.UnmarshalThreadItem(b)
			if err != nil {
				t.Fatalf("UnmarshalThreadItem(%s): %v", b, err)
			}
			if !reflect.DeepEqual(got, tt.item) {
				t.Errorf("UnmarshalThreadItem(%s) = %#v, want %#v", b, got, tt.item)
			}
		})
	}
}

func TestThreadItemNilSlicesMarshalAsArrays(t *testing.T) {
	t.Parallel()
	tests := []struct {
		item  protocol.ThreadItem
		field string
	}{
		{protocol.UserMessageItem{ID: "u"}, "content"},
		{protocol.ReasoningItem{ID: "r"}, "summary"},
		{protocol.ReasoningItem{ID: "r"}, "content"},
		{protocol.CommandExecutionItem{ID: "c"}, "commandActions"},
		{protocol.FileChangeItem{ID: "f"}, "changes"},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.item)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if got := string(m[tt.field]); got != "[]" {
			t.Errorf("Marshal(%T).%s = %s, want []", tt.item, tt.field, got)
		}
	}
}

func TestRawItemKeepsUnknownTypeVerbatim(t *testing.T) {
	t.Parallel()
	in := `{"type":"webSearch","id":"w1","query":"golang race","extra":{"n":[1,2,3]}}`
	it, err := protocol.UnmarshalThreadItem([]byte(in))
	if err != nil {
		t.Fatalf("UnmarshalThreadItem(%s): %v", in, err)
	}
	raw, ok := it.(protocol.RawItem)
	if !ok {
		t.Fatalf("UnmarshalThreadItem(%s) = %T, want RawItem", in, it)
	}
	if raw.ItemID() != "w1" || raw.ItemType() != "webSearch" {
		t.Errorf("RawItem id/type = %q/%q, want w1/webSearch", raw.ItemID(), raw.ItemType())
	}
	b, err := json.Marshal(it)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != in {
		t.Errorf("Marshal(RawItem) = %s, want %s", b, in)
	}
	// Inside a Turn, too.
	turnJSON := `{"id":"t1","items":[` + in + `,{"type":"agentMessage","id":"a","text":"x","phase":null}],"itemsView":"full","status":"completed"}`
	var tr protocol.Turn
	if err := json.Unmarshal([]byte(turnJSON), &tr); err != nil {
		t.Fatalf("Unmarshal(Turn): %v", err)
	}
	if len(tr.Items) != 2 || tr.Items[0].ItemType() != "webSearch" || tr.Items[1].ItemType() != "agentMessage" {
		t.Fatalf("Turn.Items = %#v", tr.Items)
	}
	b, _ = json.Marshal(tr.Items[0])
	if string(b) != in {
		t.Errorf("Turn.Items[0] = %s, want %s", b, in)
	}
}

func TestUnmarshalThreadItemErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`not json`, `{"type":"agentMessage","text":5}`, `[1]`} {
		if it, err := protocol.UnmarshalThreadItem([]byte(in)); err == nil {
			t.Errorf("UnmarshalThreadItem(%s) = %#v, want error", in, it)
		}
	}
}

func TestThreadStatusJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   protocol.ThreadStatus
		want string
	}{
		{protocol.ThreadStatus{Type: protocol.StatusActive}, `{"type":"active","activeFlags":[]}`},
		{protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{}}, `{"type":"active","activeFlags":[]}`},
		{protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{protocol.FlagWaitingOnApproval}}, `{"type":"active","activeFlags":["waitingOnApproval"]}`},
		{protocol.ThreadStatus{Type: protocol.StatusIdle}, `{"type":"idle"}`},
		{protocol.ThreadStatus{Type: protocol.StatusIdle, ActiveFlags: []string{"x"}}, `{"type":"idle"}`},
		{protocol.ThreadStatus{Type: protocol.StatusNotLoaded}, `{"type":"notLoaded"}`},
		{protocol.ThreadStatus{Type: protocol.StatusSystemError}, `{"type":"systemError"}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tt.want {
			t.Errorf("Marshal(%v) = %s, want %s", tt.in, b, tt.want)
		}
		var back protocol.ThreadStatus
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		wantBack := tt.in
		if wantBack.Type != protocol.StatusActive {
			wantBack.ActiveFlags = nil
		}
		if !back.Equal(wantBack) {
			t.Errorf("Unmarshal(%s) = %v, want %v", b, back, wantBack)
		}
	}
	// A pointer inside a struct marshals the same way.
	b, _ := json.Marshal(protocol.ThreadStatusChangedNotification{ThreadID: "t", Status: protocol.ThreadStatus{Type: protocol.StatusActive}})
	if want := `{"threadId":"t","status":{"type":"active","activeFlags":[]}}`; string(b) != want {
		t.Errorf("Marshal(ThreadStatusChangedNotification) = %s, want %s", b, want)
	}
}

func TestAskForApproval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in       string
		mode     protocol.ApprovalPolicy
		granular string
		wantErr  bool
	}{
		{in: `"untrusted"`, mode: "untrusted"},
		{in: `"on-request"`, mode: "on-request"},
		{in: `"never"`, mode: "never"},
		{in: `{"granular":{"sandbox_approval":true}}`, granular: `{"sandbox_approval":true}`},
		{in: `"bogus"`, wantErr: true},
		{in: `"on-failure"`, wantErr: true},
		{in: `""`, wantErr: true},
		{in: `{"other":{}}`, wantErr: true},
		{in: `42`, wantErr: true},
	}
	for _, tt := range tests {
		var a protocol.AskForApproval
		err := json.Unmarshal([]byte(tt.in), &a)
		if tt.wantErr {
			if err == nil {
				t.Errorf("Unmarshal(%s) = %#v, want error", tt.in, a)
			}
			continue
		}
		if err != nil {
			t.Errorf("Unmarshal(%s): %v", tt.in, err)
			continue
		}
		if a.Mode != tt.mode || string(a.Granular) != tt.granular {
			t.Errorf("Unmarshal(%s) = {%q %s}, want {%q %s}", tt.in, a.Mode, a.Granular, tt.mode, tt.granular)
		}
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tt.in {
			t.Errorf("Marshal(Unmarshal(%s)) = %s", tt.in, b)
		}
	}
}

func TestParseApprovalResponse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		kind    protocol.Decision
		detail  string
		wantErr bool
	}{
		{in: `{"decision":"accept"}`, kind: protocol.DecisionAccept},
		{in: `{"decision":"acceptForSession"}`, kind: protocol.DecisionAcceptForSession},
		{in: `{"decision":"decline"}`, kind: protocol.DecisionDecline},
		{in: `{"decision":"cancel"}`, kind: protocol.DecisionCancel},
		{in: `{"decision":{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["echo","hi"]}}}`, kind: "acceptWithExecpolicyAmendment", detail: `{"execpolicy_amendment":["echo","hi"]}`},
		{in: `{"decision":"bogus"}`, wantErr: true},
		{in: `{"decision":{"bogus":{}}}`, wantErr: true},
		{in: `{"decision":{"accept":{},"decline":{}}}`, wantErr: true},
		{in: `{"decision":7}`, wantErr: true},
		{in: `{}`, wantErr: true},
		{in: `{"decision":null}`, wantErr: true},
		{in: `null`, wantErr: true},
		{in: `not json`, wantErr: true},
	}
	for _, tt := range tests {
		d, err := protocol.ParseApprovalResponse(json.RawMessage(tt.in))
		if tt.wantErr {
			if err == nil {
				t.Errorf("ParseApprovalResponse(%s) = %+v, want error", tt.in, d)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseApprovalResponse(%s): %v", tt.in, err)
			continue
		}
		if d.Kind != tt.kind || string(d.Detail) != tt.detail {
			t.Errorf("ParseApprovalResponse(%s) = {%q %s}, want {%q %s}", tt.in, d.Kind, d.Detail, tt.kind, tt.detail)
		}
	}
}

type validator interface{ Validate() error }

func TestValidateNamesMissingField(t *testing.T) {
	t.Parallel()
	text := []protocol.UserInput{protocol.TextInput("hi")}
	tests := []struct {
		name  string
		p     validator
		field string // "" = valid
	}{
		{"resume/ok", &protocol.ThreadResumeParams{ThreadID: "t"}, ""},
		{"resume/threadId", &protocol.ThreadResumeParams{}, "threadId"},
		{"fork/threadId", &protocol.ThreadForkParams{}, "threadId"},
		{"archive/threadId", &protocol.ThreadIDParams{}, "threadId"},
		{"read/threadId", &protocol.ThreadReadParams{}, "threadId"},
		{"name/threadId", &protocol.ThreadNameSetParams{Name: sp("n")}, "threadId"},
		{"name/name", &protocol.ThreadNameSetParams{ThreadID: "t"}, "name"},
		{"turnStart/ok", &protocol.TurnStartParams{ThreadID: "t", Input: text}, ""},
		{"turnStart/emptyInputOK", &protocol.TurnStartParams{ThreadID: "t", Input: []protocol.UserInput{}}, ""},
		{"turnStart/threadId", &protocol.TurnStartParams{Input: text}, "threadId"},
		{"turnStart/input", &protocol.TurnStartParams{ThreadID: "t"}, "input"},
		{"turnStart/input[].type", &protocol.TurnStartParams{ThreadID: "t", Input: []protocol.UserInput{{Text: "x"}}}, "input[].type"},
		{"steer/ok", &protocol.TurnSteerParams{ThreadID: "t", ExpectedTurnID: "u", Input: text}, ""},
		{"steer/threadId", &protocol.TurnSteerParams{ExpectedTurnID: "u", Input: text}, "threadId"},
		{"steer/expectedTurnId", &protocol.TurnSteerParams{ThreadID: "t", Input: text}, "expectedTurnId"},
		{"steer/input", &protocol.TurnSteerParams{ThreadID: "t", ExpectedTurnID: "u"}, "input"},
		{"interrupt/threadId", &protocol.TurnInterruptParams{TurnID: "u"}, "threadId"},
		{"interrupt/turnId", &protocol.TurnInterruptParams{ThreadID: "t"}, "turnId"},
		{"init/ok", &protocol.InitializeParams{ClientInfo: &protocol.ClientInfo{Name: "n", Version: "1"}}, ""},
		{"init/clientInfo", &protocol.InitializeParams{}, "clientInfo"},
		{"init/clientInfo.name", &protocol.InitializeParams{ClientInfo: &protocol.ClientInfo{Version: "1"}}, "clientInfo.name"},
		{"init/clientInfo.version", &protocol.InitializeParams{ClientInfo: &protocol.ClientInfo{Name: "n"}}, "clientInfo.version"},
	}
	for _, tt := range tests {
		err := tt.p.Validate()
		if tt.field == "" {
			if err != nil {
				t.Errorf("%s: Validate() = %v, want nil", tt.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: Validate() = nil, want error naming %q", tt.name, tt.field)
			continue
		}
		if want := "missing field `" + tt.field + "`"; !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Validate() = %q, want it to contain %q", tt.name, err, want)
		}
		if !errors.Is(err, protocol.ErrInvalidParams) {
			t.Errorf("%s: Validate() = %v, does not unwrap to ErrInvalidParams", tt.name, err)
		}
	}
}

func TestValidateInvalidValues(t *testing.T) {
	t.Parallel()
	text := []protocol.UserInput{protocol.TextInput("hi")}
	tests := []struct {
		name string
		p    validator
		frag string
	}{
		{"start/sandbox", &protocol.ThreadStartParams{ThreadSettings: protocol.ThreadSettings{Sandbox: new(protocol.SandboxMode("open"))}}, "sandbox"},
		{"resume/sandbox", &protocol.ThreadResumeParams{ThreadID: "t", ThreadSettings: protocol.ThreadSettings{Sandbox: new(protocol.SandboxMode("open"))}}, "sandbox"},
		{"turnStart/sandboxPolicy", &protocol.TurnStartParams{ThreadID: "t", Input: text, SandboxPolicy: &protocol.SandboxPolicy{Type: "nope"}}, "sandboxPolicy"},
		{"turnStart/inputType", &protocol.TurnStartParams{ThreadID: "t", Input: []protocol.UserInput{{Type: "video"}}}, "video"},
		{"list/sortKey", &protocol.ThreadListParams{SortKey: sp("name")}, "sortKey"},
		{"list/sortDirection", &protocol.ThreadListParams{SortDirection: sp("up")}, "sortDirection"},
		{"list/limit", &protocol.ThreadListParams{Limit: ip(-1)}, "limit"},
		{"list/cwd", &protocol.ThreadListParams{Cwd: json.RawMessage(`5`)}, "cwd"},
		{"fullAuto/approvals", &protocol.FullAutoStartParams{ThreadID: "t", Approvals: new(protocol.FullAutoApprovals("sometimes"))}, "approvals"},
		{"fullAuto/onApprovalTimeout", &protocol.FullAutoStartParams{ThreadID: "t", OnApprovalTimeout: new(protocol.OnTimeout("retry"))}, "onApprovalTimeout"},
	}
	for _, tt := range tests {
		err := tt.p.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.frag) || !errors.Is(err, protocol.ErrInvalidParams) {
			t.Errorf("%s: Validate() = %v, want ErrInvalidParams mentioning %q", tt.name, err, tt.frag)
		}
	}
	if err := (&protocol.ThreadStartParams{}).Validate(); err != nil {
		t.Errorf("ThreadStartParams{}.Validate() = %v, want nil", err)
	}
	if err := (&protocol.ThreadListParams{SortKey: sp("updated_at"), SortDirection: sp("asc"), Limit: ip(0)}).Validate(); err != nil {
		t.Errorf("ThreadListParams.Validate() = %v, want nil", err)
	}
}

func TestThreadListParamsCwds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string // the params JSON
		want    []string
		wantErr bool
	}{
		{in: `{}`},
		{in: `{"cwd":null}`},
		{in: `{"cwd":"/a/b"}`, want: []string{"/a/b"}},
		{in: `{"cwd":["/a","/b"]}`, want: []string{"/a", "/b"}},
		{in: `{"cwd":[]}`, want: []string{}},
		{in: `{"cwd":5}`, wantErr: true},
		{in: `{"cwd":{"p":"/a"}}`, wantErr: true},
		{in: `{"cwd":["/a",1]}`, wantErr: true},
	}
	for _, tt := range tests {
		var p protocol.ThreadListParams
		if err := json.Unmarshal([]byte(tt.in), &p); err != nil {
			t.Fatalf("Unmarshal(%s): %v", tt.in, err)
		}
		got, err := p.Cwds()
		if tt.wantErr {
			if err == nil || !errors.Is(err, protocol.ErrInvalidParams) || !strings.Contains(err.Error(), "`cwd`") {
				t.Errorf("Cwds(%s) = %v, %v; want ErrInvalidParams naming `cwd`", tt.in, got, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Cwds(%s) = %#v, %v; want %#v", tt.in, got, err, tt.want)
		}
	}
}

func TestErrorInfo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		got, want string
	}{
		{string(protocol.ErrorInfoHTTP("responseTooManyFailedAttempts", 429)), `{"responseTooManyFailedAttempts":{"httpStatusCode":429}}`},
		{string(protocol.ErrorInfoHTTP("responseStreamDisconnected", 0)), `{"responseStreamDisconnected":{"httpStatusCode":null}}`},
		{string(protocol.ErrorInfoHTTP("x", -1)), `{"x":{"httpStatusCode":null}}`},
		{string(protocol.ErrorInfo("internalServerError")), `"internalServerError"`},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("ErrorInfo = %s, want %s", tt.got, tt.want)
		}
	}
	// Embedded in a TurnError it stays an object.
	b, _ := json.Marshal(protocol.TurnError{Message: "m", CodexErrorInfo: protocol.ErrorInfoHTTP("k", 500)})
	if want := `"codexErrorInfo":{"k":{"httpStatusCode":500}}`; !strings.Contains(string(b), want) {
		t.Errorf("Marshal(TurnError) = %s, want it to contain %s", b, want)
	}
}

func TestErrorWrapping(t *testing.T) {
	t.Parallel()
	err := protocol.Errorf(protocol.ErrInvalidRequest, "thread not found: %s", "x")
	if err.Error() != "thread not found: x" || !errors.Is(err, protocol.ErrInvalidRequest) || errors.Is(err, protocol.ErrInvalidParams) {
		t.Errorf("Errorf = %v (Is request %v)", err, errors.Is(err, protocol.ErrInvalidRequest))
	}
	if got, want := protocol.MissingField("input").Error(), "Invalid params: missing field `input`"; got != want {
		t.Errorf("MissingField(input) = %q, want %q", got, want)
	}
}
