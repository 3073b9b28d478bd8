package protocol

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"reflect"
	"runtime/debug"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Long strings in JSON. An item can carry tens of megabytes of text (a
// pasted user message, an answer cut at its response cap, a command's
// output). encoding/json copies a string that size several times on the
// way to its output: its own buffer, grown by doubling; the copy it
// returns; the copy a MarshalJSON's result is compacted into; the line it
// is written to. Large is the JSON of a value with its long strings left
// where they are: the rest is encoded normally, with a placeholder for
// each long string, and the strings are escaped only when the JSON is
// written out (AppendTo, WriteTo), straight into the destination. The
// output is byte for byte what encoding/json produces for the same value.

// LargeMin is the length from which a string is kept by reference.
const LargeMin = 64 << 10

// largeMin is LargeMin; tests raise it to get encoding/json's own output.
var largeMin = LargeMin

// Large is the JSON of a value whose long strings are escaped as it is
// written. It holds the strings, not copies; strings are immutable, so a
// Large may be written any number of times from any goroutine.
type Large struct {
	parts []largePart
	n     int // the encoded length
	raw   int // the bytes held in raw parts
}

// largePart is a run of encoded JSON (raw), or one long string, quoted and
// escaped as encoding/json escapes it (html: with '<', '>' and '&'
// escaped, as json.Marshal does; not, as an Encoder with SetEscapeHTML(false)).
type largePart struct {
	raw  []byte
	text string
	html bool
}

// Len is the length of the encoding.
func (l *Large) Len() int { return l.n }

// RawLen is what the encoding holds in memory of its own: everything but
// the long strings, which it shares with the value it was made from.
func (l *Large) RawLen() int { return l.raw }

// AppendTo appends the encoding to dst.
func (l *Large) AppendTo(dst []byte) []byte { return l.appendFrom(dst, 0) }

// appendFrom appends the encoding but its first skip bytes (of its first
// part, which is raw: the '{' of an object).
func (l *Large) appendFrom(dst []byte, skip int) []byte {
	if cap(dst)-len(dst) < l.n-skip {
		dst = append(makeLarge(len(dst)+l.n-skip), dst...)
	}
	for i, p := range l.parts {
		if p.raw != nil {
			if i == 0 {
				p.raw = p.raw[skip:]
			}
			dst = append(dst, p.raw...)
		} else {
			dst = appendJSONString(dst, p.text, p.html)
		}
	}
	return dst
}

// WriteTo writes the encoding to w, escaping the long strings through a
// small buffer.
func (l *Large) WriteTo(w io.Writer) (int64, error) {
	var total int64
	var buf []byte
	for _, p := range l.parts {
		if p.raw != nil {
			n, err := w.Write(p.raw)
			total += int64(n)
			if err != nil {
				return total, err
			}
			continue
		}
		if buf == nil {
			buf = make([]byte, 0, largeChunk+16)
		}
		s := p.text
		buf = append(buf[:0], '"')
		for len(s) > 0 {
			k := chunkEnd(s, largeChunk)
			buf = appendEscaped(buf, s[:k], p.html)
			s = s[k:]
			if len(s) == 0 {
				break
			}
			n, err := w.Write(buf)
			total += int64(n)
			if err != nil {
				return total, err
			}
			buf = buf[:0]
		}
		buf = append(buf, '"')
		n, err := w.Write(buf)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// largeChunk is how much of a long string WriteTo escapes at a time.
const largeChunk = 32 << 10

// chunkEnd is a cut of s at or before max that does not split a UTF-8
// sequence, so that escaping the pieces one by one gives what escaping s
// gives (a byte that is not a continuation byte always starts a rune, or
// is an invalid byte on its own). max is at least utf8.UTFMax.
func chunkEnd(s string, max int) int {
	if len(s) <= max {
		return len(s)
	}
	for k := max; k > max-utf8.UTFMax && k > 0; k-- {
		if utf8.RuneStart(s[k]) {
			return k
		}
	}
	return max // a run of continuation bytes: each is an invalid byte on its own
}

// MarshalLarge encodes v as an Encoder with SetEscapeHTML(escapeHTML)
// does (without the newline), keeping every string of at least LargeMin
// bytes by reference. ok is false when v holds no such string where it
// can be reached (exported fields of structs, slices, arrays, pointers,
// interfaces; inside a type with its own MarshalJSON only for this
// package's items), or when the placeholders did not come out as expected:
// then the caller encodes v the ordinary way.
func MarshalLarge(v any, escapeHTML bool) (l *Large, ok bool, err error) {
	var ph placeholders
	stripped, changed := ph.strip(reflect.ValueOf(v))
	if !changed {
		return nil, false, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(stripped.Interface()); err != nil {
		return nil, false, err
	}
	out := b.Bytes()
	out = out[:len(out)-1] // Encode ends with '\n'
	l, ok = ph.split(out)
	return l, ok, nil
}

// placeholders are the long strings taken out of a value, in order, each
// replaced by a short unique string that every escaping leaves as it is
// but for its '<' and '>': how they come out says whether the string was
// escaped for HTML.
type placeholders struct {
	texts []string
	depth int // of strip's recursion, bounded by maxStripDepth
}

// maxStripDepth bounds how deep strip looks (wire values are shallow; a
// cycle, which encoding/json refuses anyway, must not recurse forever).
const maxStripDepth = 16

// placeholderNonce makes placeholders impossible to guess: a string that
// looks like one could only make the encoding fall back, never change it
// (split checks each placeholder occurs exactly once), but it would cost
// the copies this file saves.
var placeholderNonce = func() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

func placeholder(i int) string {
	return "<apserver-large-" + placeholderNonce + "-" + strconv.Itoa(i) + ">"
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[interface{ MarshalText() ([]byte, error) }]()
)

// verbatimMarshalers are the types whose MarshalJSON encodes their
// fields as encoding/json does (tagged), so that a string swapped in one
// of their fields comes out in the same place.
var verbatimMarshalers = map[reflect.Type]bool{
	reflect.TypeFor[UserMessageItem]():       true,
	reflect.TypeFor[AgentMessageItem]():      true,
	reflect.TypeFor[ReasoningItem]():         true,
	reflect.TypeFor[PlanItem]():              true,
	reflect.TypeFor[CommandExecutionItem]():  true,
	reflect.TypeFor[FileChangeItem]():        true,
	reflect.TypeFor[ContextCompactionItem](): true,
	reflect.TypeFor[DynamicToolCallItem]():   true,
	reflect.TypeFor[McpToolCallItem]():       true,
	reflect.TypeFor[ReviewModeItem]():        true,
}

// opaque reports whether the encoding of a value of type t is not
// encoding/json's rule for its kind. The answer is kept per type: strip
// asks it of every value it walks, for every item and notification
// encoded, and the interface checks cost about a microsecond each time.
func opaque(t reflect.Type) bool {
	if v, ok := opaqueTypes.Load(t); ok {
		return v.(bool)
	}
	o := !verbatimMarshalers[t] &&
		(t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) ||
			t.Implements(textMarshalerType) || reflect.PointerTo(t).Implements(textMarshalerType))
	opaqueTypes.Store(t, o)
	return o
}

var opaqueTypes sync.Map // reflect.Type → bool: opaque's answers

// strip returns v with its long strings replaced (a copy of what had to
// change; v and what it points to are left alone), and whether it
// replaced any.
func (ph *placeholders) strip(v reflect.Value) (reflect.Value, bool) {
	if !v.IsValid() || ph.depth >= maxStripDepth {
		return v, false
	}
	ph.depth++
	defer func() { ph.depth-- }()
	t := v.Type()
	if t.Kind() != reflect.Interface && t.Kind() != reflect.Pointer && opaque(t) {
		return v, false
	}
	switch t.Kind() {
	case reflect.String:
		if v.Len() < largeMin {
			return v, false
		}
		out := reflect.New(t).Elem()
		out.SetString(placeholder(len(ph.texts)))
		ph.texts = append(ph.texts, v.String())
		return out, true
	case reflect.Interface:
		if v.IsNil() {
			return v, false
		}
		e, changed := ph.strip(v.Elem())
		if !changed {
			return v, false
		}
		out := reflect.New(t).Elem()
		out.Set(e)
		return out, true
	case reflect.Pointer:
		if v.IsNil() {
			return v, false
		}
		e, changed := ph.strip(v.Elem()) // the element says whether it is opaque
		if !changed {
			return v, false
		}
		out := reflect.New(t.Elem())
		out.Elem().Set(e)
		return out, true
	case reflect.Struct:
		var out reflect.Value
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			f, changed := ph.strip(v.Field(i))
			if !changed {
				continue
			}
			if !out.IsValid() {
				out = reflect.New(t).Elem()
				out.Set(v)
			}
			out.Field(i).Set(f)
		}
		if !out.IsValid() {
			return v, false
		}
		return out, true
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && (v.IsNil() || t.Elem().Kind() == reflect.Uint8) {
			return v, false
		}
		var out reflect.Value
		for i := 0; i < v.Len(); i++ {
			e, changed := ph.strip(v.Index(i))
			if !changed {
				continue
			}
			if !out.IsValid() {
				if t.Kind() == reflect.Slice {
					out = reflect.MakeSlice(t, v.Len(), v.Len())
					reflect.Copy(out, v)
				} else {
					out = reflect.New(t).Elem()
					out.Set(v)
				}
			}
			out.Index(i).Set(e)
		}
		if !out.IsValid() {
			return v, false
		}
		return out, true
	}
	return v, false
}

// split cuts the encoding of the stripped value at its placeholders. Each
// must occur exactly once, as a whole JSON string, escaped for HTML or
// not, and in order.
func (ph *placeholders) split(enc []byte) (*Large, bool) {
	l := &Large{}
	rest := enc
	for i, text := range ph.texts {
		p := placeholder(i)
		plain := []byte(strconv.Quote(p)) // only ASCII letters, digits, '-', '<', '>'
		html := bytes.ReplaceAll(bytes.ReplaceAll(plain, []byte("<"), []byte(`\u003c`)), []byte(">"), []byte(`\u003e`))
		if bytes.Count(enc, plain)+bytes.Count(enc, html) != 1 {
			return nil, false
		}
		form, isHTML := plain, false
		at := bytes.Index(rest, plain)
		if at < 0 {
			form, isHTML = html, true
			at = bytes.Index(rest, html)
		}
		if at < 0 {
			return nil, false // out of order
		}
		if at > 0 {
			l.add(largePart{raw: rest[:at]})
		}
		l.add(largePart{text: text, html: isHTML})
		rest = rest[at+len(form):]
	}
	if len(rest) > 0 {
		l.add(largePart{raw: rest})
	}
	return l, true
}

func (l *Large) add(p largePart) {
	l.parts = append(l.parts, p)
	if p.raw != nil {
		l.n += len(p.raw)
		l.raw += len(p.raw)
	} else {
		l.n += escapedLen(p.text, p.html)
	}
}

const hexDigits = "0123456789abcdef"

// needsEscape reports, for an ASCII byte, whether encoding/json escapes it.
func needsEscape(c byte, html bool) bool {
	return c < 0x20 || c == '"' || c == '\\' || (html && (c == '<' || c == '>' || c == '&'))
}

// Eight bytes at a time: safeRun skips the run of bytes at the start of s
// that encoding/json copies as they are (ASCII, not escaped), testing a
// word of eight at once for a byte that is not one (the "has a byte less
// than n / equal to b" tests are exact for whether some byte matches).
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

func hasLess(v uint64, n byte) bool { return (v-ones*uint64(n))&^v&highs != 0 }
func hasByte(v uint64, b byte) bool { return hasLess(v^(ones*uint64(b)), 1) }

// safeRun is the length of the longest prefix of s whose bytes are ASCII
// and not escaped by encoding/json (escapeHTML as html).
func safeRun(s string, html bool) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		v := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if v&highs != 0 || hasLess(v, 0x20) || hasByte(v, '"') || hasByte(v, '\\') ||
			(html && (hasByte(v, '<') || hasByte(v, '>') || hasByte(v, '&'))) {
			break
		}
	}
	for i < len(s) && s[i] < utf8.RuneSelf && !needsEscape(s[i], html) {
		i++
	}
	return i
}

