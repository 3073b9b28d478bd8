// Package compaction plans context compaction (docs/protocol.md,
// "Compaction"): when the next request is too close to the model's window
// (the trigger arithmetic), what the summary request says (the transcript
// and the prompt), what replaces the history (the summary, the pinned
// objective and plan, the newest user messages, the step in flight), and
// whether the result is kept or ends the turn.
//
// It is pure: values in, values out. It reads no clock, calls no model
// and touches no store; session does all of that (session/compact.go)
// with what this package returns. It sees the history through Entry, a
// copy of the few fields of a model entry it reads.
//
// compaction must import nothing but protocol and the standard library
// (internal/layers checks it).
package compaction
