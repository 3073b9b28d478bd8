// Package autodrive carries out full auto for one thread: what the pure
// machine (package fullauto) decides, a Drive does. A Drive owns the
// thread's machine (rebuilt from its stored log the first time), feeds it
// events through the shared driver (internal/drive) at the clock's time,
// stores what the effects store (the log entry, receipts) before the
// reply, and carries out the rest in order: notifications, the stored
// drive, the next turn and its timers, the workspace fingerprint, the
// decision model, the attention summary, the approval ladder (AutoAnswer,
// AnswerLater, RequestWait, Settle) and, after a restart, the requests the
// drive waited on (Restore).
//
// A Drive sees its thread only through the small Thread interface (its
// id, context and goroutine, notifications, beginning a turn, interrupting
// it, the client and the thread port for a resent request, running an
// approved command under the thread's policy, a handoff); session's thread
// implements it. What every drive of a session shares (the clock, the
// store, the config, the attention summary, the decision model) is an Env.
// The turn summary the controller reads (Summarize) and the workspace
// fingerprint are here too.
//
// autodrive is a leaf (layer 4): it may import fullauto, controller,
// internal/drive, internal/clock, store, model, config, protocol,
// commandpolicy, agenttools and the tools, and must never import session,
// which uses it, nor server or runner. Every method of a Drive runs on
// its thread's goroutine, except where a doc comment says otherwise.
package autodrive
