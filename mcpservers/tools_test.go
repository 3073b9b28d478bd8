package mcpservers

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/mcp"
)

func TestMCPToolNames(t *testing.T) {
	long := strings.Repeat("x", 70)
	refs := Named([]Tool{
		{Server: "docs", Tool: mcp.Tool{Name: "search"}},
		{Server: "my.server", Tool: mcp.Tool{Name: "get file"}},
		{Server: "a", Tool: mcp.Tool{Name: "b__c"}},
		{Server: "a__b", Tool: mcp.Tool{Name: "c"}},
		{Server: "s", Tool: mcp.Tool{Name: long}},
	})
	if refs[0].Name != "mcp__docs__search" || refs[1].Name != "mcp__my_server__get_file" {
		t.Errorf("plain names: %q, %q", refs[0].Name, refs[1].Name)
	}
	// mcp__a__b__c twice: both get a hash, and they differ.
	if refs[2].Name == refs[3].Name || !strings.HasPrefix(refs[2].Name, "mcp__a__b__c_") || len(refs[2].Name) != len("mcp__a__b__c_")+12 {
		t.Errorf("colliding names: %q, %q", refs[2].Name, refs[3].Name)
	}
	if n := refs[4].Name; len(n) != 64 || !strings.HasPrefix(n, "mcp__s__xxx") {
		t.Errorf("long name %q (%d bytes), want 64 bytes", n, len(n))
	}
	again := Named([]Tool{{Server: "s", Tool: mcp.Tool{Name: long}}})
	if again[0].Name != refs[4].Name {
		t.Errorf("names are not stable: %q then %q", refs[4].Name, again[0].Name)
	}
}

func testServers(t *testing.T) *Servers {
	t.Helper()
	s := New(Options{Cwd: t.TempDir(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(s.Close)
	return s
}

func TestApprovals(t *testing.T) {
	s := testServers(t)
	tool := Tool{Name: "mcp__wiki__edit", Server: "wiki", Tool: mcp.Tool{Name: "edit"}}
	if s.Approved("t1", tool) {
		t.Fatal("Approved before any approval")
	}
	s.Approve("t1", tool)
	if !s.Approved("t1", tool) {
		t.Error("Approve(t1) not recorded")
	}
	if s.Approved("t2", tool) {
		t.Error("an approval of thread t1 covers thread t2")
	}
	if s.Approved("t1", Tool{Server: "wiki", Tool: mcp.Tool{Name: "delete"}}) || s.Approved("t1", Tool{Server: "docs", Tool: mcp.Tool{Name: "edit"}}) {
		t.Error("an approval of wiki's edit covers another tool or server")
	}
}

// TestElicitRouting: a server's elicitation goes to the call it comes
// with, else to the latest call in flight to that server; with none it is
// declined; a failed ask or an unusable answer cancels it.
func TestElicitRouting(t *testing.T) {
	s := testServers(t)
	var asked []string
	asker := func(name, answer string, err error) *caller {
		return &caller{ask: func(ctx context.Context, server string, req mcp.ElicitRequest) (json.RawMessage, error) {
			asked = append(asked, name+":"+server+":"+req.Message)
			return json.RawMessage(answer), err
		}}
	}
	req := mcp.ElicitRequest{Mode: "form", Message: "name?"}
	ctx := context.Background()
	if res, err := s.elicit(ctx, "wiki", req); err != nil || res.Action != "decline" || len(asked) != 0 {
		t.Errorf("elicit without a call in flight = %+v, %v (asked %q); want declined", res, err, asked)
	}
	s.active = map[string][]*caller{"wiki": {asker("old", `{"action":"decline"}`, nil), asker("new", `{"action":"accept","content":{"n":"x"}}`, nil)}}
	if res, err := s.elicit(ctx, "wiki", req); err != nil || res.Action != "accept" || res.Content["n"] != "x" || asked[0] != "new:wiki:name?" {
		t.Errorf("elicit of an older server = %+v, %v (asked %q); want the latest call's answer", res, err, asked)
	}
	own := context.WithValue(ctx, callerKey{}, asker("own", `{"action":"cancel"}`, nil))
	if res, _ := s.elicit(own, "wiki", req); res.Action != "cancel" || asked[1] != "own:wiki:name?" {
		t.Errorf("elicit with its call = %+v (asked %q); want the call's own asker", res, asked)
	}
	for _, c := range []*caller{asker("bad", `{"action":"maybe"}`, nil), asker("gone", "", errors.New("the turn ended"))} {
		if res, err := s.elicit(context.WithValue(ctx, callerKey{}, c), "wiki", req); err != nil || res.Action != "cancel" {
			t.Errorf("elicit with an unusable answer or a failed ask = %+v, %v; want cancelled", res, err)
		}
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.elicit(context.WithValue(done, callerKey{}, asker("late", "", context.Canceled)), "wiki", req); !errors.Is(err, context.Canceled) {
		t.Errorf("elicit whose context ended = %v, want its error", err)
	}
}

// TestCallLeavesNoCaller: a call that ends (here: its server is not
// configured) no longer takes its server's elicitations.
func TestCallLeavesNoCaller(t *testing.T) {
	s := testServers(t)
	asked := false
	ask := func(context.Context, string, mcp.ElicitRequest) (json.RawMessage, error) {
		asked = true
		return json.RawMessage(`{"action":"accept"}`), nil
	}
	if _, err := s.Call(context.Background(), Tool{Server: "nowhere", Tool: mcp.Tool{Name: "x"}}, nil, time.Second, ask, nil); err == nil {
		t.Fatal("Call to a server that is not configured succeeded")
	}
	if res, _ := s.elicit(context.Background(), "nowhere", mcp.ElicitRequest{}); res.Action != "decline" || asked {
		t.Errorf("elicit after the call ended = %+v (asked %v); want declined", res, asked)
	}
}
