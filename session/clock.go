package session

import "github.com/apserver/apserver/internal/clock"

// Clock is where the session reads the time and sets timers: the times of
// turns, items and approval requests on the wire, a run's spent time,
// approval timeouts and retry cooldowns. The Manager's is the real one
// unless Options.Clock sets another (tests drive a fake one). It is the
// one clock of every driver (package clock).
type Clock = clock.Clock

// Timer is a timer set by a Clock.
type Timer = clock.Timer
