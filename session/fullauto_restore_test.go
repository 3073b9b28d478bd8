package session

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
)

// waitingRun starts a full-auto run whose first turn makes call under
// untrusted with approvals "ask", and closes the Manager while the run
// waits on the editor. It returns the harness (closed), the thread and
// its cwd.
func waitingRun(t *testing.T, call scripted.ToolCall) (*harness, string, string) {
	t.Helper()
	h := newHarness(t, scripted.Script{Rules: []scripted.Rule{{Match: "S-restart", Steps: []scripted.Step{
		{Text: "First this.", ToolCalls: []scripted.ToolCall{call}},
		{Text: "The task is complete."},
	}}}}, false)
	cwd := t.TempDir()
	id := h.startThread(t, threadParams(&cwd, protocol.ApprovalUntrusted)).Thread.ID
	mustCall[protocol.FullAutoRunResult](t, h, "start", func(r Reply) {
		h.m.StartFullAuto(context.Background(), protocol.FullAutoStartParams{ThreadID: id, Objective: ptr("S-restart: go"),
			Approvals: ptr(protocol.FullAutoApproveAsk)}, r)
	})
	<-h.c.calls
	waitNote(t, h, protocol.NotifyFullAutoStatusChanged, id, 0, hasState(protocol.FullAutoWaiting))
	_ = h.m.Close()
	return h, id, cwd
}

// modelSaw reports whether a request to the model contained s.
func modelSaw(h *harness, s string) bool {
	for _, rq := range h.srv.Requests() {
		if strings.Contains(string(rq.Body), s) {
			return true
		}
	}
	return false
}

// TestRestoredRequestOutcomes: how the answer to a request re-sent after a
// restart carries the run on: the model sees what became of the command
// or question in the turn that follows, and the command's item says so.
func TestRestoredRequestOutcomes(t *testing.T) {
	t.Parallel()
	question := scripted.ToolCall{Name: "request_user_input",
		Arguments: `{"questions":[{"id":"lang","header":"Language","question":"Which language?","options":[{"label":"English"},{"label":"French"}]}]}`}
	for _, tc := range []struct {
		name      string
		call      scripted.ToolCall
		answer    callAnswer
		modelSees string
		item      protocol.ItemStatus // of the resumed command, "" for none
		marker    bool                // the command ran
	}{
		{"command error", scripted.ToolCall{Command: "touch marker.txt"}, callAnswer{err: errors.New("the editor went away")},
			"The approval request failed, so the command was not run: the editor went away", protocol.ItemFailed, false},
		{"command cancel", scripted.ToolCall{Command: "touch marker.txt"}, callAnswer{raw: json.RawMessage(`{"decision":"cancel"}`)},
			"The user declined to run this command.", protocol.ItemDeclined, false},
		{"failing command for the session", scripted.ToolCall{Command: "touch marker.txt && exit 3"}, callAnswer{raw: json.RawMessage(`{"decision":"acceptForSession"}`)},
			"Exit code: 3", protocol.ItemFailed, true},
		{"question error", question, callAnswer{err: errors.New("no one there")},
			"request_user_input: the user did not answer: no one there", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, id, cwd := waitingRun(t, tc.call)
			h.open(t, false)
			h.m.RestoreFullAuto()
			again := <-h.c.calls
			again.answer <- tc.answer
			waitNote(t, h, protocol.NotifyFullAutoStatusChanged, id, 0, hasState(protocol.FullAutoStopped))
			if !modelSaw(h, tc.modelSees) {
				t.Errorf("the model never saw %q after the restart", tc.modelSees)
			}
			if _, err := os.Stat(filepath.Join(cwd, "marker.txt")); (err == nil) != tc.marker {
				t.Errorf("marker.txt exists: %v, want %v", err == nil, tc.marker)
			}
			var got protocol.ItemStatus
			for _, e := range filter(h.c.snapshot(), protocol.NotifyItemCompleted, id) {
				var n struct {
					Item struct {
						Type   string              `json:"type"`
						Status protocol.ItemStatus `json:"status"`
					} `json:"item"`
				}
				if json.Unmarshal(e.Params, &n) == nil && n.Item.Type == "commandExecution" {
					got = n.Item.Status
				}
			}
			if got != tc.item {
				t.Errorf("resumed command item %q, want %q", got, tc.item)
			}
		})
	}
}

