// Package proctest finds processes by a marker in their command line, for
// tests that judge from outside whether what a command started is still
// alive (a sandboxed command's pids are those of its own pid namespace, so
// tests mark its processes with `exec -a MARK` instead of reading $$).
// Standard library only; Linux (/proc).
package proctest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// Marked returns the pids of live processes whose command line contains
// mark. Zombies count as gone: they run nothing and only wait to be reaped.
func Marked(mark string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(mark)) {
			continue
		}
		if State(pid) == "Z" {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// State is the one-letter state of pid from /proc/pid/stat ("R", "S",
// "Z", ...), or "" if it cannot be read.
func State(pid int) string {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return ""
	}
	return string(stat[i+2])
}
