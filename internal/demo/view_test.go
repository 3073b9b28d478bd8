package demo

import (
	"bytes"
	"strings"
	"testing"
)

func TestFlowWrapsStreamedWords(t *testing.T) {
	var b bytes.Buffer
	v := &view{w: &b}
	text := strings.Repeat("lorem ipsum dolor ", 12) + "end.\n\nNext paragraph."
	// Feed it the way the model streams: a word and its trailing space per delta.
	for _, d := range strings.SplitAfter(text, " ") {
		v.flow(plain, "  ", d)
	}
	v.breakLine()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for _, l := range lines {
		if len([]rune(l)) > wrapWidth {
			t.Errorf("line longer than %d: %q", wrapWidth, l)
		}
		if l != "" && !strings.HasPrefix(l, "  ") {
			t.Errorf("line without indent: %q", l)
		}
		if strings.HasSuffix(l, " ") {
			t.Errorf("trailing space: %q", l)
		}
	}
	if got, want := strings.Join(strings.Fields(b.String()), " "), strings.Join(strings.Fields(text), " "); got != want {
		t.Errorf("words changed:\n got %q\nwant %q", got, want)
	}
	if !strings.Contains(b.String(), "end.\n\n  Next paragraph.\n") {
		t.Errorf("paragraph break lost:\n%s", b.String())
	}
}

func TestVerbatimIndentsPartialLines(t *testing.T) {
	var b bytes.Buffer
	v := &view{w: &b}
	for _, d := range []string{"ok  a\nok", "  b\n", "all 2 tests passed\n"} {
		v.verbatim(plain, "    ", d)
	}
	want := "    ok  a\n    ok  b\n    all 2 tests passed\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestColorOnlyWhenAsked(t *testing.T) {
	var b bytes.Buffer
	v := &view{w: &b}
	v.line(sg(boldRed, "x"), sg(thought, "y"))
	v.flow(thought, "", "z ")
	if strings.Contains(b.String(), "\x1b") {
		t.Errorf("escape without colour: %q", b.String())
	}
	v.breakLine()
	b.Reset()
	v.color = true
	v.line(sg(boldRed, "x"))
	if b.String() != "\x1b[1;31mx\x1b[0m\n" {
		t.Errorf("colour: %q", b.String())
	}
}

func TestShellBody(t *testing.T) {
	for in, want := range map[string]string{
		`/bin/bash -c 'sh test.sh'`:       "sh test.sh",
		`/bin/bash -lc 'echo '\''hi'\'''`: "echo 'hi'",
		`sh test.sh`:                      "sh test.sh",
		`/usr/bin/zsh -c 'ls'`:            "ls",
	} {
		if got := shellBody(in); got != want {
			t.Errorf("shellBody(%q) = %q, want %q", in, got, want)
		}
	}
}
