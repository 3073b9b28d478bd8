package session

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync/atomic"
)

// Broken invariants end a turn, not the process (STYLE.md "Errors"): a
// panic on a thread goroutine, in what it runs there (the agent loop, the
// full-auto machine, the controller it calls), is recovered by guard; one
// in a turn's model stream or command goroutine by childRecover. The
// stack is logged, the turn ends failed with the panic as its error
// (stored and sent as turn/completed like any failed turn), and the thread
// goes on serving its inbox, as every other thread does meanwhile.

// testPanic, set only by this package's tests, is called at the named
// points (site, thread id) and may panic there. nil in the product.
var testPanic atomic.Pointer[func(site, thread string)]

// panicPoint calls testPanic, if a test set it.
func panicPoint(site, thread string) {
	if f := testPanic.Load(); f != nil {
		(*f)(site, thread)
	}
}

// guard runs f, a piece of the thread goroutine's work (site names it for
// tests), recovering a panic.
func (t *thread) guard(site string, f func()) {
	defer func() {
		if r := recover(); r != nil {
			t.recovered(r, debug.Stack())
			t.events.Rearm()
		}
	}()
	panicPoint(site, t.id)
	f()
}

// recovered reports a panic of the thread goroutine and fails the active
// turn. Should failing it panic too, the turn is abandoned (recorded as
// interrupted) so that the thread can take the next one.
func (t *thread) recovered(r any, stack []byte) {
	t.m.log.Error("bug: panic on a thread goroutine; its turn fails", "thread", t.id, "panic", fmt.Sprint(r), "stack", string(stack))
	tr := t.turn
	if tr == nil {
		return
	}
	defer func() {
		if r2 := recover(); r2 != nil {
			t.m.log.Error("bug: panic failing the turn after a panic; the turn is abandoned", "thread", t.id, "turn", tr.id,
				"panic", fmt.Sprint(r2), "stack", string(debug.Stack()))
			if t.turn == tr {
				t.abandonTurn()
			}
		}
	}()
	t.failTurn(tr, fmt.Errorf("internal error: %v", r))
}

// childRecover, deferred by a child goroutine of turn tr (its model
// stream, a command), reports a panic there and fails the turn on the
// thread goroutine.
func (t *thread) childRecover(ctx context.Context, tr *turn) {
	r := recover()
	if r == nil {
		return
	}
	t.m.log.Error("bug: panic in a turn's goroutine; the turn fails", "thread", t.id, "turn", tr.id, "panic", fmt.Sprint(r),
		"stack", string(debug.Stack()))
	t.postEvent(ctx, func() { t.failTurn(tr, fmt.Errorf("internal error: %v", r)) })
}
