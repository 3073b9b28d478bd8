package demo

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// ShouldColor reports whether the live view written to f may use ANSI
// colours: only when f is a terminal and NO_COLOR is unset
// (https://no-color.org).
func ShouldColor(f *os.File) bool {
	if _, ok := os.LookupEnv("NO_COLOR"); ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// style is a set of SGR attributes, e.g. "1;36" for bold cyan.
type style string

const (
	plain   style = ""
	bold    style = "1"
	dim     style = "2"
	thought style = "2;3" // dim italic: reasoning
	red     style = "31"
	green   style = "32"
	yellow  style = "33"
	cyan    style = "36"
	boldCyn style = "1;36"
	boldGrn style = "1;32"
	boldRed style = "1;31"
	boldYlw style = "1;33"
)

// wrapWidth is where streamed prose wraps.
const wrapWidth = 80

// view writes the live view. It tracks the cursor column so that streamed
// text can be word-wrapped and so that a full line (a raw protocol line, an
// error) never lands in the middle of streamed text. Only the goroutine that
// runs the demo writes to it.
type view struct {
	w     io.Writer
	color bool
	col   int    // visible column of the cursor
	space string // whitespace held back until the next word of the flow
}

func (v *view) paint(s style, text string) string {
	if !v.color || s == plain || text == "" {
		return text
	}
	return "\x1b[" + string(s) + "m" + text + "\x1b[0m"
}

// write writes text in style s; text must not contain a newline.
func (v *view) write(s style, text string) {
	io.WriteString(v.w, v.paint(s, text))
	v.col += utf8.RuneCountInString(text)
}

func (v *view) newline() {
	io.WriteString(v.w, "\n")
	v.col, v.space = 0, ""
}

// breakLine ends the current line if the cursor is not at its start.
func (v *view) breakLine() {
	if v.col > 0 {
		v.newline()
	}
}

// line writes one full line made of styled segments, on a line of its own.
func (v *view) line(segs ...seg) {
	v.breakLine()
	for _, s := range segs {
		v.write(s.style, s.text)
	}
	v.newline()
}

// seg is a styled piece of a line.
type seg struct {
	style style
	text  string
}

func sg(s style, text string) seg { return seg{s, text} }

func (v *view) linef(s style, format string, args ...any) {
	v.line(sg(s, fmt.Sprintf(format, args...)))
}

// flow streams prose: words are written as they arrive, wrapped at
// wrapWidth, every line starting with indent. A delta may end inside a word
// or in whitespace; the state carries over to the next delta.
func (v *view) flow(s style, indent, delta string) {
	for delta != "" {
		switch c := delta[0]; {
		case c == '\n':
			v.newline() // at the start of a line this makes a blank line
			delta = delta[1:]
		case c == ' ' || c == '\t' || c == '\r':
			n := 1
			for n < len(delta) && (delta[n] == ' ' || delta[n] == '\t' || delta[n] == '\r') {
				n++
			}
			if v.col > len(indent) {
				v.space += strings.Repeat(" ", n)
			}
			delta = delta[n:]
		default:
			n := 1
			for n < len(delta) && !strings.ContainsRune(" \t\r\n", rune(delta[n])) {
				n++
			}
			word := delta[:n]
			delta = delta[n:]
			w := utf8.RuneCountInString(word)
			switch {
			case v.col == 0:
				v.write(plain, indent)
			case v.space != "" && v.col+len(v.space)+w > wrapWidth:
				v.newline()
				v.write(plain, indent)
			case v.space != "":
				v.write(plain, v.space)
			}
			v.space = ""
			v.write(s, word)
		}
	}
}

// verbatim streams text as is (command output), every line starting with
// indent.
func (v *view) verbatim(s style, indent, text string) {
	for text != "" {
		i := strings.IndexByte(text, '\n')
		part := text
		if i >= 0 {
			part = text[:i]
		}
		part = strings.TrimRight(part, "\r")
		if part != "" {
			if v.col == 0 {
				v.write(plain, indent)
			}
			v.write(s, part)
		}
		if i < 0 {
			return
		}
		if v.col == 0 {
			v.write(plain, indent)
		}
		v.newline()
		text = text[i+1:]
	}
}

// rule writes a section heading: "── title ────…".
func (v *view) rule(title string) {
	v.breakLine()
	v.newline()
	head := "── " + title + " "
	v.line(sg(bold, head), sg(dim, strings.Repeat("─", max(3, wrapWidth-utf8.RuneCountInString(head)))))
}
