// Package modelsched caps the model requests in flight across all of a
// process's threads (max_concurrent_model_calls), serving the waiters in
// the order they asked.
package modelsched

import (
	"context"
	"sync"

	"github.com/apserver/apserver/model"
)

// Scheduler caps the model requests in flight across all threads
// (max_concurrent_model_calls). A request that finds every slot taken
// waits in a FIFO queue; a freed slot goes to the head of the queue. Each
// thread has at most one model request waiting at a time (one turn per
// thread, one sampling at a time), so the queue is a fair round-robin over
// the threads that are ready to call the model. Slots are held only while a
// model stream runs: a thread waiting on a human holds none.
type Scheduler struct {
	mu    sync.Mutex
	free  int
	queue []chan struct{} // waiters, oldest first; closed when granted a slot
}

// New is a Scheduler of slots slots (at least one).
func New(slots int) *Scheduler {
	if slots <= 0 {
		slots = 1
	}
	return &Scheduler{free: slots}
}

// Acquire waits for a slot. The caller must call Release exactly once
// after a nil error.
func (s *Scheduler) Acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.free > 0 && len(s.queue) == 0 {
		s.free--
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	s.queue = append(s.queue, ch)
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for i, w := range s.queue {
			if w == ch {
				s.queue = append(s.queue[:i], s.queue[i+1:]...)
				s.mu.Unlock()
				return ctx.Err()
			}
		}
		s.mu.Unlock()
		// Granted while giving up: pass the slot on.
		s.Release()
		return ctx.Err()
	}
}

// Release frees a slot, handing it to the oldest waiter if there is one.
func (s *Scheduler) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) > 0 {
		ch := s.queue[0]
		s.queue = s.queue[1:]
		close(ch)
		return
	}
	s.free++
}

// Stream runs one model request in a slot.
func (s *Scheduler) Stream(ctx context.Context, c *model.Client, req model.Request, fn func(model.Event)) error {
	if err := s.Acquire(ctx); err != nil {
		return err
	}
	defer s.Release()
	return c.Stream(ctx, req, fn)
}
