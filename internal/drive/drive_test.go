package drive

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/apserver/apserver/internal/clock"
)

type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) AfterFunc(time.Duration, func()) clock.Timer {
	panic("not used")
}

// counter is a tiny core: each event adds to a total; its effects are
// "log" (to store) and "tell" (to carry out).
type counter struct{ total int }

func (c *counter) Apply(now int64, n int) []string {
	c.total += n
	return []string{fmt.Sprintf("log %d@%d", n, now), fmt.Sprintf("tell %d", c.total)}
}

// TestDriverStoresBeforeAnswering: the event is applied at the clock's
// time; what it stores is stored before the reply, the rest is carried
// out after it; a store error is the reply and nothing is carried out.
func TestDriverStoresBeforeAnswering(t *testing.T) {
	var trace []string
	core := &counter{}
	fail := false
	d := &Driver[int, string]{
		Clock: &fakeClock{now: time.UnixMilli(5000)},
		Apply: core.Apply,
		Store: func(ev int, effs []string) ([]string, error) {
			if fail {
				return nil, errors.New("disk full")
			}
			trace = append(trace, "store "+effs[0])
			return effs[1:], nil
		},
		Carry: func(effs []string) { trace = append(trace, effs...) },
	}
	if err := d.Do(2, func(effs []string, err error) { trace = append(trace, fmt.Sprintf("reply %v %v", effs, err)) }); err != nil {
		t.Fatal(err)
	}
	want := []string{"store log 2@5000", "reply [tell 2] <nil>", "tell 2"}
	if !reflect.DeepEqual(trace, want) {
		t.Errorf("Do(2) trace = %q, want %q", trace, want)
	}
	trace, fail = nil, true
	if err := d.Do(3, func(effs []string, err error) { trace = append(trace, fmt.Sprintf("reply %v", err)) }); err == nil {
		t.Errorf("Do with a failing store: no error")
	}
	if want := []string{"reply disk full"}; !reflect.DeepEqual(trace, want) {
		t.Errorf("Do with a failing store: trace = %q, want %q", trace, want)
	}
}

// TestOwnerRunsPostedInOrder: what is posted runs on the owner's goroutine
// in order, through guard; after the context ends Post refuses.
func TestOwnerRunsPostedInOrder(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	o := NewOwner(ctx, 4)
	var got []int
	var wg sync.WaitGroup
	wg.Add(1)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		o.Run(func(f func()) {
			defer func() {
				if r := recover(); r != nil {
					got = append(got, -1)
				}
			}()
			f()
		})
	}()
	for i := 1; i <= 3; i++ {
		if !o.Post(func() { got = append(got, i) }) {
			t.Fatal("Post refused while running")
		}
	}
	o.Post(func() { panic("broken invariant") })
	o.Post(func() { wg.Done() })
	wg.Wait()
	cancel()
	<-ended
	if want := []int{1, 2, 3, -1}; !reflect.DeepEqual(got, want) {
		t.Errorf("ran %v, want %v", got, want)
	}
	if o.Post(func() {}) {
		t.Errorf("Post after the context ended = true, want false")
	}
}
