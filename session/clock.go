package session

import "time"

// Clock is where the session reads the time and sets timers: the times of
// turns, items and approval requests on the wire, a run's spent time,
// approval timeouts and retry cooldowns. The Manager's is the real one
// unless Options.Clock sets another (tests drive a fake one).
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a timer set by a Clock.
type Timer interface{ Stop() bool }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
