// Package clock is the one clock of every driver: the thread goroutines
// (session), the run loops (runner), the brains and projects services. A
// driver reads the time and sets timers only through a Clock, so tests
// drive it with a fake one, and the pure cores it feeds (fullauto, runs)
// get the time as an argument, never by reading it.
//
// This file is the only non-test code of those packages that calls
// time.Now (TestNoTimeNowOutsideClock). clock imports only the standard
// library.
package clock

import "time"

// Clock is where a driver reads the time and sets timers.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a timer set by a Clock.
type Timer interface{ Stop() bool }

// Real is the wall clock.
type Real struct{}

// Now is time.Now.
func (Real) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Ms is c's time in unix milliseconds, the unit the pure cores take.
func Ms(c Clock) int64 { return c.Now().UnixMilli() }

// Func is a clock whose time is f's (a test's, a replay's); its timers
// are real ones.
type Func func() time.Time

// Now is f().
func (f Func) Now() time.Time { return f() }

// AfterFunc is time.AfterFunc.
func (Func) AfterFunc(d time.Duration, g func()) Timer { return time.AfterFunc(d, g) }

// Or is c, or the real clock when c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return Real{}
	}
	return c
}
