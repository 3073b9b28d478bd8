package session

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/apserver/apserver/protocol"
)

// endlessChat is an in-memory Chat Completions server (an http.RoundTripper,
// so that it runs inside a synctest bubble) whose answers never end: one
// content delta every gap, until the request is cancelled.
type endlessChat struct{ gap time.Duration }

func (e endlessChat) RoundTrip(req *http.Request) (*http.Response, error) {
	pr, pw := io.Pipe()
	go func() {
		defer pw.Close()
		for i := 0; ; i++ {
			line := fmt.Sprintf(`data: {"id":"c1","choices":[{"index":0,"delta":{"content":"tick %d "}}]}`+"\n\n", i)
			if _, err := io.WriteString(pw, line); err != nil {
				return
			}
			select {
			case <-time.After(e.gap):
			case <-req.Context().Done():
				return
			}
		}
	}()
	go func() { <-req.Context().Done(); pr.CloseWithError(req.Context().Err()) }()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr, Request: req}, nil
}

// TestTimeBudgetInterruptsTurn: a full-auto run with a 5 s time budget
// whose first turn streams forever is stopped for its time budget 5 s
// after it started (on the bubble's clock), not when the stream would end:
// the turn is interrupted and the controller stops the run.
func TestTimeBudgetInterruptsTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig(t, "http://model.invalid/v1")
		pc := cfg.Providers[cfg.Provider]
		pc.Wire = "chat"
		cfg.Providers[cfg.Provider] = pc
		c := newFakeClient()
		m := NewManager(Options{
			Config: cfg, Client: c, Version: "test",
			Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
			HTTPClient: &http.Client{Transport: endlessChat{gap: 100 * time.Millisecond}},
		})
		h := &harness{m: m, c: c}
		var once sync.Once
		defer once.Do(func() { _ = m.Close() })

		th := h.startThread(t, protocol.ThreadStartParams{Ephemeral: ptr(true)})
		id := th.Thread.ID
		start := time.Now()
		mustCall[protocol.FullAutoRunResult](t, h, "fullAuto/start", func(r Reply) {
			m.StartFullAuto(context.Background(), protocol.FullAutoStartParams{
				ThreadID: id, Objective: ptr("never stop talking"), Budgets: &protocol.FullAutoBudgets{TimeMs: ptr(int64(5_000))},
			}, r)
		})
		log := c.waitFor(t, "the run to stop", func(log []event) bool {
			for _, e := range filter(log, protocol.NotifyFullAutoStatusChanged, id) {
				if strings.Contains(string(e.Params), `"state":"stopped"`) {
					return true
				}
			}
			return false
		})
		if d := time.Since(start); d < 5*time.Second || d > 6*time.Second {
			t.Errorf("run stopped %s after it started, want at its 5 s budget", d)
		}
		var stopped string
		for _, e := range filter(log, protocol.NotifyFullAutoStatusChanged, id) {
			stopped = string(e.Params)
		}
		if !strings.Contains(stopped, "time budget") {
			t.Errorf("the run stopped with %s, want its time budget as the reason", stopped)
		}
		turns := filter(log, protocol.NotifyTurnCompleted, id)
		if len(turns) != 1 || !strings.Contains(string(turns[0].Params), `"status":"interrupted"`) {
			t.Errorf("turns completed: %s, want one, interrupted", dump(turns))
		}
		if n := len(filter(log, protocol.NotifyAgentMessageDelta, id)); n < 40 {
			t.Errorf("%d deltas before the budget ran out, want the stream to have flowed", n)
		}
		once.Do(func() { _ = m.Close() })
	})
}
