// Package drive is the one small driver of the pure cores (fullauto,
// runs): the goroutine that owns a core (Owner), and the step that feeds
// it one event (Driver): the time from the one clock, Apply, what the
// effects store stored before anything is answered or carried out
// (store-before-apply), then the answer, then the other effects in order.
// The session drives a thread's full-auto machine with it, the runner a
// run's machine.
//
// drive imports only internal/clock and the standard library.
package drive

import (
	"context"

	"github.com/apserver/apserver/internal/clock"
)

// Driver feeds a pure core's events, on the goroutine that owns the core.
// E is the core's event, F its effect.
type Driver[E, F any] struct {
	// Clock is the time each event is applied at.
	Clock clock.Clock
	// Apply is the core's Apply(now, event).
	Apply func(now int64, ev E) []F
	// Store carries out, in order, the effects that store (the event log,
	// receipts) and returns the others; it may feed the core more events
	// (a stored receipt's id), whose effects it handles the same way. An
	// error stops the step: nothing is carried out.
	Store func(ev E, effs []F) ([]F, error)
	// Carry carries out the effects left, in order.
	Carry func(effs []F)
}

// Now is the driver's clock in unix ms.
func (d *Driver[E, F]) Now() int64 { return clock.Ms(d.Clock) }

// Do applies ev now. Once what it stores is stored, reply (if not nil) is
// called with the effects left — a request reads its answer among them —
// or the store's error; then, unless there was an error, the effects are
// carried out. It returns the store's error.
func (d *Driver[E, F]) Do(ev E, reply func(effs []F, err error)) error {
	effs := d.Apply(d.Now(), ev)
	rest, err := d.Store(ev, effs)
	if reply != nil {
		reply(rest, err)
	}
	if err != nil {
		return err
	}
	d.Carry(rest)
	return nil
}

// Owner is a goroutine that owns a core and its driver's state: every
// other goroutine reaches them through Post.
type Owner struct {
	inbox chan func()
	ctx   context.Context
}

// NewOwner makes an owner whose loop ends with ctx; size is its inbox's.
func NewOwner(ctx context.Context, size int) *Owner {
	return &Owner{inbox: make(chan func(), size), ctx: ctx}
}

// Run is the owner's loop: it runs what is posted, one at a time, through
// guard (which recovers a panic: a broken invariant ends what the core
// drives, not the process), until the context ends.
func (o *Owner) Run(guard func(f func())) {
	for {
		select {
		case f := <-o.inbox:
			guard(f)
		case <-o.ctx.Done():
			return
		}
	}
}

// Post runs f on the owner's goroutine. It returns false when the owner's
// context ended first. A function posted just before the context ends
// may never run (Run stops without draining): a caller that waits for f
// needs another way to learn that (the runner's run.ask).
func (o *Owner) Post(f func()) bool {
	if o.ctx.Err() != nil {
		return false
	}
	select {
	case o.inbox <- f:
		return true
	case <-o.ctx.Done():
		return false
	}
}

// Queued is how many posted functions wait to run.
func (o *Owner) Queued() int { return len(o.inbox) }
