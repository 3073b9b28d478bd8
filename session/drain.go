package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
)

// EOFMode and its values are session/port's (--on-eof).
type EOFMode = port.EOFMode

const (
	EOFDrain     = port.EOFDrain
	EOFInterrupt = port.EOFInterrupt
)

// ParseEOFMode reads "drain" or "interrupt".
var ParseEOFMode = port.ParseEOFMode

// ErrUnfinished is wrapped by Drain's error when the work in flight could
// not all end normally: a turn was interrupted, or a request that only the
// client could answer was cancelled.
var ErrUnfinished = errors.New("input ended with work unfinished")

// Drain runs once the client's input has ended and every request it sent
// has been answered. From then on no full-auto run starts a new turn (the
// run stays going in the store, so the next client's session takes it up
// again). With EOFDrain it waits until every running turn has ended; with
// EOFInterrupt it interrupts them and waits until they are stored. It
// returns ctx.Err() if ctx ends first, or an error wrapping ErrUnfinished
// when a turn had to be stopped.
func (m *Manager) Drain(ctx context.Context, mode EOFMode) error {
	m.inputClosed.Store(true)
	var interrupted atomic.Int64
	for {
		ended := m.turnEndedSignal()
		busy := m.busyThreads()
		if len(busy) == 0 {
			break
		}
		if mode == EOFInterrupt {
			for _, t := range busy {
				t.post(func() {
					if tr := t.turn; tr != nil {
						interrupted.Add(1)
						t.notify(protocol.NotifyWarning, protocol.WarningNotification{ThreadID: &t.id,
							Message: "The client closed its input (apserver --on-eof interrupt): the turn is interrupted."})
						t.completeTurn(tr, protocol.TurnInterrupted, nil)
					}
				})
			}
		}
		m.log.Info("input closed; waiting for running turns", "turns", len(busy), "mode", mode)
		select {
		case <-ended:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	n, cancelled := interrupted.Load(), m.eofCancelled.Load()
	if n == 0 && cancelled == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d turn(s) interrupted, %d request(s) for the client cancelled", ErrUnfinished, n, cancelled)
}

// InputClosed runs as soon as the client's input has ended, before the
// requests in flight are answered (Drain comes after). With EOFInterrupt
// it runs the services' hooks (AtInputInterrupted): command/exec ends
// every process at once and refuses any still to be handled, since the
// client that closed its input wants apserver gone, not waiting up to a
// process's timeout. With EOFDrain the processes run on to their end.
func (m *Manager) InputClosed(mode EOFMode) {
	if mode != EOFInterrupt {
		return
	}
	for _, f := range m.hooks(&m.atInterrupt) {
		f()
	}
}

// busyThreads returns the loaded threads with a turn running, asking each
// thread's goroutine.
func (m *Manager) busyThreads() []*thread {
	m.mu.Lock()
	all := make([]*thread, 0, len(m.threads))
	for _, t := range m.threads {
		all = append(all, t)
	}
	m.mu.Unlock()
	var busy []*thread
	for _, t := range all {
		ch := make(chan bool, 1)
		t.post(func() { ch <- t.turn != nil })
		select {
		case b := <-ch:
			if b {
				busy = append(busy, t)
			}
		case <-t.done:
		}
	}
	return busy
}

// turnEndedSignal returns a channel closed at the next turn/completed.
func (m *Manager) turnEndedSignal() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.turnEnded == nil {
		m.turnEnded = make(chan struct{})
	}
	return m.turnEnded
}

func (m *Manager) signalTurnEnded() {
	m.mu.Lock()
	if m.turnEnded != nil {
		close(m.turnEnded)
		m.turnEnded = nil
	}
	m.mu.Unlock()
}

// noClient answers a request that the client can no longer answer because
// its input ended: an approval as if the user chose cancel (the command
// does not run, nothing is changed), a question by stopping there; either
// way the turn stops interrupted, and a warning says why. It runs on the
// thread goroutine.
func (t *thread) noClient(tr *turn, req serverRequest, id int64, onAnswer func(int64, json.RawMessage, error)) {
	t.m.eofCancelled.Add(1)
	what := map[string]string{"command": "the approval of a command", "fileChange": "the approval of a file change"}[req.Kind]
	if what == "" {
		what = "an answer from the user"
	}
	t.notify(protocol.NotifyWarning, protocol.WarningNotification{ThreadID: &t.id,
		Message: "The client closed its input while apserver waited for " + what + "; apserver cancelled the request and interrupted the turn."})
	t.m.log.Warn("input closed while a request waited; cancelled", "thread", t.id, "turn", tr.id, "method", req.Method)
	switch req.Kind {
	case "command", "fileChange":
		onAnswer(id, json.RawMessage(`{"decision":"cancel"}`), nil)
	default:
		// Not onAnswer: that would give the model "no answer" and sample
		// again. The turn stops here, as on turn/interrupt.
		t.resolved(id)
	}
	if t.turn == tr {
		t.completeTurn(tr, protocol.TurnInterrupted, nil)
	}
}
