package server

import (
	"context"
	"testing"

	"github.com/apserver/apserver/session"
)

// TestCallWithID: a request re-sent after a restart keeps its old id, and
// ids from Call continue above it.
func TestCallWithID(t *testing.T) {
	c := startServer(t, Options{}, nil)
	c.initialize(nil)
	cl := c.s.Client().(interface {
		CallWithID(id int64, method string, params any) session.ClientCall
	})
	old := cl.CallWithID(7, "item/commandExecution/requestApproval", map[string]any{"itemId": "c1"})
	if m := c.recv(); string(m.ID) != "7" || m.Method != "item/commandExecution/requestApproval" {
		t.Fatalf("re-sent request = %s, want id 7", m.raw)
	}
	next := c.s.Client().Call("item/tool/requestUserInput", map[string]any{})
	if next.ID() != 8 {
		t.Errorf("next Call id = %d, want 8", next.ID())
	}
	if m := c.recv(); string(m.ID) != "8" {
		t.Fatalf("next request = %s, want id 8", m.raw)
	}
	lower := cl.CallWithID(2, "item/tool/requestUserInput", map[string]any{})
	if m := c.recv(); string(m.ID) != "2" {
		t.Fatalf("re-sent request = %s, want id 2", m.raw)
	}
	if id := c.s.Client().Call("m", nil).ID(); id != 9 {
		t.Errorf("Call after re-sending a lower id = %d, want 9", id)
	}
	c.recv()
	c.send(`{"id":7,"result":{"decision":"accept"}}`)
	raw, err := old.Wait(context.Background())
	if err != nil || string(raw) != `{"decision":"accept"}` {
		t.Errorf("Wait = %s, %v", raw, err)
	}
	c.send(`{"id":2,"result":{"answers":{}}}`)
	if raw, err := lower.Wait(context.Background()); err != nil || string(raw) != `{"answers":{}}` {
		t.Errorf("Wait = %s, %v", raw, err)
	}
}
