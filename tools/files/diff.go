package files

import (
	"bytes"

	"github.com/apserver/apserver/tools/patch"
)

// sniffLen is how much of a file the binary check looks at, as git.
const sniffLen = 8000

// isBinary reports whether data looks binary: a NUL byte near its start.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), sniffLen)], 0) >= 0
}

// unifiedDiff returns the hunks of a unified diff from old to new, without
// ---/+++ headers ("" if they are equal), as a fileChange item shows an
// update; binary contents are summarised the way git does.
func unifiedDiff(old, new []byte) string {
	if bytes.Equal(old, new) {
		return ""
	}
	if isBinary(old) || isBinary(new) {
		return "Binary files differ\n"
	}
	return patch.Hunks(old, new)
}
