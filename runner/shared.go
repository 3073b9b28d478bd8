package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apserver/apserver/runs"
	"github.com/apserver/apserver/store"
)

// SharedLog is a RunStore that other processes append to as well (the
// cluster's PostgreSQL log): several apservers drive the same runs. Each
// run's loop then keeps the sequence number of the last event its machine
// applied; before it handles an event it catches up with the events
// others appended (their effects were carried out, or enqueued, by
// whoever appended them: here only the client is told), and it appends
// only where the log still ends where its machine does.
type SharedLog interface {
	RunStore
	// RunEventsAfter is the run's events after sequence number after.
	RunEventsAfter(ctx context.Context, runID string, after int64) ([]store.RunEvent, error)
	// AppendRunEventAfter is AppendRunEvent where the run's log ends at
	// after (0: the run is new); otherwise it stores nothing and wraps
	// ErrLogMoved.
	AppendRunEventAfter(ctx context.Context, after int64, row store.RunRow, typ string, event json.RawMessage, at int64, work []Work) (int64, error)
}

// ErrLogMoved: another process appended to the run's log first.
var ErrLogMoved = errors.New("the run's log moved on")

func (rn *Runner) shared() (SharedLog, bool) {
	s, ok := rn.opts.Runs.(SharedLog)
	return s, ok
}

// decode reads stored events.
func decode(id string, evs []store.RunEvent) ([]runs.Event, error) {
	out := make([]runs.Event, 0, len(evs))
	for _, e := range evs {
		var ev runs.Event
		if err := json.Unmarshal(e.Event, &ev); err != nil {
			return nil, fmt.Errorf("run %s: event %d does not decode: %w", id, e.Seq, err)
		}
		out = append(out, ev)
	}
	return out, nil
}

// catchUpLog, on the run's goroutine, applies the events other processes
// appended since the machine's last one. Of their effects only what tells
// the client is carried out here, the interruption of a thread (a
// run/cancel answered on another apserver stops the task's turn where
// its thread is: on this worker), and, where this process keeps
// blueprints, what the run records in its blueprint (a task's progress
// and its evidence: a worker has no blueprints, and recording twice
// changes nothing); a run they ended leaves this process.
func (x *run) catchUpLog(ctx context.Context) error {
	s, ok := x.rn.shared()
	if !ok {
		return nil
	}
	evs, err := s.RunEventsAfter(ctx, x.id, x.seq)
	if errors.Is(err, store.ErrNotFound) && x.seq == 0 {
		return nil // a new run: nothing stored yet
	}
	if err != nil {
		return err
	}
	log, err := decode(x.id, evs)
	if err != nil {
		return err
	}
	for i, ev := range log {
		effs := x.m.Apply(ev.AtMs, ev)
		x.seq = evs[i].Seq
		var tell []runs.Effect
		bps := x.rn.bps() != nil
		for _, e := range effs {
			switch e.(type) {
			case runs.Notify, runs.SetAttention, runs.ClearAttention, runs.Interrupt:
				tell = append(tell, e)
			case runs.BlueprintProgress, runs.BlueprintEvidence:
				if bps {
					tell = append(tell, e)
				}
			}
		}
		x.apply(tell)
	}
	if len(log) > 0 && x.m.Run().Status.Final() {
		x.rn.mu.Lock()
		if x.rn.active[x.id] == x {
			delete(x.rn.active, x.id)
		}
		x.rn.mu.Unlock()
		x.release()
		x.stop()
	}
	return nil
}

// Announce tells the runner that run id's log has grown to seq (a
// notification from the shared log): a run this process has a loop for
// catches up, so that its client sees the progress made elsewhere.
func (rn *Runner) Announce(id string, seq int64) {
	rn.mu.Lock()
	x := rn.active[id]
	rn.mu.Unlock()
	if x == nil {
		return
	}
	x.post(func() {
		if x.seq >= seq {
			return
		}
		if err := x.catchUpLog(x.ctx); err != nil {
			rn.log.Warn("catching up with a run's log", "run", id, "err", err)
		}
	})
}

// Poll makes every run with a loop here catch up with its log: the
// fallback for notifications lost while the connection was down.
func (rn *Runner) Poll() {
	rn.mu.Lock()
	xs := make([]*run, 0, len(rn.active))
	for _, x := range rn.active {
		xs = append(xs, x)
	}
	rn.mu.Unlock()
	for _, x := range xs {
		x.post(func() {
			if err := x.catchUpLog(x.ctx); err != nil {
				rn.log.Debug("catching up with a run's log", "run", x.id, "err", err)
			}
		})
	}
}

// rebuild, on the run's goroutine, replaces the machine by the one the
// log replays to.
func (x *run) rebuild() error {
	m, seq, err := x.rn.replayLog(x.ctx, x.id)
	if err != nil {
		return err
	}
	x.m, x.seq = m, seq
	return nil
}

// dropShared, for a run of a shared log whose loop stopped (an append
// failed: the database may be down), forgets the loop, so that the next
// request replays the run from the log instead of finding a dead loop.
func (x *run) dropShared() {
	if _, ok := x.rn.shared(); !ok {
		return
	}
	x.rn.mu.Lock()
	if x.rn.active[x.id] == x {
		delete(x.rn.active, x.id)
	}
	x.rn.mu.Unlock()
	x.release()
}
