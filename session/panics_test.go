package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
)

// lockedBuffer is a log sink for several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A panic on a thread goroutine (while it handles the model's stream), in
// the full-auto machine it drives, or in the turn's model stream goroutine
// ends that turn failed, with the panic
// stored as the turn's error and sent in turn/completed, logs the stack,
// and every thread, that one included, goes on serving.
func TestPanicFailsTheTurnOnly(t *testing.T) {
	for _, site := range []string{"modelEvents", "fullauto", "sampling"} {
		t.Run(site, func(t *testing.T) {
			// Not parallel: testPanic is the package's.
			h := newHarness(t, scripted.Script{Rules: []scripted.Rule{
				{Match: "doomed", Steps: []scripted.Step{{Text: "This turn will not end well."}}},
				{Match: "fine", Steps: []scripted.Step{{Text: "All good."}}},
			}}, true)
			logs := &lockedBuffer{}
			h.m.log = slog.New(slog.NewTextHandler(logs, nil))
			ctx := context.Background()
			th := h.m.Threads()
			dir := t.TempDir()
			victim, err := th.StartThread(ctx, port.ThreadSpec{Settings: protocol.ThreadSettings{Cwd: &dir}})
			if err != nil {
				t.Fatal(err)
			}
			other, err := th.StartThread(ctx, port.ThreadSpec{Settings: protocol.ThreadSettings{Cwd: &dir}})
			if err != nil {
				t.Fatal(err)
			}
			var armed sync.Once
			hook := func(s, thread string) {
				if s == site && thread == victim {
					fired := false
					armed.Do(func() { fired = true })
					if fired {
						panic(fmt.Sprintf("injected panic at %s", site))
					}
				}
			}
			testPanic.Store(&hook)
			t.Cleanup(func() { testPanic.Store(nil) })

			w := th.Watch(victim)
			defer w.Close()
			tr, err := th.StartTurn(ctx, protocol.TurnStartParams{ThreadID: victim, Input: []protocol.UserInput{protocol.TextInput("doomed")}})
			if err != nil {
				t.Fatal(err)
			}
			got := untilTurnEnded(t, w, tr.ID)
			te := got[len(got)-1].(port.TurnEnded)
			want := "internal error: injected panic at " + site
			if te.Status != protocol.TurnFailed || te.Error == nil || te.Error.Message != want {
				t.Fatalf("the turn ended %s with %+v; want failed with %q", te.Status, te.Error, want)
			}
			// Sent to the client and stored.
			log, at := h.c.waitNotify(t, protocol.NotifyTurnCompleted, victim)
			var n protocol.TurnNotification
			if err := json.Unmarshal(log[at].Params, &n); err != nil || n.Turn.Status != protocol.TurnFailed || n.Turn.Error == nil || n.Turn.Error.Message != want {
				t.Errorf("turn/completed = %s", log[at].Params)
			}
			turns, err := h.m.turnsOf(ctx, victim)
			if err != nil || len(turns) != 1 || turns[0].Status != protocol.TurnFailed || turns[0].Error == nil || turns[0].Error.Message != want {
				t.Errorf("stored turns = %+v, %v; want one failed with %q", turns, err, want)
			}
			if l := logs.String(); !strings.Contains(l, "bug: panic ") || !strings.Contains(l, "goroutine ") ||
				!strings.Contains(l, "injected panic at "+site) {
				t.Errorf("the log has no panic with its stack:\n%s", l)
			}
			// Another thread, and the same one, still work.
			for _, id := range []string{other, victim} {
				wi := th.Watch(id)
				tr, err := th.StartTurn(ctx, protocol.TurnStartParams{ThreadID: id, Input: []protocol.UserInput{protocol.TextInput("fine")}})
				if err != nil {
					t.Fatal(err)
				}
				got := untilTurnEnded(t, wi, tr.ID)
				wi.Close()
				if te := got[len(got)-1].(port.TurnEnded); te.Status != protocol.TurnCompleted {
					t.Errorf("thread %s after the panic: turn ended %s (%+v)", id, te.Status, te.Error)
				}
			}
		})
	}
}
