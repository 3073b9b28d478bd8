package session

import (
	"cmp"
	"encoding/json"
	"testing"
	"time"

	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
)

// TestWireTimesOnTheManagersClock: a command and a file-change approval
// carry the Manager's clock in startedAtMs, and so do the items' started
// and completed times, as the turn's own times do; a fake clock governs
// them all.
func TestWireTimesOnTheManagersClock(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: new.txt\n+hi\n*** End Patch"
	r := startScenarioManager(t, scripted.Script{Rules: []scripted.Rule{{Match: "S-clock", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Command: "touch made.txt"}}},
		{ToolCalls: []scripted.ToolCall{{Name: "apply_patch", Input: patch}}},
		{Text: "Done."},
	}}}}, "")
	h := &harness{m: r.m, c: r.c, srv: r.srv}
	id := h.startThread(t, threadParams(nil, protocol.ApprovalUntrusted)).Thread.ID
	h.startTurn(t, id, "S-clock: make them")
	want := r.clock.Now().UnixMilli()
	for _, method := range []string{protocol.RequestCommandApproval, protocol.RequestFileChangeApproval} {
		var fc *fakeCall
		select {
		case fc = <-r.c.calls:
		case <-time.After(testTimeout):
			t.Fatalf("no %s; log:\n%s", method, dump(r.c.snapshot()))
		}
		var p struct {
			StartedAtMs int64 `json:"startedAtMs"`
		}
		if err := json.Unmarshal(fc.params, &p); err != nil || fc.method != method {
			t.Fatalf("server request %s %s (%v), want %s", fc.method, fc.params, err, method)
		}
		if p.StartedAtMs != want {
			t.Errorf("%s startedAtMs = %d, want the Manager's clock %d", method, p.StartedAtMs, want)
		}
		fc.answer <- callAnswer{raw: json.RawMessage(`{"decision":"accept"}`)}
	}
	log, _, tr := h.turnCompleted(t, id)
	if tr.Status != protocol.TurnCompleted {
		t.Errorf("turn %s, want completed", tr.Status)
	}
	items := 0
	for _, e := range log {
		var n struct {
			StartedAtMs   *int64 `json:"startedAtMs"`
			CompletedAtMs *int64 `json:"completedAtMs"`
		}
		switch e.Method {
		case protocol.NotifyItemStarted, protocol.NotifyItemCompleted:
			items++
			_ = json.Unmarshal(e.Params, &n)
			if at := cmp.Or(n.StartedAtMs, n.CompletedAtMs); at == nil || *at != want {
				t.Errorf("%s %s: time is not the Manager's clock %d", e.Method, e.Params, want)
			}
		}
	}
	if items < 8 { // user message, agent message, command, file change: started and completed
		t.Errorf("%d item notifications, want at least 8\n%s", items, dump(log))
	}
}
