package runner

import (
	"context"
	"testing"
	"testing/synctest"
)

// TestAskIsAnsweredWhenTheLoopStops: a closure posted with ask while the
// run's goroutine is busy, whose loop then stops (the runner closing, or
// the run leaving this process), is either run or told it was dropped,
// never lost: a caller waiting for a run's answer (resultWait, a typed
// Call) must not wait for ever. The loop picks at random between what is
// queued and its stop, so the race is tried many times.
func TestAskIsAnsweredWhenTheLoopStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rn := &Runner{ctx: ctx, active: map[string]*run{}}
		for i := range 64 {
			x := rn.spawn("r", nil, 0)
			block := make(chan struct{})
			x.post(func() { <-block })
			got := make(chan string, 1)
			x.ask(func() { got <- "ran" }, func() { got <- "dropped" })
			x.stop()
			close(block)
			synctest.Wait()
			select {
			case <-got:
			default:
				t.Fatalf("try %d: the closure was neither run nor dropped once the loop stopped", i)
			}
			// Asked after the loop ended: dropped at once.
			x.ask(func() { got <- "ran" }, func() { got <- "dropped" })
			if v := <-got; v != "dropped" {
				t.Fatalf("try %d: asked after the loop ended: %s, want dropped", i, v)
			}
		}
		rn.wg.Wait()
	})
}
