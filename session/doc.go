// Package session owns all conversation state: threads, turns, items and
// the agent loop that drives a model and runs its tool calls.
//
// One goroutine owns each thread (thread.run). Requests from the server and
// events from child goroutines (model streams, command runs, approval waits)
// reach it as closures on its inbox and event channels; nothing else reads or
// writes a thread's fields. Children tag what they send with the turn and
// the sampling generation they belong to, so events that arrive after an
// interrupt or a steer are dropped.
//
// Full auto's decisions belong to package fullauto, a pure state machine
// that the thread goroutine drives: it feeds events and applies the
// effects (fullauto.go). The Manager owns what spans threads: the
// model-call scheduler (sched.go) and the clock (clock.go).
//
// session declares what it consumes: the editor (Client), the model
// (via model.Client, configured from config), the store and the tools. It
// must not import server or any JSON-RPC package.
package session
