package model

import "strings"

// TextBuffer accumulates streamed text (a message's deltas) in chunks, so
// that a long answer costs its own size while it streams, and once more
// when String joins it: a strings.Builder grown delta by delta allocates
// its final size several times over on the way (each growth copies into a
// larger block, and the blocks left behind stay resident until the
// runtime returns them), which at a response cap of 64 MiB was hundreds
// of megabytes. The zero value is an empty buffer.
type TextBuffer struct {
	chunks [][]byte
	n      int
}

const (
	minTextChunk = 512
	maxTextChunk = 256 << 10
)

// WriteString appends s.
func (b *TextBuffer) WriteString(s string) {
	b.n += len(s)
	for len(s) > 0 {
		if k := len(b.chunks); k == 0 || len(b.chunks[k-1]) == cap(b.chunks[k-1]) {
			size := minTextChunk
			if k > 0 {
				size = min(2*cap(b.chunks[k-1]), maxTextChunk)
			}
			b.chunks = append(b.chunks, make([]byte, 0, size))
		}
		last := &b.chunks[len(b.chunks)-1]
		m := min(len(s), cap(*last)-len(*last))
		*last = append(*last, s[:m]...)
		s = s[m:]
	}
}

// Len is the number of bytes written.
func (b *TextBuffer) Len() int { return b.n }

// String returns the text written so far: one allocation of its size.
func (b *TextBuffer) String() string {
	if b.n == 0 {
		return ""
	}
	var s strings.Builder
	s.Grow(b.n)
	for _, c := range b.chunks {
		s.Write(c)
	}
	return s.String()
}

// Reset empties the buffer and lets go of its memory.
func (b *TextBuffer) Reset() { *b = TextBuffer{} }
