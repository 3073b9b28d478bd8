package shell

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// summary renders the commands Parse finds, one per entry: the command
// that finally runs, then flags: D decides the exit status, P reads a pipe,
// N neutral, U unknown, O opaque, X more arguments follow.
func summary(cmds []*Command) []string {
	var out []string
	for _, c := range cmds {
		var ws []string
		for _, w := range c.Cmd() {
			s := w.Text
			switch w.Kind {
			case Glob:
				s = "glob:" + w.Pat
			case Dynamic:
				s = "$" + w.Lead
			}
			ws = append(ws, s)
		}
		flags := ""
		for _, f := range []struct {
			on bool
			c  string
		}{{c.Decides, "D"}, {c.Piped, "P"}, {c.Neutral, "N"}, {c.Unknown != "", "U"}, {c.Opaque != "", "O"}, {c.Extra, "X"}} {
			if f.on {
				flags += f.c
			}
		}
		out = append(out, strings.Join(ws, " ")+" ["+flags+"]")
	}
	return out
}

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string
	}{
		{"make test", "make test [DO]"},
		{"go test ./...", "go test ./... [D]"},
		// The form apserver runs commands in.
		{`/bin/bash -c 'make test'`, "/bin/bash -c make test [DN] | make test [DO]"},
		{`/bin/bash -c 'echo '\''hi'\'''`, "/bin/bash -c echo 'hi' [DN] | echo hi [D]"},
		{"cd x && go test ./...", "cd x [D] | go test ./... [D]"},
		{"timeout 60 pytest -q", "pytest -q [D]"},
		{"env GOFLAGS=-v sudo -u me nice -n 5 go vet", "go vet [D]"},
		{"ls | xargs -n1 cat", "ls [] | cat [DPX]"},
		// Only a pipeline's last stage decides its status, unless pipefail.
		{"make test 2>&1 | tail -5", "make test [O] | tail -5 [DP]"},
		{"set -o pipefail; make test | tail", "set -o pipefail [] | make test [DO] | tail [DP]"},
		{"set -euo pipefail\ngo test | tail", "set -euo pipefail [] | go test [D] | tail [DP]"},
		{"bash -o pipefail -c 'go test | tail'", "bash -o pipefail -c go test | tail [DN] | go test [D] | tail [DP]"},
		{"set -o pipefail; bash -c 'go test | tail'", "set -o pipefail [] | bash -c go test | tail [DN] | go test [] | tail [DP]"},
		{"(set -o pipefail); go test | tail", "set -o pipefail [] | go test [] | tail [DP]"},
		{"set -o pipefail; set +o pipefail; go test | tail", "set -o pipefail [] | set +o pipefail [] | go test [] | tail [DP]"},
		// Lists: ; hides earlier statuses, || either side's, && none.
		{"go test; echo done", "go test [] | echo done [D]"},
		{"set -e; go test; echo done", "set -e [] | go test [D] | echo done [D]"},
		{"go test || true", "go test [] | true []"},
		{"go vet && go test", "go vet [D] | go test [D]"},
		{"! go test", "go test []"},
		{"go test &", "go test []"},
		{"if go test; then echo ok; fi", "go test [] | echo ok []"},
		{"for p in a b; do go test $p; done", "go test $ []"},
		{"{ go vet; go test; }", "go vet [] | go test [D]"},
		{"(cd x && go test)", "cd x [D] | go test [D]"},
		{"echo $(go test)", "go test [] | echo $ [D]"},
		// Mentioning a command is not running it.
		{"echo go test", "echo go test [D]"},
		{"grep -r tox .", "grep -r tox . [D]"},
		{`"go" test`, "go test [D]"},
		// What cannot be read is marked.
		{"$cmd test", "$ test [DU]"},
		{`bash -c "$x"`, `bash -c $ [DU]`},
		{"python -c 'print(1)'", "python -c print(1) [DO]"},
		{"ls *.go", "ls glob:*.go [D]"},
	} {
		cmds, err := Parse(tt.in, Options{Dir: "/w"})
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if got := strings.Join(summary(cmds), " | "); got != tt.want {
			t.Errorf("Parse(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	if _, err := Parse("  # nothing\n", Options{}); !errors.Is(err, ErrEmpty) {
		t.Errorf("Parse(comment) error = %v, want ErrEmpty", err)
	}
	if _, err := Parse("echo 'open", Options{}); err == nil || errors.Is(err, ErrEmpty) {
		t.Errorf("Parse(unterminated quote) error = %v, want a syntax error", err)
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":          "''",
		"a.go":      "a.go",
		"a b":       "'a b'",
		"it's":      `'it'\''s'`,
		"$HOME":     "'$HOME'",
		"--x=1,2":   "--x=1,2",
		"func main": "'func main'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
	// Script's output reads back as the shell running the script.
	for _, s := range []string{"make test", "echo 'hi' \"there\"", "a'b'c && d"} {
		cmds, err := Parse(Script("/bin/bash", s), Options{})
		if err != nil || len(cmds) == 0 || len(cmds[0].Cmd()) != 3 || cmds[0].Cmd()[2].Text != s {
			t.Errorf("Parse(Script(%q)) = %v, %v; want /bin/bash -c %q", s, fmt.Sprint(summary(cmds)), err, s)
		}
	}
}
