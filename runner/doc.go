// Package runner drives runs (docs/runs.md): it applies the effects of
// each run's runs.Machine and feeds their results back as events. It sits
// between server and session: server dispatches run/* to it, and it drives
// the planner, task and review threads through the session Manager's
// methods as a client would (thread/start, turn/start, fullAuto/start,
// fullAuto/status), seeing their notifications through Tap, the session's
// Client wrapped. It keeps each run's event log in the store, runs
// acceptance checks in the sandbox, and does git with tools/gitwork.
//
// One goroutine per run owns its machine (loop.go); slow effects run on
// goroutines of their own that only post results back. An event is stored
// before its effects are applied, so a restart (Runner.Restore) replays
// the log and takes up exactly the work that was in flight.
//
// runner must not import server.
package runner
