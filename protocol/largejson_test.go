package protocol

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// plain returns what encoding/json makes of v (escapeHTML as given), with
// no string kept by reference anywhere, items' MarshalJSON included. Not
// parallel: it changes largeMin for the whole package.
func plain(t *testing.T, v any, escapeHTML bool) []byte {
	t.Helper()
	defer func(m int) { largeMin = m }(largeMin)
	largeMin = math.MaxInt
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// nasty is a long string of n bytes or so with everything encoding/json
// escapes, in both modes, at random places: quotes, backslashes, control
// bytes, HTML characters, U+2028/2029, multi-byte runes (some across the
// chunk boundaries of WriteTo) and invalid UTF-8.
func nasty(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 1))
	pieces := []string{"\"", "\\", "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "<", ">", "&", "\u2028", "\u2029",
		"é", "日本", "😀", "\xff", "\xe6\x97", "\x80\x80\x80\x80", "plain text ", "a"}
	var b strings.Builder
	for b.Len() < n {
		if r.IntN(4) == 0 {
			b.WriteString(pieces[r.IntN(len(pieces))])
		} else {
			b.WriteString(strings.Repeat("x", r.IntN(300)))
		}
	}
	return b.String()
}

// TestLargeItemsEncodeAsEncodingJSON: an item (and a notification that
// carries it) with long strings encodes byte for byte as encoding/json
// encodes it, whether written at once (AppendTo), in pieces (WriteTo), or
// by the item's own MarshalJSON, and with the escaping of the place each
// string is in (items: json.Marshal's, HTML escaped; around them: none).
func TestLargeItemsEncodeAsEncodingJSON(t *testing.T) {
	long := nasty(1, 3*LargeMin)
	long2 := nasty(2, LargeMin+7)
	out := long2
	items := []ThreadItem{
		UserMessageItem{ID: "u1", Content: []UserInput{{Type: "text", Text: long}, {Type: "text", Text: "short <b>"}, {Type: "text", Text: long2}}},
		AgentMessageItem{ID: "a1", Text: long},
		ReasoningItem{ID: "r1", Summary: []string{"s", long2}, Content: []string{long}},
		CommandExecutionItem{ID: "c1", Command: "yes", Cwd: "/", Status: ItemCompleted, AggregatedOutput: &out},
		ReviewModeItem{ID: "v1", Review: long},
		PlanItem{ID: "p1", Text: long2},
	}
	for _, it := range items {
		t.Run(it.ItemType(), func(t *testing.T) {
			want := plain(t, it, true)
			got, err := json.Marshal(it)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("json.Marshal(%s) differs from encoding/json's at byte %d", it.ItemType(), diffAt(got, want))
			}
			n := ItemCompletedNotification{Item: it, ThreadID: "t<1>", TurnID: "turn&1", CompletedAtMs: 7}
			for _, html := range []bool{false, true} {
				want := plain(t, n, html)
				l, ok, err := MarshalLarge(n, html)
				if err != nil || !ok {
					t.Fatalf("MarshalLarge(html %v) = ok %v, err %v; want the long strings kept", html, ok, err)
				}
				if l.Len() != len(want) {
					t.Errorf("Len() = %d, want %d", l.Len(), len(want))
				}
				if l.RawLen() >= LargeMin {
					t.Errorf("RawLen() = %d: the long strings were copied", l.RawLen())
				}
				if got := l.AppendTo([]byte("x")); !bytes.Equal(got[1:], want) || got[0] != 'x' {
					t.Errorf("AppendTo (html %v) differs from encoding/json's at byte %d", html, diffAt(got[1:], want))
				}
				var w bytes.Buffer
				if k, err := l.WriteTo(&w); err != nil || k != int64(len(want)) {
					t.Errorf("WriteTo = %d, %v; want %d, nil", k, err, len(want))
				}
				if !bytes.Equal(w.Bytes(), want) {
					t.Errorf("WriteTo (html %v) differs from encoding/json's at byte %d", html, diffAt(w.Bytes(), want))
				}
			}
		})
	}
}

