package rules

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	src := "# comments\r\n" + `allow go test
allow go build   # trailing comment
  match: go build ./...
  match: sudo go build
  not-match: go vet ./...

prompt npm install
forbidden git push
	reason: pushing publishes work; a human must do it
  match: git push origin main
allow 'my tool' "--flag=a b" *
`
	got, err := Parse("rules", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{
		{Decision: Allow, Prefix: []string{"go", "test"}, Source: "rules", Line: 2},
		{Decision: Allow, Prefix: []string{"go", "build"}, Source: "rules", Line: 3,
			Match: []string{"go build ./...", "sudo go build"}, NotMatch: []string{"go vet ./..."}},
		{Decision: Prompt, Prefix: []string{"npm", "install"}, Source: "rules", Line: 8},
		{Decision: Forbidden, Prefix: []string{"git", "push"}, Source: "rules", Line: 9,
			Reason: "pushing publishes work; a human must do it", Match: []string{"git push origin main"}},
		{Decision: Allow, Prefix: []string{"my tool", "--flag=a b", "*"}, Source: "rules", Line: 12},
	}
	if len(got) != len(want) {
		t.Fatalf("Parse returned %d rules, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Decision != w.Decision || !slices.Equal(g.Prefix, w.Prefix) || g.Source != w.Source ||
			g.Line != w.Line || g.Reason != w.Reason || !slices.Equal(g.Match, w.Match) || !slices.Equal(g.NotMatch, w.NotMatch) {
			t.Errorf("rule %d = %+v, want %+v", i, g, w)
		}
	}
	if s := got[4].String(); s != `allow 'my tool' '--flag=a b' *` {
		t.Errorf("String() = %q", s)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		src  string
		want string
	}{
		{"deny git push", `f:1: unknown decision "deny" (want allow, prompt, forbidden or check)`},
		{"# c\n  match: ls", `f:2: indented line "match: ls" must follow a rule`},
		{"match: ls", `f:1: match: must be indented under a rule`},
		{"allow", `f:1: the rule names no command`},
		{"allow go\n  frob: x", `f:2: unknown directive "frob: x" (want match:, not-match: or reason:)`},
		{"allow go\n  go test", `f:2: unknown directive "go test" (want match:, not-match: or reason:)`},
		{"allow go\n  match:", `f:2: match: needs a value`},
		{"allow go\n  reason: a\n  reason: b", `f:3: the rule has a reason already`},
		{"allow echo $HOME", `f:1: $HOME is not a plain word: quote it`},
		{"allow ls | grep x", `f:1: "ls | grep x" is not a command prefix: write plain words, quoting any shell operators`},
		{"allow FOO=1 make", `f:1: "FOO=1 make" is not a command prefix: write plain words, quoting any shell operators`},
		{"allow 'go", "f:1: cannot parse \"'go\": 1:1: reached EOF without closing quote `'`"},
		{"allow go build\n  match: go build ./...\n  match: go vet ./...",
			`f:3: example "go vet ./..." does not match rule "allow go build"`},
		{"allow go build\n\n  not-match: sudo go build -o x",
			`f:3: not-match example "sudo go build -o x" matches rule "allow go build"`},
		{"forbidden git push\n  match: git $cmd",
			`f:2: cannot tell whether example "git $cmd" matches rule "forbidden git push"`},
		{"forbidden git push\n  not-match: git pu*",
			`f:2: not-match example "git pu*" matches rule "forbidden git push"`},
		{"allow ls\n  match: ls 'x",
			"f:2: cannot parse example \"ls 'x\": 1:4: reached EOF without closing quote `'`"},
	}
	for _, tc := range tests {
		_, err := Parse("f", []byte(tc.src))
		var le *LoadError
		if !errors.As(err, &le) {
			t.Errorf("Parse(%q) error = %v, want a *LoadError", tc.src, err)
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("Parse(%q) error = %q, want %q", tc.src, err, tc.want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	user := filepath.Join(dir, "user")
	ws := filepath.Join(dir, "ws-rules")
	bad := filepath.Join(dir, "bad")
	write := func(path, src string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(user, "allow npm install\n")
	write(ws, "forbidden npm install\n  reason: use pnpm\n")
	write(bad, "allow go build\n  match: go vet\n")

	s, err := Load(filepath.Join(dir, "missing"), user, ws)
	if err != nil {
		t.Fatal(err)
	}
	rules := s.Rules()
	n := len(Builtin().Rules())
	if len(rules) != n+2 || rules[n].Source != user || rules[n+1].Source != ws || rules[n+1].Line != 1 {
		t.Fatalf("Load: %d rules, the last %v; want builtin then %s, %s", len(rules), rules[len(rules)-2:], user, ws)
	}
	if v := s.Evaluate("npm install", testCtx); v.Decision != Forbidden || v.Rule.Source != ws {
		t.Errorf("npm install = %v by %v, want forbidden by %s", v.Decision, v.Rule, ws)
	}

	_, err = Load(user, bad, ws)
	var le *LoadError
	if !errors.As(err, &le) || le.File != bad || le.Line != 2 {
		t.Fatalf("Load with a bad file: %v, want a LoadError at %s:2", err, bad)
	}

	if _, err := Load(dir); err == nil {
		t.Error("Load(directory) succeeded")
	}

	s, err = Load()
	if err != nil || len(s.Rules()) != n {
		t.Errorf("Load() = %d rules, %v; want the %d builtin rules", len(s.Rules()), err, n)
	}
}
