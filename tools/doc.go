// Package tools runs the tools a coding-agent turn calls: shell commands
// and, in its subpackages, file edits, patches, checkpoints and watches.
//
// For commands it owns the mechanics (a process group per command, stdin
// from /dev/null, stdout and stderr interleaved in one pipe, streamed
// output, timeouts, interrupts, and a bounded output buffer), the text the
// model sees as the tool result (FormatForModel), how a command is shown
// (DisplayCommand, the `/bin/bash -c '...'` form it runs in), and a
// best-effort reading of what a command does, for display
// (ParseCommandActions). Reading a command string is tools/shell's job;
// deciding whether it may run is tools/rules'.
//
// tools knows nothing of threads, turns or items; the caller maps results
// onto those. It must not import session, server, store or model.
//
// Exec relies on Linux process-group and waitid semantics.
package tools
