package files

import (
	"slices"
	"testing"
)

func TestIgnoreRules(t *testing.T) {
	tests := []struct {
		gitignore string
		path      string
		isDir     bool
		want      bool
	}{
		{"*.log", "a.log", false, true},
		{"*.log", "deep/down/a.log", false, true},
		{"*.log", "a.logx", false, false},
		{"*.log\n!keep.log", "keep.log", false, false},
		{"*.log\n!keep.log", "x/keep.log", false, false},
		{"!keep.log\n*.log", "keep.log", false, true},
		{"build/", "build", true, true},
		{"build/", "build", false, false},
		{"build/", "src/build", true, true},
		{"/build", "build", false, true},
		{"/build", "src/build", true, false},
		{"src/gen", "src/gen", true, true},
		{"src/gen", "x/src/gen", true, false},
		{"**/gen", "a/b/gen", false, true},
		{"**/gen", "gen", false, true},
		{"a/**/b", "a/b", false, true},
		{"a/**/b", "a/x/y/b", false, true},
		{"a/**/b", "a/x/y/c", false, false},
		{"a/**", "a/x", false, true},
		{"a/**", "a/x/y", false, true},
		{"a/**", "a", true, false},
		{"doc/*.txt", "doc/a.txt", false, true},
		{"doc/*.txt", "doc/sub/a.txt", false, false},
		{"?.c", "a.c", false, true},
		{"?.c", "ab.c", false, false},
		{"[abc].o", "b.o", false, true},
		{"[!abc].o", "b.o", false, false},
		{"[!abc].o", "d.o", false, true},
		{"# comment\n\n  \n", "# comment", false, false},
		{`\#file`, "#file", false, true},
		{`\!bang`, "!bang", false, true},
		{"trail   ", "trail", false, true},
		{`space\ `, "space ", false, true},
		{"*.o\r\n", "x.o", false, true},
		{"[bad", "[bad", false, false},
		{"node_modules", "web/node_modules", true, true},
	}
	for _, tt := range tests {
		m := ignorer{"": parseIgnore(tt.gitignore)}
		if got := m.ignored(tt.path, tt.isDir); got != tt.want {
			t.Errorf("ignored(%q, dir=%v) with %q = %v, want %v", tt.path, tt.isDir, tt.gitignore, got, tt.want)
		}
	}
}

func TestIgnoreNested(t *testing.T) {
	m := ignorer{
		"":         parseIgnore("*.tmp\n/out\n"),
		"sub":      parseIgnore("!*.tmp\nlocal/\n/only-here\n"),
		"sub/deep": parseIgnore("*.tmp\n"),
	}
	tests := []struct {
		path  string
		isDir bool
		want  bool
	}{
		{"a.tmp", false, true},
		{"sub/a.tmp", false, false},     // re-included by sub/.gitignore
		{"sub/x/a.tmp", false, false},   // ...in its whole subtree
		{"sub/deep/a.tmp", false, true}, // ignored again deeper down
		{"out", true, true},
		{"sub/out", true, false}, // /out is anchored to the top
		{"sub/local", true, true},
		{"local", true, false}, // sub's rules do not apply outside sub
		{"sub/only-here", false, true},
		{"sub/x/only-here", false, false},
	}
	for _, tt := range tests {
		if got := m.ignored(tt.path, tt.isDir); got != tt.want {
			t.Errorf("ignored(%q, dir=%v) = %v, want %v", tt.path, tt.isDir, got, tt.want)
		}
	}
}

func TestGlob(t *testing.T) {
	tests := []struct {
		glob, path string
		want       bool
	}{
		{"*.go", "a.go", true},
		{"*.go", "x/y/a.go", true},
		{"*.go", "a.go.txt", false},
		{"*.{ts,tsx}", "web/a.tsx", true},
		{"*.{ts,tsx}", "web/a.js", false},
		{"src/**/*.py", "src/a/b/c.py", true},
		{"src/**/*.py", "src/c.py", true},
		{"src/**/*.py", "lib/src/c.py", false},
		{"/src/*.py", "src/c.py", true},
		{"{a,b/{c,d}}.txt", "b/d.txt", true},
		{"{a,b/{c,d}}.txt", "b/e.txt", false},
		{"file{", "file{", true},
	}
	for _, tt := range tests {
		g, ok := compileGlob(tt.glob)
		if !ok {
			t.Errorf("compileGlob(%q) failed", tt.glob)
			continue
		}
		if got := g.match(tt.path); got != tt.want {
			t.Errorf("glob %q match(%q) = %v, want %v", tt.glob, tt.path, got, tt.want)
		}
	}
	if _, ok := compileGlob("[x"); ok {
		t.Error(`compileGlob("[x") succeeded, want failure`)
	}
}

func TestExpandBraces(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"a", []string{"a"}},
		{"*.{go,md}", []string{"*.go", "*.md"}},
		{"{a,b}{1,2}", []string{"a1", "a2", "b1", "b2"}},
		{"x{a,{b,c}}y", []string{"xay", "xby", "xcy"}},
		{"open{", []string{"open{"}},
	}
	for _, tt := range tests {
		if got := expandBraces(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("expandBraces(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
