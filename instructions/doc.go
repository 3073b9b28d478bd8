// Package instructions builds the instructions a turn's model gets: the
// base prompt (or the thread's own), the AGENTS.md files from the
// repository's root down to the workspace, the configured extra
// instructions, the thread's developer instructions and the note on the
// sandbox's private /tmp; the additions of the read-only
// turns (a code review, plan mode) and what is read back of a plan; and it
// lists the instruction files a workspace has (a thread's
// instructionSources).
//
// It reads those AGENTS.md files, through the thread's file-tool view of
// its roots (a link is followed only where read_file could go), and
// nothing else; it knows no thread.
package instructions
