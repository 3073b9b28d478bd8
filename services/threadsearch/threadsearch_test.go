package threadsearch

import (
	"strings"
	"testing"
)

func TestSnippet(t *testing.T) {
	long := strings.Repeat("word ", 30) + "the NEEDLE sits here " + strings.Repeat("tail ", 60)
	for _, c := range []struct {
		text, term, want string
		ok               bool
	}{
		{"a needle in\n the   hay", "NEEDLE", "a needle in the hay", true},
		{"no match here", "needle", "", false},
		{"", "x", "", false},
		{"Über straße", "STRASSE", "", false}, // no fold across lengths: ß is not ss
		{"grüße ÜBER alles", "über", "grüße ÜBER alles", true},
	} {
		got, ok := snippet(c.text, c.term)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("snippet(%.30q, %q) = %q, %v, want %q, %v", c.text, c.term, got, ok, c.want, c.ok)
		}
		if ok && !strings.Contains(strings.ToLower(got), strings.ToLower(c.term)) {
			t.Errorf("snippet(%.30q, %q) = %q lacks the term", c.text, c.term, got)
		}
	}
	// A long text: a window around the match, at most snippetLen runes,
	// starting at most snippetBefore runes before it.
	got, ok := snippet(long, "needle")
	at := strings.Index(got, "NEEDLE")
	if !ok || at < 0 || at > snippetBefore || len([]rune(got)) > snippetLen || !strings.HasPrefix(got[at:], "NEEDLE sits here tail") {
		t.Errorf("snippet(long, needle) = %q", got)
	}
}
