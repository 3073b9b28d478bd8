package runner

import (
	"fmt"
	"runtime/debug"
	"sync/atomic"

	"github.com/apserver/apserver/runs"
)

// Broken invariants end a run, not the process (STYLE.md "Errors"): a
// panic on a run's goroutine (in runs.Machine or in the driver around it)
// is recovered by guard, a panic in a slow step by work. The stack is
// logged and the run fails with the panic as its reason (EvFailed: stored,
// sent as run/updated); a request that was waiting for the event is
// answered with the error. Other runs, and the threads, go on. A run
// whose goroutine panics again is no longer driven in this process; the
// next one replays its log.

// testPanic, set only by this package's tests, is called at the named
// points (site, run id, the event or effect) and may panic there. nil in
// the product.
var testPanic atomic.Pointer[func(site, run string, what any)]

// panicPoint calls testPanic, if a test set it.
func panicPoint(site, run string, what any) {
	if f := testPanic.Load(); f != nil {
		(*f)(site, run, what)
	}
}

// guard runs f on the run's goroutine, recovering a panic.
func (x *run) guard(f func()) {
	defer func() {
		if r := recover(); r != nil {
			x.recovered(r, debug.Stack())
		}
	}()
	f()
}

// recovered reports a panic of the run's goroutine and fails the run; on
// the run's goroutine.
func (x *run) recovered(r any, stack []byte) {
	x.panics++
	if x.panics > 1 {
		x.rn.log.Error("bug: panic in a run again; it is no longer driven", "run", x.id, "panic", fmt.Sprint(r), "stack", string(stack))
		x.rn.mu.Lock()
		if x.rn.active[x.id] == x {
			delete(x.rn.active, x.id)
		}
		x.rn.mu.Unlock()
		x.release()
		x.stop()
		return
	}
	x.rn.log.Error("bug: panic in a run; the run fails", "run", x.id, "panic", fmt.Sprint(r), "stack", string(stack))
	ev := runs.Event{Type: runs.EvFailed, Reason: fmt.Sprintf("internal error: %v", r)}
	go x.result(ev) // posted: the run's goroutine is the one that applies it
}
