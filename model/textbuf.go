package model

import (
	"runtime/debug"
	"strings"
)

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

// Take returns the text written so far and empties the buffer. A text of
// HugeText bytes or more is joined without holding it twice: the heap is
// first handed back to the system (what the stream left behind: its
// deltas, its lines), then each chunk is let go of once copied, and the
// heap handed back again every takeStep bytes. The joined string's memory
// is only touched as it is written, so the process holds the text about
// once (plus a step) instead of the chunks and the text side by side: an
// answer cut at a 64 MiB response cap cost 64 MiB more at that moment.
// The forced collections cost a few milliseconds each, only at that size.
func (b *TextBuffer) Take() string {
	if b.n < HugeText {
		s := b.String()
		b.Reset()
		return s
	}
	freeHeap()
	var s strings.Builder
	s.Grow(b.n)
	step := 0
	for i := range b.chunks {
		s.Write(b.chunks[i])
		step += len(b.chunks[i])
		b.chunks[i] = nil
		if step >= takeStep {
			freeHeap()
			step = 0
		}
	}
	b.Reset()
	return s.String()
}

// HugeText is the length from which Take hands memory back as it joins.
const HugeText = 4 << 20

// takeStep is how much Take copies between two hand-backs.
const takeStep = 8 << 20

// freeHeap is debug.FreeOSMemory; tests count its calls.
var freeHeap = debug.FreeOSMemory
