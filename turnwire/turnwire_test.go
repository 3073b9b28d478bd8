package turnwire

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
)

func TestErrorFrom(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		msg  string
		want string // the TurnError as JSON
	}{
		{"plain", errors.New("boom"), "", `{"message":"boom","codexErrorInfo":"other","additionalDetails":null,"misalignment":null}`},
		{"message given", errors.New("boom"), "Reconnecting... attempt 2", `{"message":"Reconnecting... attempt 2","codexErrorInfo":"other","additionalDetails":null,"misalignment":null}`},
		{"nil", nil, "", `{"message":"unknown error","codexErrorInfo":"other","additionalDetails":null,"misalignment":null}`},
		{"window", fmt.Errorf("sampling: %w", &model.Error{Kind: model.ErrKindContextWindow, Message: "too long"}), "",
			`{"message":"too long","codexErrorInfo":"contextWindowExceeded","additionalDetails":null,"misalignment":null}`},
		{"unauthorized", &model.Error{Kind: model.ErrKindUnauthorized, HTTPStatus: 401, Message: "no key"}, "",
			`{"message":"no key","codexErrorInfo":"unauthorized","additionalDetails":null,"misalignment":null}`},
		{"server", &model.Error{Kind: model.ErrKindServer, HTTPStatus: 502, Message: "bad gateway"}, "",
			`{"message":"bad gateway","codexErrorInfo":"internalServerError","additionalDetails":null,"misalignment":null}`},
		{"retried 5xx", &model.Error{Kind: model.ErrKindTooManyAttempts, HTTPStatus: 503, Message: "gave up"}, "",
			`{"message":"gave up","codexErrorInfo":"internalServerError","additionalDetails":null,"misalignment":null}`},
		{"retried 429", &model.Error{Kind: model.ErrKindTooManyAttempts, HTTPStatus: 429, Message: "gave up"}, "",
			`{"message":"gave up","codexErrorInfo":{"responseTooManyFailedAttempts":{"httpStatusCode":429}},"additionalDetails":null,"misalignment":null}`},
		{"connection", &model.Error{Kind: model.ErrKindConnection, Message: "refused"}, "",
			`{"message":"refused","codexErrorInfo":{"httpConnectionFailed":{"httpStatusCode":null}},"additionalDetails":null,"misalignment":null}`},
		{"idle", &model.Error{Kind: model.ErrKindIdleTimeout, Message: "idle"}, "",
			`{"message":"idle","codexErrorInfo":{"responseStreamDisconnected":{"httpStatusCode":null}},"additionalDetails":null,"misalignment":null}`},
		{"output cap", &model.Error{Kind: model.ErrKindOutputLimit, Message: "too much"}, "",
			`{"message":"too much (config: response_max_output_bytes)","codexErrorInfo":"other","additionalDetails":"response_max_output_bytes","misalignment":null}`},
		{"response time", &model.Error{Kind: model.ErrKindResponseTimeout, Message: "slow"}, "",
			`{"message":"slow (config: response_max_time_ms)","codexErrorInfo":"other","additionalDetails":"response_max_time_ms","misalignment":null}`},
		{"context", fmt.Errorf("x: %w", &ContextError{Msg: "cannot fit"}), "",
			`{"message":"cannot fit","codexErrorInfo":"contextWindowExceeded","additionalDetails":null,"misalignment":null}`},
		{"limit", &LimitError{What: "the turn ran longer than 1s", Key: "turn_max_time_ms"}, "",
			`{"message":"the turn ran longer than 1s; apserver stopped it (config: turn_max_time_ms)","codexErrorInfo":"other","additionalDetails":"turn_max_time_ms","misalignment":null}`},
	} {
		b, err := json.Marshal(ErrorFrom(tc.err, tc.msg))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("%s: ErrorFrom(%v, %q) = %s, want %s", tc.name, tc.err, tc.msg, b, tc.want)
		}
	}
}

