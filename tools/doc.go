// Package tools runs the tools a coding-agent turn calls: today shell
// commands, later file edits.
//
// For commands it owns the mechanics (a process group per command, stdin from
// /dev/null, stdout and stderr interleaved in one pipe, streamed output,
// timeouts, interrupts, and a bounded output buffer), the text the model sees
// as the tool result, and the classification of a command string: whether it
// is known to be read-only (so it can run without asking the user) and a
// best-effort reading of what it does, for display.
//
// tools knows nothing of threads, turns or items; the caller maps results
// onto those. It must not import session, server, store or model.
//
// Exec relies on Linux process-group and waitid semantics.
package tools
