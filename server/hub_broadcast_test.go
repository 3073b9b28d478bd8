package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
)

// TestHubBroadcastCall: a request of a thread no connection follows (a
// cluster worker's, relayed) reaches every initialized connection through
// Broadcast, including one that initializes while it waits; the first
// answer settles it.
func TestHubBroadcastCall(t *testing.T) {
	h := NewHub(discardLogger())
	a := startServer(t, Options{Hub: h, Logger: discardLogger()}, nil)
	b := startServer(t, Options{Hub: h, Logger: discardLogger()}, nil)
	a.initialize(nil)
	b.initialize(nil)
	params := map[string]any{"threadId": "worker-thread", "turnId": "t1", "itemId": "i1", "command": "make deploy"}

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	call := h.Broadcast().Call(protocol.RequestCommandApproval, params)
	request := func(c *testConn) wireMsg {
		t.Helper()
		for {
			m := c.recv()
			if m.Method == protocol.RequestCommandApproval && len(m.ID) > 0 && string(m.ID) == jsonID(call.ID()) {
				return m
			}
		}
	}
	request(a)
	mb := request(b)
	late := startServer(t, Options{Hub: h, Logger: discardLogger()}, nil)
	late.initialize(nil)
	if m := request(late); !strings.Contains(string(m.Params), "make deploy") {
		t.Fatalf("the late connection got %s", m.raw)
	}

	b.sendJSON(map[string]any{"id": json.RawMessage(mb.ID), "result": map[string]any{"decision": "accept"}})
	raw, err := call.Wait(ctx)
	if err != nil || !strings.Contains(string(raw), `"accept"`) {
		t.Fatalf("Wait = %s, %v; want b's accept", raw, err)
	}
}

func jsonID(id int64) string {
	b, _ := json.Marshal(id)
	return string(b)
}