func TestRequestTier(t *testing.T) {
	for in, want := range map[string]string{"": "", "default": "", "auto": "", "fast": "priority", "flex": "flex", "priority": "priority"} {
		if got := RequestTier(in); got != want {
			t.Errorf("RequestTier(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFailed(t *testing.T) {
	for _, tc := range []struct {
		in     protocol.ThreadItem
		want   protocol.ThreadItem
		wantOK bool
	}{
		{protocol.CommandExecutionItem{ID: "c", Status: protocol.ItemInProgress}, protocol.CommandExecutionItem{ID: "c", Status: protocol.ItemFailed}, true},
		{protocol.FileChangeItem{ID: "f", Status: protocol.ItemInProgress}, protocol.FileChangeItem{ID: "f", Status: protocol.ItemFailed}, true},
		{protocol.DynamicToolCallItem{ID: "d", Status: protocol.ItemInProgress}, protocol.DynamicToolCallItem{ID: "d", Status: protocol.ItemFailed}, true},
		{protocol.ContextCompactionItem{ID: "k"}, protocol.ContextCompactionItem{ID: "k"}, false},
		{protocol.AgentMessageItem{ID: "m", Text: "partial"}, protocol.AgentMessageItem{ID: "m", Text: "partial"}, true},
	} {
		got, ok := Failed(tc.in)
		if ok != tc.wantOK || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Failed(%#v) = %#v, %v; want %#v, %v", tc.in, got, ok, tc.want, tc.wantOK)
		}
	}
}

// TestReasoningJoin: streamed parts fill the item's summary and content
// by index; parts the item already has and no delta touched stay; the
// buffers are let go.
func TestReasoningJoin(t *testing.T) {
	var r Reasoning
	r.Part(0, 0).WriteString("first ")
	r.Part(0, 0).WriteString("summary")
	r.Part(0, 2).WriteString("third")
	r.Part(1, 0).WriteString("thinking")
	item := r.Item(protocol.ReasoningItem{ID: "r", Summary: []string{"", "kept"}, Content: []string{}})
	want := protocol.ReasoningItem{ID: "r", Summary: []string{"first summary", "kept", "third"}, Content: []string{"thinking"}}
	if !reflect.DeepEqual(item, want) {
		t.Errorf("Item = %#v, want %#v", item, want)
	}
	if again := r.Item(protocol.ReasoningItem{ID: "r", Summary: []string{"x"}}); !reflect.DeepEqual(again.Summary, []string{"x"}) {
		t.Errorf("after Item the buffers still hold %v", again.Summary)
	}
	r.Part(1, 0).WriteString("dropped")
	r.Drop(1)
	if got := r.Item(protocol.ReasoningItem{Content: []string{"final"}}); !reflect.DeepEqual(got.Content, []string{"final"}) {
		t.Errorf("after Drop(1): content %v, want [final]", got.Content)
	}
}

func TestNotSteerable(t *testing.T) {
	err := NotSteerable("compact")
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Kind != protocol.ErrInvalidRequest || pe.Msg != "cannot steer a compact turn" {
		t.Fatalf("NotSteerable(compact) = %#v", err)
	}
	var te protocol.TurnError
	if err := json.Unmarshal(pe.Data, &te); err != nil || te.Message != pe.Msg {
		t.Errorf("its data = %s (%v), want the TurnError with the message", pe.Data, err)
	}
	want, _ := json.Marshal(protocol.ErrorInfoNotSteerable("compact"))
	if got, _ := json.Marshal(te.CodexErrorInfo); string(got) != string(want) {
		t.Errorf("codexErrorInfo = %s, want %s", got, want)
	}
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		in   model.Usage
		want protocol.TokenUsageBreakdown
	}{
		{model.Usage{InputTokens: 10, CachedInputTokens: 4, OutputTokens: 3, ReasoningOutputTokens: 1, TotalTokens: 15},
			protocol.TokenUsageBreakdown{TotalTokens: 15, InputTokens: 10, CachedInputTokens: 4, OutputTokens: 3, ReasoningOutputTokens: 1}},
		{model.Usage{InputTokens: 10, OutputTokens: 3}, protocol.TokenUsageBreakdown{TotalTokens: 13, InputTokens: 10, OutputTokens: 3}},
		{model.Usage{}, protocol.TokenUsageBreakdown{}},
	} {
		if got := Usage(tc.in); got != tc.want {
			t.Errorf("Usage(%+v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}