// escapedLen is the length of appendJSONString(nil, s, html).
func escapedLen(s string, html bool) int {
	n := 2
	for i := 0; i < len(s); {
		if k := safeRun(s[i:], html); k > 0 {
			n += k
			i += k
			if i == len(s) {
				break
			}
		}
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case !needsEscape(c, html):
				n++
			case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			default:
				n += 6
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// AppendJSONString appends s quoted and escaped exactly as encoding/json
// does without HTML escaping ('<', '>' and '&' as they are): invalid UTF-8
// becomes U+FFFD, U+2028 and U+2029 are escaped. It is the one escaper of
// apserver's output (server's message lines use it too).
func AppendJSONString(dst []byte, s string) []byte { return appendJSONString(dst, s, false) }

// appendJSONString appends s quoted and escaped exactly as encoding/json
// does (escapeHTML as html).
func appendJSONString(dst []byte, s string, html bool) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, s, html)
	return append(dst, '"')
}

// appendEscaped is appendJSONString without the quotes.
func appendEscaped(dst []byte, s string, html bool) []byte {
	start := 0
	for i := 0; i < len(s); {
		if i += safeRun(s[i:], html); i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if !needsEscape(c, html) {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// Marshal is json.Marshal(v), but a value holding a string of LargeMin
// bytes or more is encoded into one allocation of the result's exact size:
// json.Marshal grows its buffer by doubling and then returns a copy of it,
// which for the history of a 64 MiB answer is three or four times the
// answer at once. The bytes are the same as json.Marshal's.
func Marshal(v any) ([]byte, error) {
	l, ok, err := MarshalLarge(v, true)
	if err != nil {
		return nil, err
	}
	if !ok {
		return json.Marshal(v)
	}
	return l.AppendTo(makeLarge(l.Len())), nil
}

// HugeEncoding is the size from which an encoding's buffer is allocated
// only after the heap has handed back to the system the memory it no
// longer uses (debug.FreeOSMemory). An encoding that size is made once
// per item, to be stored, and it comes at the worst moment: beside the
// item's text, and with what the text was built from still resident
// until the runtime collects it (the request line a 10 MiB user message
// was decoded from; the chunks an answer cut at its cap was streamed
// into). For a 10 MiB user message the server's peak RSS went from
// 76.5 MB to 66.4 MB. Notifications are written by WriteTo, which
// allocates nothing that size, and never pay for it.
const HugeEncoding = 4 << 20

// freeHeap is debug.FreeOSMemory; tests count its calls.
var freeHeap = debug.FreeOSMemory

// makeLarge is make([]byte, 0, n), after freeHeap when n is HugeEncoding
// or more.
func makeLarge(n int) []byte {
	if n >= HugeEncoding {
		freeHeap()
	}
	return make([]byte, 0, n)
}