// TestMarshalLargeFallsBack: where a long string is not where it can be
// swapped, or a value spells a placeholder itself, MarshalLarge says so and
// the ordinary encoding is used; nothing is lost.
func TestMarshalLargeFallsBack(t *testing.T) {
	long := strings.Repeat("z", LargeMin)
	short := struct{ A string }{"short"}
	if _, ok, _ := MarshalLarge(short, false); ok {
		t.Error("MarshalLarge kept a short string by reference")
	}
	raw := RawItem{ID: "x", Type: "x", Raw: json.RawMessage(`{"type":"x","t":"` + long + `"}`)}
	if _, ok, _ := MarshalLarge(ItemStartedNotification{Item: raw}, false); ok {
		t.Error("MarshalLarge went into a RawItem")
	}
	inMap := map[string]string{"k": long}
	if _, ok, _ := MarshalLarge(inMap, false); ok {
		t.Error("MarshalLarge went into a map")
	}
	// A value holding what looks like the first placeholder: the count
	// check refuses, the encoding is the ordinary one.
	mimic := struct{ A, B string }{long, placeholder(0)}
	if _, ok, _ := MarshalLarge(mimic, false); ok {
		t.Error("MarshalLarge accepted a placeholder that occurs twice")
	}
	got, err := json.Marshal(AgentMessageItem{ID: placeholder(0), Text: long})
	if err != nil {
		t.Fatal(err)
	}
	if want := plain(t, AgentMessageItem{ID: placeholder(0), Text: long}, true); !bytes.Equal(got, want) {
		t.Errorf("an item spelling a placeholder encodes differently at byte %d", diffAt(got, want))
	}
}

// TestChunkEnd: WriteTo's pieces never split a rune.
func TestChunkEnd(t *testing.T) {
	s := strings.Repeat("😀", 20)
	for max := utf8.UTFMax; max < len(s); max++ {
		k := chunkEnd(s, max)
		if k > max || (k < len(s) && !utf8.RuneStart(s[k])) || k == 0 {
			t.Fatalf("chunkEnd(_, %d) = %d", max, k)
		}
	}
	cont := strings.Repeat("\x80", 10)
	if k := chunkEnd(cont, 5); k != 5 {
		t.Errorf("chunkEnd(continuation bytes, 5) = %d, want 5", k)
	}
}

// FuzzEscape: appendJSONString and escapedLen agree with encoding/json on
// any string, in both escaping modes.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "a", "\"\\\n\r\t\b\f\x00<>&", "\u2028\u2029é😀", "\xff\xe6\x97", nasty(3, 500)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, html := range []bool{false, true} {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(html)
			if err := enc.Encode(s); err != nil {
				t.Fatal(err)
			}
			want := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
			if got := appendJSONString(nil, s, html); !bytes.Equal(got, want) {
				t.Fatalf("appendJSONString(%q, %v) = %s, want %s", s, html, got, want)
			}
			if n := escapedLen(s, html); n != len(want) {
				t.Fatalf("escapedLen(%q, %v) = %d, want %d", s, html, n, len(want))
			}
		}
	})
}

func diffAt(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestMarshalLargeCycle: a value that points to itself does not make
// MarshalLarge recurse forever; encoding/json's error comes back.
func TestMarshalLargeCycle(t *testing.T) {
	type node struct {
		Text string
		Next *node
	}
	n := &node{Text: strings.Repeat("c", LargeMin)}
	n.Next = n
	if _, _, err := MarshalLarge(n, false); err == nil {
		t.Error("MarshalLarge of a cycle: no error")
	}
}

// entryLike has the shape of a model history entry (untagged fields, a
// kind number, an omitempty slice), the value session stores per item.
type entryLike struct {
	Kind      int
	Text      string
	Images    []string `json:",omitempty"`
	CallID    string
	Arguments string
	Custom    bool
}

// TestMarshalIsJSONMarshal: Marshal's bytes are json.Marshal's, for values
// with and without long strings, and a value with a long string comes
// back in a buffer of exactly its size (one allocation, no slack).
func TestMarshalIsJSONMarshal(t *testing.T) {
	long := nasty(3, 2*LargeMin)
	values := []any{
		[]entryLike{{Kind: 2, Text: long}},
		[]entryLike{{Kind: 1, Text: "short <b>", Images: []string{"data:x"}}, {Kind: 3, CallID: "c", Arguments: long}},
		[]entryLike{{Kind: 1, Text: "all short & small"}},
		map[string]string{"k": long}, // a map is not looked into: json.Marshal's way
	}
	for i, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("value %d: Marshal differs from json.Marshal at byte %d", i, diffAt(got, want))
		}
		if i < 2 && cap(got) != len(got) {
			t.Errorf("value %d: Marshal returned %d bytes in a buffer of %d", i, len(got), cap(got))
		}
	}
}

