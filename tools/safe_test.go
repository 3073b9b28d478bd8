package tools

import (
	"reflect"
	"testing"
)

func TestIsKnownSafe(t *testing.T) {
	tests := []struct {
		cmd  string
		want bool
	}{
		// Plain read-only commands.
		{"ls", true},
		{"ls -la src", true},
		{"cat a.go", true},
		{"head -n 20 main.go", true},
		{"tail -5 log.txt", true},
		{"wc -l *.go", true},
		{"pwd", true},
		{"echo hello world", true},
		{"printf '%s\\n' a b", true},
		{"true", true},
		{"false", true},
		{"which go", true},
		{"stat go.mod", true},
		{"file go.mod", true},
		{"du -sh .", true},
		{"df -h", true},
		{"sort names.txt", true},
		{"uniq -c names.txt", true},
		{"cut -d: -f1 /etc/passwd", true},
		{"tr a-z A-Z", true},
		{"diff a.txt b.txt", true},
		{"date +%Y", true},
		{"env", true},
		{"uname -a", true},
		{"nl main.go", true},
		{"cd src", true},
		{"grep -rn TODO .", true},
		{"rg -n 'func main' --type go", true},
		{"find . -name '*.go' -type f", true},
		{"sed -n 1,20p main.go", true},
		{"sed -n '$p' main.go", true},
		{"git status", true},
		{"git log --oneline -n 5", true},
		{"git --no-pager diff HEAD~1", true},
		{"git show HEAD:go.mod", true},
		{"git branch", true},
		{"git branch -avv", true},
		{"git branch --list 'feat/*'", true},

		// Chains of safe commands, and quoting.
		{"cd src && ls -la", true},
		{"ls; pwd", true},
		{"ls || true", true},
		{"cat a.go | grep -n func | head -n 3", true},
		{"ls\npwd\n", true},
		{`grep "a > b" file.txt`, true},
		{`grep 'x; rm -rf /' file.txt`, true},
		{`echo "it's \"quoted\""`, true},
		{`grep 'foo$' a.txt`, true},
		{`echo "cost: 5 $"`, true},
		{`grep -e \$HOME a.txt`, true},
		{"ls # just a comment", true},
		{"ls src/*.go", true},
		{"sed -n 1,5p ./*.go", true},

		// Redirections, substitutions, expansions.
		{"echo hi > f", false},
		{"echo hi >> f", false},
		{"ls 2>/dev/null", false},
		{"cat < in.txt", false},
		{"cat $(x)", false},
		{"cat `x`", false},
		{`echo "$(rm -rf x)"`, false},
		{"echo \"`id`\"", false},
		{"cat <(ls)", false},
		{"diff <(ls a) <(ls b)", false},
		{"echo $HOME", false},
		{`echo "${HOME}"`, false},
		{"echo $'\\x41'", false},
		{"(ls)", false},
		{"{ ls; }", false},
		{"ls &", false},
		{"ls |& cat", false},
		{"cat <<EOF\nx\nEOF", false},

		// Unsafe programs, or chains containing one.
		{"ls; rm -rf x", false},
		{"ls && rm -rf x", false},
		{"cat a | sh", false},
		{"rm a", false},
		{"FOO=bar ls", false},
		{"env FOO=bar ls", false},
		{"/bin/ls", false},
		{"l* -la", false},
		{"xargs rm", false},
		{"bash -c ls", false},
		{"if true; then ls; fi", false},

		// Read-only programs with writing or executing options.
		{"git push", false},
		{"git commit -m x", false},
		{"git -c core.pager=sh log", false},
		{"git -C .. status", false},
		{"git diff --output=patch.txt", false},
		{"git log --outp=x", false},
		{"git diff --ext-diff", false},
		{"git branch newbranch", false},
		{"git branch -D main", false},
		{"git branch -m a b", false},
		{"find . -delete", false},
		{"find . -name x -exec rm {} ;", false},
		{`find . -exec rm '{}' \;`, false},
		{"find . '-delete'", false},
		{"find . -fprint out.txt", false},
		{"find *", false},
		{"sed -i s/a/b/ f", false},
		{"sed -n -i 1p f", false},
		{"sed -n 1p -i f", false},
		{"sed -n 'w out' f", false},
		{"sed -n '1e rm -rf /' f", false},
		{"sed s/a/b/ f", false},
		{"sort -o out.txt in.txt", false},
		{"sort --output=out.txt in.txt", false},
		{"sort -no out.txt in.txt", false},
		{"sort --compress-program=sh in.txt", false},
		{"uniq in.txt out.txt", false},
		{"uniq -c a*", false},
		{"rg --pre sh foo", false},
		{"rg --pre=./x foo", false},
		{"rg -z foo", false},
		{"rg foo *", false},
		{"date -s 2020-01-01", false},
		{"date --set=2020-01-01", false},
		{"file -C -m magic", false},
		{"env ls", false},

		// Malformed input.
		{"", false},
		{"   ", false},
		{"echo 'unterminated", false},
		{`echo "unterminated`, false},
		{"ls \\", false},
		{"ls &&", false},
		{"| ls", false},
		{"ls ;; pwd", false},
		{"; ls", false},
	}
	for _, tt := range tests {
		if got := IsKnownSafe(tt.cmd); got != tt.want {
			t.Errorf("IsKnownSafe(%q) = %v, want %v", tt.cmd, got, tt.want)
		}
	}
}

func TestParseShellWords(t *testing.T) {
	tests := []struct {
		in   string
		want [][]string
	}{
		{`a 'b c' "d e" f\ g`, [][]string{{"a", "b c", "d e", "f g"}}},
		{`echo "a\"b" 'x'"y"z`, [][]string{{"echo", `a"b`, "xyz"}}},
		{`echo "a\nb"`, [][]string{{"echo", `a\nb`}}},
		{"a && b || c; d | e", [][]string{{"a"}, {"b"}, {"c"}, {"d"}, {"e"}}},
		{"a &&\n  b", [][]string{{"a"}, {"b"}}},
		{"a \\\n b", [][]string{{"a", "b"}}},
		{"a#b # c", [][]string{{"a#b"}}},
		{"echo ''", [][]string{{"echo", ""}}},
	}
	for _, tt := range tests {
		cmds, ok := parseShell(tt.in)
		if !ok {
			t.Errorf("parseShell(%q) failed", tt.in)
			continue
		}
		var got [][]string
		for _, c := range cmds {
			got = append(got, c.args())
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseShell(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDisplayCommand(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ls -la", `/bin/bash -c 'ls -la'`},
		{"echo 'hi'", `/bin/bash -c 'echo '\''hi'\'''`},
		{"", `/bin/bash -c ''`},
		{`echo "$HOME"`, `/bin/bash -c 'echo "$HOME"'`},
	}
	for _, tt := range tests {
		if got := DisplayCommand(tt.in); got != tt.want {
			t.Errorf("DisplayCommand(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
