package session

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/apserver/apserver/outcomes"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
	"github.com/apserver/apserver/threadwire"
)

// The thread port (package port): what the layers above session (runner,
// and next blueprints, the manager, workers) use to drive threads, typed,
// instead of posing as a wire client. The methods go through the same
// thread goroutines as the wire methods do; their answers are the typed
// values those goroutines produce, never re-encoded.

// Threads returns the Manager's thread port.
func (m *Manager) Threads() port.Threads { return threadPort{m} }

type threadPort struct{ m *Manager }

// await calls a method that answers through a Reply and waits for the
// answer, which must be an R (the method's own result type).
func await[R any](ctx context.Context, what string, call func(Reply)) (R, error) {
	var zero R
	type answer struct {
		v   any
		err error
	}
	ch := make(chan answer, 1)
	call(func(v any, err error) { ch <- answer{v, err} })
	select {
	case a := <-ch:
		if a.err != nil {
			return zero, a.err
		}
		if sr, ok := a.v.(*StreamedResult); ok {
			sr.Release()
			return zero, fmt.Errorf("bug: %s answered with streamed turns", what)
		}
		r, ok := a.v.(R)
		if !ok {
			return zero, fmt.Errorf("bug: %s answered %T, want %T", what, a.v, zero)
		}
		return r, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

func (p threadPort) StartThread(ctx context.Context, s port.ThreadSpec) (string, error) {
	sp := protocol.ThreadStartParams{ThreadSettings: s.Settings}
	if s.ReadOnly {
		cfg := map[string]any{}
		for k, v := range s.Settings.Config {
			cfg[k] = v
		}
		cfg["default_permissions"] = ":read-only"
		sp.Config = cfg
	}
	if s.Ephemeral {
		sp.Ephemeral = &s.Ephemeral
	}
	res, err := await[protocol.ThreadSessionResult](ctx, "thread/start", func(r Reply) { p.m.StartThread(ctx, sp, r) })
	if err != nil {
		return "", err
	}
	return res.Thread.ID, nil
}

func (p threadPort) Resume(ctx context.Context, threadID string, s protocol.ThreadSettings) error {
	if p.m.Loaded(threadID) && threadwire.NoOverrides(s) {
		return nil
	}
	_, err := await[protocol.ThreadResumeResult](ctx, "thread/resume", func(r Reply) {
		p.m.ResumeThread(ctx, protocol.ThreadResumeParams{ThreadID: threadID, ThreadSettings: s, ExcludeTurns: true}, r)
	})
	return err
}

func (p threadPort) StartTurn(ctx context.Context, tp protocol.TurnStartParams) (protocol.Turn, error) {
	res, err := await[protocol.TurnResult](ctx, "turn/start", func(r Reply) { p.m.StartTurn(ctx, tp, r) })
	return res.Turn, err
}

func (p threadPort) InterruptTurn(ctx context.Context, threadID, turnID string) error {
	_, err := await[protocol.Empty](ctx, "turn/interrupt", func(r Reply) {
		p.m.InterruptTurn(ctx, protocol.TurnInterruptParams{ThreadID: threadID, TurnID: turnID}, r)
	})
	return err
}

func (p threadPort) StartFullAuto(ctx context.Context, fp protocol.FullAutoStartParams) (protocol.FullAutoRun, error) {
	if err := fp.Validate(); err != nil {
		return protocol.FullAutoRun{}, err
	}
	res, err := await[protocol.FullAutoRunResult](ctx, "fullAuto/start", func(r Reply) { p.m.StartFullAuto(ctx, fp, r) })
	return res.Run, err
}

func (p threadPort) StopFullAuto(ctx context.Context, threadID string) (protocol.FullAutoRun, error) {
	res, err := await[protocol.FullAutoRunResult](ctx, "fullAuto/stop", func(r Reply) {
		p.m.StopFullAuto(ctx, protocol.FullAutoThreadParams{ThreadID: threadID}, r)
	})
	return res.Run, err
}

func (p threadPort) RestoreFullAuto(ctx context.Context, threadID string) error {
	return p.m.RestoreFullAutoOf(ctx, threadID)
}

func (p threadPort) FullAuto(ctx context.Context, threadID string) (port.FullAutoState, error) {
	t, err := p.m.load(ctx, threadID)
	if err != nil {
		return port.FullAutoState{}, err
	}
	ch := make(chan *protocol.FullAutoRun, 1)
	t.post(func() {
		if t.autoDrive() == nil {
			ch <- nil
			return
		}
		w := t.wireDrive()
		ch <- &w
	})
	var st port.FullAutoState
	select {
	case st.Run = <-ch:
	case <-t.done:
		return st, fmt.Errorf("thread %s was unloaded", threadID)
	case <-ctx.Done():
		return st, ctx.Err()
	}
	for _, it := range p.m.fa.attn.snapshot().Items {
		if it.ThreadID == threadID && it.RunID == "" {
			st.Waiting = it.Kind
		}
	}
	return st, nil
}

func (p threadPort) Answer(ctx context.Context, threadID string, requestID int64, result json.RawMessage) error {
	t := p.m.loaded(threadID)
	if t == nil {
		return protocol.Errorf(protocol.ErrInvalidRequest, "thread not loaded: %s", threadID)
	}
	ch := make(chan error, 1)
	t.post(func() { ch <- t.answerFromPort(requestID, result) })
	select {
	case err := <-ch:
		return err
	case <-t.done:
		return fmt.Errorf("thread %s was unloaded", threadID)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p threadPort) Items(ctx context.Context, threadID string) ([]protocol.ThreadItemEntry, error) {
	turns, err := p.m.turnsOf(ctx, threadID)
	if err != nil {
		return nil, err
	}
	var items []protocol.ThreadItemEntry
	for _, t := range turns {
		for _, it := range t.Items {
			items = append(items, protocol.ThreadItemEntry{Item: it, TurnID: t.ID})
		}
	}
	return items, nil
}

func (p threadPort) Release(threadID string) { p.m.ReleaseEphemeral(threadID) }

func (p threadPort) Watch(threadID string) port.Stream { return p.m.watchers.watch(threadID) }

// Notify sends a notification about no thread: to every client (a
// routing client is told so, and need not look for a thread in it).
func (p threadPort) Notify(method string, params any) { p.m.notifyAbout("", method, params) }

func (p threadPort) SetRunAttention(runID string, it protocol.AttentionItem) {
	p.m.SetRunAttention(runID, it)
}

func (p threadPort) ClearRunAttention(runID string) { p.m.ClearRunAttention(runID) }

// portAnswer is a pending request of the thread that the port may answer
// (sendRequest); owned by the thread goroutine.
type portAnswer struct {
	answer chan json.RawMessage // 1-buffered
	cancel context.CancelFunc   // ends the wait for the client's answer
	done   <-chan struct{}      // closed once the request is settled or its turn ended
}

// answerFromPort answers a pending request through the port; on the
// thread goroutine.
func (t *thread) answerFromPort(id int64, result json.RawMessage) error {
	pa, ok := t.portAnswers[id]
	if ok {
		select {
		case <-pa.done:
			delete(t.portAnswers, id)
			ok = false
		default:
		}
	}
	if !ok {
		return protocol.Errorf(protocol.ErrInvalidRequest, "no pending request %d on thread %s", id, t.id)
	}
	if !json.Valid(result) {
		return protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: result: not JSON")
	}
	delete(t.portAnswers, id)
	pa.answer <- result
	pa.cancel()
	return nil
}

// watchers are the port's outcome streams, by thread (package outcomes).
type watchers struct{ outcomes.Hub }

func (w *watchers) watch(threadID string) port.Stream { return w.Watch(threadID) }

// publish queues o on every stream watching its thread. It never blocks.
func (w *watchers) publish(o port.Outcome) { w.Publish(o) }
