package model

import (
	"strings"
	"testing"
)

func TestTextBuffer(t *testing.T) {
	for _, deltas := range [][]string{
		nil,
		{""},
		{"a"},
		{"hello", " ", "world"},
		{strings.Repeat("x", 1000), strings.Repeat("é", 70000), "tail"},
		{strings.Repeat("y", 3<<20)},
	} {
		var b TextBuffer
		var want strings.Builder
		for _, d := range deltas {
			b.WriteString(d)
			want.WriteString(d)
		}
		if got := b.String(); got != want.String() || b.Len() != want.Len() {
			t.Errorf("TextBuffer of %d deltas = %d bytes (Len %d), want %d", len(deltas), len(got), b.Len(), want.Len())
		}
		b.Reset()
		if b.String() != "" || b.Len() != 0 {
			t.Errorf("after Reset: %q", b.String())
		}
	}
}

// BenchmarkTextBuffer streams 16 MiB in 16-byte deltas and joins it: the
// bytes allocated per op are about twice the text (chunks, then the join),
// against several times for a strings.Builder.
func BenchmarkTextBuffer(b *testing.B) {
	delta := strings.Repeat("z", 16)
	const total = 16 << 20
	b.Run("TextBuffer", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var t TextBuffer
			for n := 0; n < total; n += len(delta) {
				t.WriteString(delta)
			}
			_ = t.String()
		}
	})
	b.Run("strings.Builder", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var t strings.Builder
			for n := 0; n < total; n += len(delta) {
				t.WriteString(delta)
			}
			_ = t.String()
		}
	})
}

// TestTextBufferTake: Take gives what String gives and empties the
// buffer; a huge text is joined with the heap handed back first and as
// its chunks are let go of (each hand-back sees fewer chunks held), a
// small one without any.
func TestTextBufferTake(t *testing.T) {
	var b TextBuffer
	var held []int // chunks still held at each hand-back
	defer func(f func()) { freeHeap = f }(freeHeap)
	freeHeap = func() {
		n := 0
		for _, c := range b.chunks {
			if c != nil {
				n++
			}
		}
		held = append(held, n)
	}
	for _, size := range []int{0, 5, HugeText - 1, HugeText, 3*takeStep + 12345} {
		held = nil
		delta := strings.Repeat("é", 8000)
		for b.Len() < size {
			b.WriteString(delta[:min(len(delta), size-b.Len())])
		}
		want := b.String()
		if got := b.Take(); got != want || len(got) != size {
			t.Errorf("Take of %d bytes = %d bytes, not String's", size, len(got))
		}
		if b.Len() != 0 || b.String() != "" || b.chunks != nil {
			t.Errorf("after Take of %d bytes: Len %d", size, b.Len())
		}
		if size < HugeText {
			if len(held) != 0 {
				t.Errorf("Take of %d bytes handed the heap back %d times", size, len(held))
			}
			continue
		}
		// Once first, then once per full step but perhaps the last (the
		// chunks are not a step's multiple).
		if want := 1 + max(0, size/takeStep-1); len(held) < want {
			t.Fatalf("Take of %d bytes handed the heap back %d times, want %d", size, len(held), want)
		}
		for i := 1; i < len(held); i++ {
			if held[i] >= held[i-1] {
				t.Errorf("Take of %d bytes: chunks held at each hand-back %v, want fewer each time", size, held)
				break
			}
		}
	}
}
