package session

import (
	"sort"
	"sync"
	"testing"
	"time"
)

// fakeClock is a Clock that moves only when a test advances it. Advance
// runs the functions of the timers that come due before it returns (in
// the test's goroutine; the session's only post an event), so what a test
// does next comes after them.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	// added is closed and replaced whenever a timer is set.
	added chan struct{}
}

type fakeTimer struct {
	c  *fakeClock
	at time.Time
	f  func()
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), added: make(chan struct{})}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	tm := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, tm)
	close(c.added)
	c.added = make(chan struct{})
	return tm
}

func (tm *fakeTimer) Stop() bool {
	c := tm.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.timers {
		if x == tm {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			return true
		}
	}
	return false
}

// Advance moves the clock by d and fires the timers due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	keep := c.timers[:0]
	for _, tm := range c.timers {
		if !tm.at.After(c.now) {
			due = append(due, tm)
		} else {
			keep = append(keep, tm)
		}
	}
	c.timers = keep
	c.mu.Unlock()
	sort.Slice(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, tm := range due {
		tm.f()
	}
}

// next is the earliest pending timer's time, and the channel closed when
// another timer is set.
func (c *fakeClock) next() (at time.Time, ok bool, added <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tm := range c.timers {
		if !ok || tm.at.Before(at) {
			at, ok = tm.at, true
		}
	}
	return at, ok, c.added
}

// fireNext waits for a pending timer and advances the clock to it.
func (c *fakeClock) fireNext(t *testing.T) { c.fireWithin(t, 1<<62) }

// fireWithin waits for a timer due within d from now (timers due later,
// such as a turn's 2 h cap, do not count) and advances the clock to the
// earliest such timer.
func (c *fakeClock) fireWithin(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.NewTimer(testTimeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		now, added := c.now, c.added
		var at time.Time
		ok := false
		for _, tm := range c.timers {
			if tm.at.Sub(now) <= d && (!ok || tm.at.Before(at)) {
				at, ok = tm.at, true
			}
		}
		c.mu.Unlock()
		if ok {
			c.Advance(at.Sub(now))
			return
		}
		select {
		case <-added:
		case <-deadline.C:
			t.Fatalf("no timer was set within %v", d)
		}
	}
}

func TestFakeClock(t *testing.T) {
	c := newFakeClock()
	start := c.Now()
	fired := make(chan string, 3)
	c.AfterFunc(2*time.Second, func() { fired <- "b" })
	c.AfterFunc(time.Second, func() { fired <- "a" })
	stopped := c.AfterFunc(time.Second, func() { fired <- "stopped" })
	if !stopped.Stop() || stopped.Stop() {
		t.Error("Stop = false on a pending timer, or true twice")
	}
	c.Advance(500 * time.Millisecond)
	select {
	case f := <-fired:
		t.Fatalf("timer %s fired early", f)
	default:
	}
	c.fireNext(t)
	if got := <-fired; got != "a" || c.Now().Sub(start) != time.Second {
		t.Errorf("fireNext fired %s at +%v, want a at +1s", got, c.Now().Sub(start))
	}
	c.Advance(time.Hour)
	if got := <-fired; got != "b" {
		t.Errorf("Advance fired %s, want b", got)
	}
}