// TestRestoredRequestNewID: a client that cannot re-send under the old id
// gets the request under a new one; the run answers to that id, and a
// second restart before the answer re-sends it again under the id the
// client last saw.
func TestRestoredRequestNewID(t *testing.T) {
	t.Parallel()
	h, id, cwd := waitingRun(t, scripted.ToolCall{Command: "touch marker.txt"})
	h.open(t, false)
	h.c.nextID = 40
	h.m.RestoreFullAuto()
	moved := <-h.c.calls
	if moved.id != 40 || moved.method != protocol.RequestCommandApproval {
		t.Fatalf("re-sent %s under id %d, want %s under 40", moved.method, moved.id, protocol.RequestCommandApproval)
	}
	// Stopping now leaves the request stored for the next start.
	_ = h.m.Close()

	h.open(t, false)
	h.m.opts.Client, h.m.client = idClient{h.c}, idClient{h.c}
	h.m.RestoreFullAuto()
	again := <-h.c.calls
	if again.id != 40 || string(again.params) != string(moved.params) {
		t.Fatalf("second restart re-sent id %d %s, want id 40 %s", again.id, again.params, moved.params)
	}
	again.answer <- callAnswer{raw: json.RawMessage(`{"decision":"accept"}`)}
	res := waitNote(t, h, protocol.NotifyServerRequestResolved, id, 0, nil)
	var n protocol.ServerRequestResolvedNotification
	if err := json.Unmarshal(h.c.snapshot()[res].Params, &n); err != nil || n.RequestID != 40 {
		t.Errorf("serverRequest/resolved = %s, want requestId 40", h.c.snapshot()[res].Params)
	}
	waitNote(t, h, protocol.NotifyFullAutoStatusChanged, id, 0, hasState(protocol.FullAutoStopped))
	if _, err := os.Stat(filepath.Join(cwd, "marker.txt")); err != nil {
		t.Errorf("marker.txt after the approval: %v", err)
	}
}

// TestRestoredRequestTimesOut: a re-sent request keeps the run's approval
// timeout; unanswered, it is declined and the run pauses for a human.
func TestRestoredRequestTimesOut(t *testing.T) {
	t.Parallel()
	h := newHarness(t, scripted.Script{Rules: []scripted.Rule{{Match: "S-restart", Steps: []scripted.Step{
		{Text: "First this.", ToolCalls: []scripted.ToolCall{{Command: "touch marker.txt"}}},
		{Text: "The task is complete."},
	}}}}, false)
	cwd := t.TempDir()
	id := h.startThread(t, threadParams(&cwd, protocol.ApprovalUntrusted)).Thread.ID
	mustCall[protocol.FullAutoRunResult](t, h, "start", func(r Reply) {
		h.m.StartFullAuto(context.Background(), protocol.FullAutoStartParams{ThreadID: id, Objective: ptr("S-restart: go"),
			Approvals: ptr(protocol.FullAutoApproveAsk), ApprovalTimeoutMs: ptr(int64(60_000))}, r)
	})
	<-h.c.calls
	waitNote(t, h, protocol.NotifyFullAutoStatusChanged, id, 0, hasState(protocol.FullAutoWaiting))
	_ = h.m.Close()

	clock := newFakeClock()
	h.c = newFakeClient()
	h.m = NewManager(Options{OpenStore: h.m.opts.OpenStore, Config: h.m.opts.Config, Client: h.c, Logger: h.m.log, Clock: clock})
	t.Cleanup(func() { _ = h.m.Close() })
	h.m.RestoreFullAuto()
	<-h.c.calls
	clock.fireWithin(t, 61*time.Second)
	p := waitNote(t, h, protocol.NotifyFullAutoStatusChanged, id, 0, hasState(protocol.FullAutoPaused))
	var n protocol.FullAutoStatusChangedNotification
	_ = json.Unmarshal(h.c.snapshot()[p].Params, &n)
	if n.Run.StopCondition == nil || *n.Run.StopCondition != "approvalTimeout" {
		t.Errorf("run paused %s, want approvalTimeout", h.c.snapshot()[p].Params)
	}
	if _, err := os.Stat(filepath.Join(cwd, "marker.txt")); err == nil {
		t.Errorf("marker.txt exists: a timed-out request ran its command")
	}
}
