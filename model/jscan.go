package model

import (
	"unicode/utf16"
	"unicode/utf8"
)

// jscan is a minimal forward-only JSON scanner for the hot path: the
// per-token delta events, which are small objects whose few interesting
// fields are strings and small integers. It never allocates except to
// unescape a string. Anything it does not understand sets bad, and the
// caller falls back to encoding/json, so it only has to be right on what it
// accepts, not complete.
type jscan struct {
	b   []byte
	i   int
	bad bool
}

func (s *jscan) ws() {
	b, i := s.b, s.i
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	s.i = i
}

// strSpecial marks the bytes rawString must look at: the quote, the
// backslash, control characters and non-ASCII bytes.
var strSpecial = func() (t [256]bool) {
	for i := range t {
		t[i] = i < 0x20 || i == '"' || i == '\\' || i >= utf8.RuneSelf
	}
	return t
}()

// peek returns the next non-space byte (0 at the end).
func (s *jscan) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// open consumes c ('{' or '[').
func (s *jscan) open(c byte) bool {
	if s.peek() != c {
		s.bad = true
		return false
	}
	s.i++
	return true
}

// more reports whether another member/element follows in the object or
// array being read (closed by end), consuming separators and the closing
// byte. first must be true before the first member.
func (s *jscan) more(end byte, first bool) bool {
	c := s.peek()
	if c == end {
		s.i++
		return false
	}
	if !first {
		if c != ',' {
			s.bad = true
			return false
		}
		s.i++
		if c = s.peek(); c == end {
			s.bad = true // trailing comma
			return false
		}
	}
	if c == 0 {
		s.bad = true
		return false
	}
	return !s.bad
}

// key reads an object member name and its colon. Names with escapes,
// upper case or non-ASCII letters are refused: encoding/json matches names
// case-insensitively, and none of the names we look for has any.
func (s *jscan) key() []byte {
	raw, esc := s.rawString()
	if s.bad || esc {
		s.bad = true
		return nil
	}
	for _, c := range raw {
		if c >= 'A' && c <= 'Z' || c >= utf8.RuneSelf {
			s.bad = true
			return nil
		}
	}
	if s.peek() != ':' {
		s.bad = true
		return nil
	}
	s.i++
	return raw
}

// rawString reads a string and returns its bytes between the quotes, and
// whether they contain escapes.
func (s *jscan) rawString() (raw []byte, escaped bool) {
	if s.peek() != '"' {
		s.bad = true
		return nil, false
	}
	s.i++
	start := s.i
	ascii := true
	for s.i < len(s.b) {
		b, i := s.b, s.i
		for i < len(b) && !strSpecial[b[i]] {
			i++
		}
		s.i = i
		if s.i >= len(s.b) {
			break
		}
		c := s.b[s.i]
		switch {
		case c == '"':
			raw = s.b[start:s.i]
			s.i++
			if !ascii && !utf8.Valid(raw) {
				// encoding/json substitutes U+FFFD; let it.
				s.bad = true
			}
			return raw, escaped
		case c == '\\':
			escaped = true
			if s.i+1 >= len(s.b) {
				s.bad = true
				return nil, false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if _, ok := hex4(s.b[s.i+2:]); !ok {
					s.bad = true
					return nil, false
				}
				s.i += 6
			default:
				s.bad = true
				return nil, false
			}
		case c < 0x20:
			s.bad = true
			return nil, false
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			s.i++
		}
	}
	s.bad = true
	return nil, false
}

// str reads a string value (null reads as ""). It allocates the result.
func (s *jscan) str() string {
	if s.peek() == 'n' {
		s.null()
		return ""
	}
	raw, esc := s.rawString()
	if s.bad {
		return ""
	}
	if !esc {
		return string(raw)
	}
	out, ok := unescape(raw)
	if !ok {
		s.bad = true
		return ""
	}
	return out
}

// null consumes a null literal; it reports false (and sets nothing) when
// the next value is not null.
func (s *jscan) null() bool {
	if s.peek() == 'n' && len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// emptyArray consumes "[]" (spaces allowed); it reports false, consuming
// nothing, for anything else.
func (s *jscan) emptyArray() bool {
	if s.peek() != '[' {
		return false
	}
	save := s.i
	s.i++
	if s.peek() == ']' {
		s.i++
		return true
	}
	s.i = save
	return false
}

// int reads a small non-negative or negative integer; anything else
// (fractions, exponents, more than 9 digits) is refused.
func (s *jscan) int() int {
	s.ws()
	neg := false
	if s.i < len(s.b) && s.b[s.i] == '-' {
		neg = true
		s.i++
	}
	n, digits := 0, 0
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		n = n*10 + int(s.b[s.i]-'0')
		s.i++
		digits++
	}
	if digits == 0 || digits > 9 || digits > 1 && s.b[start] == '0' {
		s.bad = true
		return 0
	}
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case '.', 'e', 'E':
			s.bad = true
			return 0
		}
	}
	if neg {
		n = -n
	}
	return n
}

// maxDepth bounds the nesting skip follows before giving up (and leaving
// the line to encoding/json).
const maxDepth = 64

// skip passes over any value without interpreting it, checking its syntax.
func (s *jscan) skip() { s.skipDepth(0) }

func (s *jscan) skipDepth(depth int) {
	if depth > maxDepth {
		s.bad = true
		return
	}
	switch c := s.peek(); {
	case c == '"':
		s.rawString()
	case c == '{':
		s.i++
		for first := true; s.more('}', first); first = false {
			if s.key(); s.bad {
				return
			}
			if s.skipDepth(depth + 1); s.bad {
				return
			}
		}
	case c == '[':
		s.i++
		for first := true; s.more(']', first); first = false {
			if s.skipDepth(depth + 1); s.bad {
				return
			}
		}
	case c == 't':
		s.literal("true")
	case c == 'f':
		s.literal("false")
	case c == 'n':
		s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		s.number()
	default:
		s.bad = true
	}
}

func (s *jscan) literal(lit string) {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		s.bad = true
		return
	}
	s.i += len(lit)
}

// number passes over -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *jscan) number() {
	b, i := s.b, s.i
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	start := i
	if n := digits(); n == 0 || n > 1 && b[start] == '0' {
		s.bad = true
		return
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			s.bad = true
			return
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			s.bad = true
			return
		}
	}
	s.i = i
}

// end checks that nothing but space follows the top-level value.
func (s *jscan) end() bool {
	s.ws()
	return !s.bad && s.i == len(s.b)
}

// unescape decodes the escapes of a JSON string body the way encoding/json
// does (lone surrogates become U+FFFD).
func unescape(raw []byte) (string, bool) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(raw) {
			return "", false
		}
		switch raw[i+1] {
		case '"', '\\', '/':
			out = append(out, raw[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(raw[i+2:])
			if !ok {
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if len(raw)-i >= 6 && raw[i] == '\\' && raw[i+1] == 'u' {
					r2, _ = hex4(raw[i+2:])
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", false
		}
		i += 2
	}
	return string(out), true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
