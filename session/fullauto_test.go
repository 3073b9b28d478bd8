package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
)

// TestAttention: one summary across threads, sent only when it changes,
// oldest first, count 0 when cleared.
func TestAttention(t *testing.T) {
	c := newFakeClient()
	a := &attention{m: &Manager{client: c}}
	k1 := attnKey{"t1", protocol.AttentionApproval, 3}
	k2 := attnKey{"t2", protocol.AttentionPaused, 0}
	a.clear(k1) // nothing to clear: nothing sent
	a.set(k1, protocol.AttentionItem{ThreadID: "t1", Kind: "approval", Reason: "r1", SinceMs: 200})
	a.set(k2, protocol.AttentionItem{ThreadID: "t2", Kind: "paused", Reason: "r2", SinceMs: 100})
	a.set(k2, protocol.AttentionItem{ThreadID: "t2", Kind: "paused", Reason: "r2", SinceMs: 500}) // same item again: no change
	a.clear(k1)
	a.clear(k2)
	var got []string
	for _, n := range attentionSent(t, c) {
		var ids []string
		for _, it := range n.Items {
			ids = append(ids, it.ThreadID)
		}
		oldest := "null"
		if n.OldestSinceMs != nil {
			oldest = fmt.Sprint(*n.OldestSinceMs)
		}
		got = append(got, fmt.Sprintf("attention %d %s %v", n.Count, oldest, ids))
	}
	want := []string{
		"attention 1 200 [t1]",
		"attention 2 100 [t2 t1]",
		"attention 1 100 [t2]",
		"attention 0 null []",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("attention notifications =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestFullAutoEphemeral runs a run on an ephemeral thread (no store): the
// first turn carries the objective as a user message, the next one starts
// with hidden input (no userMessage item) and the run stops completed.
func TestFullAutoEphemeral(t *testing.T) {
	h := newHarness(t, scripted.Script{Rules: []scripted.Rule{
		{Match: `turn="2"`, Steps: []scripted.Step{{Text: "The task is complete."}}},
		{Match: "objective one", Steps: []scripted.Step{{Text: "Halfway there; more to do."}}},
	}}, false)
	th := h.startThread(t, protocol.ThreadStartParams{Ephemeral: ptr(true)})
	id := th.Thread.ID
	run := mustCall[protocol.FullAutoRunResult](t, h, "fullAuto/start", func(r Reply) {
		h.m.StartFullAuto(context.Background(), protocol.FullAutoStartParams{ThreadID: id, Objective: ptr("objective one")}, r)
	})
	if run.Run.State != protocol.FullAutoRunning || run.Run.Approvals != "policy" {
		t.Errorf("fullAuto/start = %+v", run.Run)
	}
	log := h.c.waitFor(t, "the run to stop", func(log []event) bool {
		for _, e := range filter(log, protocol.NotifyFullAutoStatusChanged, id) {
			if strings.Contains(string(e.Params), `"state":"stopped"`) {
				return true
			}
		}
		return false
	})
	var users int
	for _, e := range filter(log, protocol.NotifyItemStarted, id) {
		if strings.Contains(string(e.Params), `"type":"userMessage"`) {
			users++
		}
	}
	if n := len(filter(log, protocol.NotifyTurnStarted, id)); n != 2 || users != 1 {
		t.Errorf("%d turns with %d userMessage items, want 2 turns, 1 user message", n, users)
	}
	decisions := filter(log, protocol.NotifyFullAutoDecision, id)
	if len(decisions) != 2 || !strings.Contains(string(decisions[1].Params), `"stopCondition":"completed"`) {
		t.Errorf("decisions = %s", dump(decisions))
	}
	if n := len(filter(log, protocol.NotifyThreadGoalUpdated, id)); n != 0 {
		t.Errorf("%d thread/goal/updated on an ephemeral thread, want none", n)
	}
	reqs := h.srv.Requests()
	if last := reqs[len(reqs)-1].LastUserText; !strings.HasPrefix(last, `<apserver_full_auto turn="2">`) {
		t.Errorf("second turn's input = %q, want the hidden full-auto input", last)
	}
}

// TestAttentionRunWaitIsOneItem: a run waiting on its task thread, which
// itself waits on a human, shows as one item, the thread's (where the
// human acts); the run's own item shows while the thread has none.
func TestAttentionRunWaitIsOneItem(t *testing.T) {
	c := newFakeClient()
	m := &Manager{client: c}
	m.fa = &fullAutoManager{m: m, attn: attention{m: m}}
	m.SetRunAttention("r1", protocol.AttentionItem{ThreadID: "task", Kind: protocol.AttentionPaused, Reason: "waits on its task thread", SinceMs: 100})
	thread := attnKey{"task", protocol.AttentionApproval, 7}
	m.fa.attn.set(thread, protocol.AttentionItem{ThreadID: "task", Kind: protocol.AttentionApproval, Reason: "run make", SinceMs: 150})
	m.fa.attn.set(attnKey{"other", protocol.AttentionPaused, 0}, protocol.AttentionItem{ThreadID: "other", Kind: protocol.AttentionPaused, SinceMs: 200})
	m.fa.attn.clear(thread)
	var got []string
	for _, n := range attentionSent(t, c) {
		var items []string
		for _, it := range n.Items {
			items = append(items, fmt.Sprintf("%s/%s/%s", it.ThreadID, it.Kind, it.RunID))
		}
		got = append(got, fmt.Sprintf("%d %v", n.Count, items))
	}
	want := []string{
		"1 [task/paused/r1]",
		"1 [task/approval/]",
		"2 [task/approval/ other/paused/]",
		"2 [task/paused/r1 other/paused/]",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("attention notifications =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// attentionSent decodes the attention notifications c was sent, failing
// the test on any other.
func attentionSent(t *testing.T, c *fakeClient) []protocol.AttentionNotification {
	t.Helper()
	var out []protocol.AttentionNotification
	for _, e := range c.snapshot() {
		var n protocol.AttentionNotification
		if e.Method != protocol.NotifyAttention {
			t.Fatalf("sent %s, want only attention", e.Method)
		}
		if err := json.Unmarshal(e.Params, &n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}
