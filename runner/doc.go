// Package runner drives runs (docs/runs.md): it applies the effects of
// each run's runs.Machine and feeds their results back as events. It sits
// between server and session: server dispatches run/* to it, and it drives
// the planner, task and review threads through session's typed thread
// port (package session/port: start a thread, a turn, full auto; a typed
// stream of each thread's outcomes), never as a wire client. It keeps each
// run's event log in the store, runs acceptance checks in the sandbox, and
// does git with tools/gitwork. The GitHub stage's effects (github.go) go
// through package github, the push through gitwork; run/revert and
// run/task/revert (revert.go) and apserver runs import (import.go) work
// on runs that are over.
//
// One goroutine per run owns its machine (loop.go); slow effects run on
// goroutines of their own that only post results back. An event is stored
// before its effects are applied, so a restart (Runner.Restore) replays
// the log and takes up exactly the work that was in flight.
//
// The event log and where slow effects run are behind two seams
// (seams.go): RunStore (the SQLite store by default) and WorkQueue (this
// process by default). A RunStore shared with other processes
// (SharedLog: package cluster's PostgreSQL) makes each run's loop catch
// up with what they appended (shared.go); remote.go has the hooks a
// cluster worker drives runs with (paths in its cache, pushes, merges).
//
// Its API is typed Go (call.go): each run/* method returns a Call whose
// answer is a Go value; the headless commands and the manager wait for it
// (Call.Do), and server turns it into a JSON-RPC reply in one place
// (Call.Then, which answers before the run's notifications).
//
// runner must not import server, nor session itself: only session/port
// (the layering test in internal/layers checks it).
package runner
