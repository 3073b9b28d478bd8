// Package turnwire holds what session does with a turn's parts that needs
// no thread: the TurnError of what ended a turn (a model error, a cap, a
// context the model cannot hold, in Codex's codexErrorInfo), an item's
// stored JSON, a reasoning item joined from its streamed parts, an open
// item of a failed turn closed, the service tier a request asks for, a
// response's token usage, and the refusal to steer a compaction turn.
//
// It knows no thread and no turn in flight: session calls it from the
// thread goroutine with plain values. It must not import session, server
// or store.
package turnwire
