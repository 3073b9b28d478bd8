package server

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
	"github.com/sourcegraph/jsonrpc2"
)

// TestSearchCancel: a running thread/search/stream is in a lane of its
// own (other requests and its cancel are answered while it runs), sees its
// own request id, and is stopped by thread/search/stream/cancel naming it,
// not by thread/search/cancel (which targets only thread/search) nor by a
// cancel naming another id. Cancels are idempotent: {} each time.
func TestSearchCancel(t *testing.T) {
	seenID := make(chan string, 1)
	c := startServer(t, Options{}, func(s *Server) {
		Handle(s, protocol.MethodThreadSearchStream, func(ctx context.Context, _ protocol.ThreadSearchParams, reply session.Reply) {
			id, _ := json.Marshal(ctx.Value(requestIDKey{}).(jsonrpc2.ID))
			seenID <- string(id)
			go func() {
				<-ctx.Done()
				reply(searchAnswer(protocol.ThreadSearchResult{}, session.ErrSearchCancelled))
			}()
		})
		registerSearchCancel(s)
	})
	c.initialize(nil)
	c.sendJSON(map[string]any{"id": "s-1", "method": "thread/search/stream", "params": map[string]any{"searchTerm": "x"}})
	if got := <-seenID; got != `"s-1"` {
		t.Errorf("the search saw request id %s, want \"s-1\"", got)
	}
	expectResult(t, c.call(1, "test/echo", map[string]any{"text": "hi"}), `{"text":"hi","n":0,"inner":{"flag":false}}`)
	expectResult(t, c.call(2, "thread/search/cancel", map[string]any{"requestId": "s-1"}), `{}`)
	expectResult(t, c.call(3, "thread/search/stream/cancel", map[string]any{"requestId": "s-2"}), `{}`)
	expectResult(t, c.call(4, "test/echo", map[string]any{"text": "still"}), `{"text":"still","n":0,"inner":{"flag":false}}`)
	expectError(t, c.call(5, "thread/search/stream/cancel", map[string]any{"requestId": 1.5}), -32602, "requestId")
	c.sendJSON(map[string]any{"id": 6, "method": "thread/search/stream/cancel", "params": map[string]any{"requestId": "s-1"}})
	got := map[string]wireMsg{}
	for len(got) < 2 {
		m := c.recv()
		got[string(m.ID)] = m
	}
	expectResult(t, got["6"], `{}`)
	expectError(t, got[`"s-1"`], -32600, "thread search cancelled")
	expectResult(t, c.call(7, "thread/search/stream/cancel", map[string]any{"requestId": "s-1"}), `{}`)
}
