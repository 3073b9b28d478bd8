package modelsched

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestSchedulerCapAndOrder: at most n slots are held; waiters get freed
// slots in the order they asked; a waiter that gives up leaves the queue.
func TestSchedulerCapAndOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(2)
		ctx := context.Background()
		if err := s.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var order []int
		cancelled, cancel := context.WithCancel(ctx)
		for i := range 4 {
			wctx := ctx
			if i == 1 {
				wctx = cancelled
			}
			go func() {
				if err := s.Acquire(wctx); err != nil {
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
			}()
			synctest.Wait() // queue in order 0, 1, 2, 3
		}
		cancel()
		synctest.Wait()
		if len(order) != 0 {
			t.Fatalf("granted %v with every slot held", order)
		}
		s.Release()
		synctest.Wait()
		s.Release()
		synctest.Wait()
		mu.Lock()
		got := fmt.Sprint(order)
		mu.Unlock()
		if got != "[0 2]" {
			t.Errorf("grants after two releases = %s, want [0 2] (1 gave up)", got)
		}
		s.Release()
		synctest.Wait()
		if got := fmt.Sprint(order); got != "[0 2 3]" {
			t.Errorf("grants = %s, want [0 2 3]", got)
		}
		s.Release()
		s.Release()
		if s.free != 2 || len(s.queue) != 0 {
			t.Errorf("after every release: free %d, queue %d; want 2, 0", s.free, len(s.queue))
		}
	})
}

// TestSchedulerRoundRobin: threads that each ask again as soon as they are
// served get equal shares of one slot.
func TestSchedulerRoundRobin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(1)
		ctx, stop := context.WithCancel(context.Background())
		var mu sync.Mutex
		served := map[int]int{}
		var wg sync.WaitGroup
		for i := range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for s.Acquire(ctx) == nil {
					mu.Lock()
					served[i]++
					mu.Unlock()
					time.Sleep(10 * time.Millisecond) // the model call
					s.Release()
				}
			}()
		}
		time.Sleep(time.Second)
		stop()
		wg.Wait()
		lo, hi := 1<<30, 0
		for i := range 5 {
			lo, hi = min(lo, served[i]), max(hi, served[i])
		}
		if hi-lo > 1 {
			t.Errorf("served per thread = %v, want equal shares (±1)", served)
		}
	})
}
