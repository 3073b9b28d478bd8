package session

import (
	"context"
	"testing"

	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
)

// TestGoalUnknownThread: the goal methods on a thread that does not exist
// answer -32600 naming it, and create nothing.
func TestGoalUnknownThread(t *testing.T) {
	t.Parallel()
	h := newHarness(t, scripted.Script{}, false)
	ctx := context.Background()
	const id = "01a00000-0000-7000-8000-000000000000"
	for _, tc := range []struct {
		method string
		do     func(Reply)
	}{
		{"thread/goal/set", func(r Reply) { h.m.SetGoal(ctx, protocol.ThreadGoalSetParams{ThreadID: id, Objective: ptr("o")}, r) }},
		{"thread/goal/get", func(r Reply) { h.m.GetGoal(ctx, protocol.ThreadIDParams{ThreadID: id}, r) }},
		{"thread/goal/clear", func(r Reply) { h.m.ClearGoal(ctx, protocol.ThreadGoalClearParams{ThreadID: id}, r) }},
	} {
		_, err := call[struct{}](t, h, tc.method, tc.do)
		wantErr(t, tc.method, err, protocol.ErrInvalidRequest, "thread not found: "+id)
	}
	if h.m.loaded(id) != nil {
		t.Errorf("an unknown thread was loaded")
	}
}
