// Package brain owns the project brain as pure functions:
//
//   - Apply: the transitions of a decision (record, update, confirm,
//     revoke, supersede), the one place where a decision's status changes,
//     so that the store's event log replays them;
//   - Snapshot and Memory: the project snapshot and the memory of
//     decisions rendered to Markdown, deterministic for the same state
//     (the projections .apserver/snapshot.md and .apserver/memory.md);
//   - Build: the context block a stage or thread is given, within a token
//     budget per role, in a fixed section order, decisions ranked by how
//     their scope matches the task's files and nodes;
//   - Check: the alignment first pass, deterministic rules over an action
//     (a file write, a deletion, a command) against the task's scope and
//     the active decisions; ValidatorPrompt and ParseVerdict frame the
//     validator model's second pass for what the rules cannot settle.
//
// See docs/brain.md. brain has no goroutines, no I/O and no clock reads;
// it imports only protocol and the standard library.
package brain
