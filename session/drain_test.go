package session

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
)

// TestDrainPausesFullAuto: a full-auto run going when the input ends
// finishes its current turn and starts no other; it stays running in the
// store, and the next session (a new Manager on the same store, once its
// client has initialized) takes it up again.
func TestDrainPausesFullAuto(t *testing.T) {
	h := newHarness(t, scripted.Script{Rules: []scripted.Rule{
		{Match: "objective one", Steps: []scripted.Step{{Text: "Halfway there; more to do.", TTFT: 100 * time.Millisecond}}},
	}, Default: []scripted.Step{{Text: "Still more to do."}}}, false)
	th := h.startThread(t, protocol.ThreadStartParams{})
	id := th.Thread.ID
	mustCall[protocol.FullAutoRunResult](t, h, "fullAuto/start", func(r Reply) {
		h.m.StartFullAuto(context.Background(), protocol.FullAutoStartParams{ThreadID: id, Objective: ptr("objective one")}, r)
	})
	h.c.waitNotify(t, protocol.NotifyTurnStarted, id)
	if err := h.m.Drain(context.Background(), EOFDrain); err != nil {
		t.Fatalf("Drain = %v, want nil (the turn ended normally)", err)
	}
	st := mustCall[protocol.FullAutoStatusResult](t, h, "fullAuto/status", func(r Reply) {
		h.m.FullAutoStatus(context.Background(), protocol.FullAutoStatusParams{ThreadID: &id}, r)
	})
	log := h.c.snapshot()
	if n := len(filter(log, protocol.NotifyTurnStarted, id)); n != 1 {
		t.Errorf("%d turns started, want 1 (no new turn once the input has ended)\n%s", n, dump(log))
	}
	if len(st.Runs) != 1 || st.Runs[0].State != protocol.FullAutoRunning {
		t.Errorf("run after the drain = %+v, want running", st.Runs)
	}
	if err := h.m.Close(); err != nil {
		t.Fatal(err)
	}

	h.open(t, false)
	h.m.RestoreFullAuto()
	h.c.waitFor(t, "the run to start a turn in the next session", func(log []event) bool {
		for _, e := range filter(log, protocol.NotifyTurnStarted, id) {
			if strings.Contains(string(e.Params), id) {
				return true
			}
		}
		return false
	})
}
