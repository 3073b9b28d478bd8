//go:build !linux

package main

import "os"

// stdinIsTerminal reports whether stdin is a character device other than
// /dev/null (the Linux build asks the terminal driver).
func stdinIsTerminal() bool {
	fi, err := os.Stdin.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}
