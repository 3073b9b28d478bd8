package patch

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// lines joins its arguments with newlines and ends them with one.
func lines(ls ...string) string {
	return strings.Join(ls, "\n") + "\n"
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []FileOp
	}{
		{
			name: "every directive",
			text: lines(
				"*** Begin Patch",
				"*** Add File: path/new.txt",
				"+line1",
				"+line2",
				"*** Update File: path/old.go",
				"*** Move to: path/renamed.go",
				"@@ func foo() {",
				" context line",
				"-removed",
				"+added",
				" context line",
				"*** End of File",
				"*** Delete File: path/gone.txt",
				"*** End Patch",
			),
			want: []FileOp{
				{Kind: Add, Path: "path/new.txt", Contents: "line1\nline2\n", Line: 2},
				{Kind: Update, Path: "path/old.go", MoveTo: "path/renamed.go", Line: 5, Hunks: []Hunk{{
					Context: []string{"func foo() {"},
					Lines:   []Line{{' ', "context line"}, {'-', "removed"}, {'+', "added"}, {' ', "context line"}},
					EOF:     true,
					Line:    8,
				}}},
				{Kind: Delete, Path: "path/gone.txt", Line: 13},
			},
		},
		{
			name: "heredoc with quoted word",
			text: lines(
				"apply_patch <<'EOF'",
				"*** Begin Patch",
				"*** Delete File: a",
				"*** End Patch",
				"EOF",
			),
			want: []FileOp{{Kind: Delete, Path: "a", Line: 3}},
		},
		{
			name: "bare heredoc without closing word",
			text: lines(
				"<<EOF",
				"*** Begin Patch",
				"*** Delete File: a",
				"*** End Patch",
			),
			want: []FileOp{{Kind: Delete, Path: "a", Line: 3}},
		},
		{
			name: "surrounding whitespace and CRLF",
			text: "\n  \r\n  *** Begin Patch  \r\n*** Update File:  a.go \r\n@@\r\n-x\r\n+y\r\n\t*** End Patch\r\n\r\n",
			want: []FileOp{{Kind: Update, Path: "a.go", Line: 4, Hunks: []Hunk{{
				Lines: []Line{{'-', "x"}, {'+', "y"}},
				Line:  6,
			}}}},
		},
		{
			name: "blank lines inside and after hunks",
			text: lines(
				"*** Begin Patch",
				"*** Update File: a",
				" a",
				"",
				"\t",
				" b",
				"-c",
				" ",
				"",
				"",
				"@@",
				"+d",
				"",
				"*** End of File",
				"",
				"*** End Patch",
			),
			want: []FileOp{{Kind: Update, Path: "a", Line: 2, Hunks: []Hunk{
				{Lines: []Line{{' ', "a"}, {' ', ""}, {' ', ""}, {' ', "b"}, {'-', "c"}, {' ', ""}}, Line: 3},
				{Lines: []Line{{'+', "d"}}, EOF: true, Line: 12},
			}}},
		},
		{
			name: "nested and unified-style @@ lines",
			text: lines(
				"*** Begin Patch",
				"*** Update File: a.py",
				"@@ class A:",
				"@@     def f(self):  ",
				"-        return 1",
				"+        return 2",
				"@@ -10,7 +10,7 @@ def g():",
				" x",
				"@@ -1 +1 @@",
				"@@",
				"-y",
				"*** End Patch",
			),
			want: []FileOp{{Kind: Update, Path: "a.py", Line: 2, Hunks: []Hunk{
				{Context: []string{"class A:", "    def f(self):"}, Lines: []Line{{'-', "        return 1"}, {'+', "        return 2"}}, Line: 5},
				{Context: []string{"def g():"}, Lines: []Line{{' ', "x"}}, Line: 8},
				{Lines: []Line{{'-', "y"}}, Line: 11},
			}}},
		},
		{
			name: "add with blank lines and empty add",
			text: lines(
				"*** Begin Patch",
				"*** Add File: a",
				"+x",
				"",
				"+",
				"+y",
				"",
				"*** Add File: empty",
				"*** End Patch",
			),
			want: []FileOp{
				{Kind: Add, Path: "a", Contents: "x\n\n\ny\n", Line: 2},
				{Kind: Add, Path: "empty", Line: 8},
			},
		},
		{
			name: "pure move, directive text in hunk lines",
			text: lines(
				"*** Begin Patch",
				"*** Update File: a",
				"",
				"*** Move to: b",
				"*** Update File: c",
				" *** End Patch",
				"-*** Delete File: d",
				"+*** End of File",
				"*** End Patch",
			),
			want: []FileOp{
				{Kind: Update, Path: "a", MoveTo: "b", Line: 2},
				{Kind: Update, Path: "c", Line: 5, Hunks: []Hunk{{
					Lines: []Line{{' ', "*** End Patch"}, {'-', "*** Delete File: d"}, {'+', "*** End of File"}},
					Line:  6,
				}}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.text)
			if err != nil {
				t.Fatalf("Parse = %v", err)
			}
			if !reflect.DeepEqual(p.Ops, tt.want) {
				t.Errorf("Parse ops = %+v\nwant %+v", p.Ops, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		text string
		want string
	}{
		{"empty", "", `patch line 1: empty patch: ""`},
		{"blank", "\n  \n", `patch line 1: empty patch: ""`},
		{"only heredoc", "<<'EOF'\nEOF\n", `patch line 1: empty patch: "<<'EOF'"`},
		{"no begin", lines("", "*** Update File: a", "*** End Patch"), `patch line 2: patch must start with *** Begin Patch: "*** Update File: a"`},
		{"only begin", lines("*** Begin Patch"), `patch line 1: patch must end with *** End Patch: "*** Begin Patch"`},
		{"no end", lines("*** Begin Patch", "*** Delete File: a"), `patch line 2: patch must end with *** End Patch: "*** Delete File: a"`},
		{"text after end", lines("*** Begin Patch", "*** Delete File: a", "*** End Patch", "thanks!"), `patch line 4: patch must end with *** End Patch: "thanks!"`},
		{"no operations", lines("*** Begin Patch", "", "*** End Patch"), `patch line 3: patch has no file operations: "*** End Patch"`},
		{"unknown directive", lines("*** Begin Patch", "*** Rename File: a", "*** End Patch"), `patch line 2: expected "*** Add File:", "*** Update File:" or "*** Delete File:": "*** Rename File: a"`},
		{"end patch twice", lines("*** Begin Patch", "*** Delete File: a", "*** End Patch", "*** Delete File: b", "*** End Patch"), `patch line 3: expected "*** Add File:", "*** Update File:" or "*** Delete File:": "*** End Patch"`},
		{"add empty path", lines("*** Begin Patch", "*** Add File:  ", "+x", "*** End Patch"), `patch line 2: empty path: "*** Add File:  "`},
		{"delete empty path", lines("*** Begin Patch", "*** Delete File:", "*** End Patch"), `patch line 2: empty path: "*** Delete File:"`},
		{"update empty path", lines("*** Begin Patch", "*** Update File: ", "*** End Patch"), `patch line 2: empty path: "*** Update File: "`},
		{"move empty path", lines("*** Begin Patch", "*** Update File: a", "*** Move to:", "*** End Patch"), `patch line 3: empty path: "*** Move to:"`},
		{"update without hunks", lines("*** Begin Patch", "*** Update File: a", "", "*** Delete File: b", "*** End Patch"), `patch line 2: update has no hunks: "*** Update File: a"`},
		{"add line without plus", lines("*** Begin Patch", "*** Add File: a", "+x", "y", "*** End Patch"), `patch line 4: expected "*** Add File:", "*** Update File:" or "*** Delete File:": "y"`},
		{"bad first hunk line", lines("*** Begin Patch", "*** Update File: a", "x", "*** End Patch"), `patch line 3: expected a hunk line starting with ' ', '-' or '+': "x"`},
		{"bad line after @@", lines("*** Begin Patch", "*** Update File: a", "@@ f", "", "x", "*** End Patch"), `patch line 5: expected a hunk line starting with ' ', '-' or '+': "x"`},
		{"bad line mid-update", lines("*** Begin Patch", "*** Update File: a", "@@", "-a", "+b", "oops", " c", "*** End Patch"), `patch line 6: expected a hunk line starting with ' ', '-' or '+': "oops"`},
		{"empty hunk", lines("*** Begin Patch", "*** Update File: a", "@@ f", "", "*** End Patch"), `patch line 3: hunk has no lines: "@@ f"`},
		{"empty hunk before @@", lines("*** Begin Patch", "*** Update File: a", "-x", "@@ f", "*** End of File", "*** End Patch"), `patch line 4: hunk has no lines: "@@ f"`},
		{"bare @@ after context", lines("*** Begin Patch", "*** Update File: a", "@@ f", "@@", "-x", "*** End Patch"), `patch line 4: bare @@ after an @@ context line: "@@"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.text)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse = %+v, %v; want a *ParseError", p, err)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("Parse error = %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{Add: "add", Update: "update", Delete: "delete", 0: "Kind(0)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
}
