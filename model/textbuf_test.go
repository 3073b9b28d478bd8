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