// BenchmarkMarshalHistory: the history of an 8 MiB answer. B/op is about
// the answer's size with Marshal, several times it with json.Marshal.
func BenchmarkMarshalHistory(b *testing.B) {
	h := []entryLike{{Kind: 2, Text: strings.Repeat("word ", 8<<20/5)}}
	for _, c := range []struct {
		name string
		f    func(any) ([]byte, error)
	}{{"Marshal", Marshal}, {"json.Marshal", json.Marshal}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.f(h); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestHugeEncodingFreesHeapFirst: the buffer of an item's (or a value's)
// encoding of HugeEncoding bytes or more is allocated after the heap hands
// back its garbage (freeHeap); smaller encodings, and notifications
// written through WriteTo whatever their size, do not pay for that.
func TestHugeEncodingFreesHeapFirst(t *testing.T) {
	calls := 0
	defer func(f func()) { freeHeap = f }(freeHeap)
	freeHeap = func() { calls++ }
	huge := strings.Repeat("x", HugeEncoding)
	long := strings.Repeat("y", 2*LargeMin)
	check := func(what string, want int, f func() error) {
		t.Helper()
		calls = 0
		if err := f(); err != nil {
			t.Fatal(err)
		}
		if calls != want {
			t.Errorf("%s: freeHeap called %d times, want %d", what, calls, want)
		}
	}
	check("huge item", 1, func() error { _, err := json.Marshal(AgentMessageItem{ID: "a", Text: huge}); return err })
	check("huge history", 1, func() error { _, err := Marshal([]entryLike{{Kind: 2, Text: huge}}); return err })
	check("long item", 0, func() error { _, err := json.Marshal(AgentMessageItem{ID: "a", Text: long}); return err })
	check("long history", 0, func() error { _, err := Marshal([]entryLike{{Kind: 2, Text: long}}); return err })
	check("huge notification", 0, func() error {
		l, ok, err := MarshalLarge(ItemCompletedNotification{Item: AgentMessageItem{ID: "a", Text: huge}, ThreadID: "t", TurnID: "u"}, false)
		if err == nil && !ok {
			t.Fatal("notification not kept by reference")
		}
		_, err = l.WriteTo(io.Discard)
		return err
	})
}

// TestEscapeWordBoundaries: a byte that encoding/json escapes (or a
// non-ASCII one) at any place of the eight-byte words the escaping skips
// through is found there: every such byte at every offset of a short
// string, in both modes, escapes as encoding/json escapes it.
func TestEscapeWordBoundaries(t *testing.T) {
	specials := []string{"\"", "\\", "\x00", "\x1f", "\x7f", "<", ">", "&", "é", "\u2028", "\xff", " ", "~"}
	for _, sp := range specials {
		for at := 0; at <= 20; at++ {
			s := strings.Repeat("a", at) + sp + strings.Repeat("b", 20-at)
			for _, html := range []bool{false, true} {
				var b bytes.Buffer
				enc := json.NewEncoder(&b)
				enc.SetEscapeHTML(html)
				if err := enc.Encode(s); err != nil {
					t.Fatal(err)
				}
				want := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
				if got := appendJSONString(nil, s, html); !bytes.Equal(got, want) {
					t.Errorf("%q (html %v): %s, want %s", s, html, got, want)
				}
				if n := escapedLen(s, html); n != len(want) {
					t.Errorf("%q (html %v): escapedLen %d, want %d", s, html, n, len(want))
				}
			}
		}
	}
}
