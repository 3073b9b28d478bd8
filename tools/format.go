package tools

import (
	"fmt"
	"strings"

	"github.com/apserver/apserver/tools/shell"
)

// ModelOutputBytes caps the command output included in FormatForModel's text.
const ModelOutputBytes = 16 << 10

// FormatForModel renders r as the tool output the model sees: the exit code,
// the wall time, whether the command timed out, was interrupted or had its
// output cut, and then the output, itself capped at ModelOutputBytes with its
// head and tail kept. Invalid UTF-8 is replaced.
func FormatForModel(r ExecResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Exit code: %d", r.ExitCode)
	if r.Signal != 0 {
		fmt.Fprintf(&b, " (signal %d: %s)", int(r.Signal), r.Signal)
	}
	fmt.Fprintf(&b, "\nWall time: %.1f seconds\n", r.Duration.Seconds())
	if r.TimedOut {
		b.WriteString("Timed out: the command ran past its time limit and was killed.\n")
	}
	if r.Canceled {
		b.WriteString("Interrupted: the command was canceled before it finished.\n")
	}
	out, cut := truncateMiddle(r.Output, ModelOutputBytes)
	if r.Truncated || cut {
		b.WriteString("Output truncated: the middle part was elided.\n")
	}
	b.WriteString("Output:\n")
	b.WriteString(strings.ToValidUTF8(out, "\uFFFD"))
	return b.String()
}

// DisplayCommand renders cmd the way it is run, for display in an approval
// request. Single quotes in cmd are escaped by closing the quote, adding an
// escaped quote and reopening it:
//
//	DisplayCommand("echo 'hi'") == `/bin/bash -c 'echo '\''hi'\'''`
func DisplayCommand(cmd string) string {
	return shell.Script(shellPath, cmd)
}
