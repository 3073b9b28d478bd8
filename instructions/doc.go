// Package instructions builds the instructions a turn's model gets: the
// base prompt (or the thread's own), the workspace's AGENTS.md, the
// configured extra instructions, the thread's developer instructions and
// the note on the sandbox's private /tmp; the additions of the read-only
// turns (a code review, plan mode) and what is read back of a plan; and it
// lists the instruction files a workspace has (a thread's
// instructionSources).
//
// It reads AGENTS.md in the workspace it is given, through the thread's
// file-tool view of its roots (a link is followed only where read_file
// could go), and nothing else; it knows no thread.
package instructions
