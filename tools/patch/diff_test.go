package patch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		context  int
		want     string
	}{
		{name: "equal", old: "a\n", new: "a\n", context: 3, want: ""},
		{
			name: "change", old: lines("a", "b", "c"), new: lines("a", "B", "c"), context: 3,
			want: lines("--- a/x", "+++ b/x", "@@ -1,3 +1,3 @@", " a", "-b", "+B", " c"),
		},
		{
			name: "add file", old: "", new: lines("a", "b"), context: 3,
			want: lines("--- /dev/null", "+++ b/x", "@@ -0,0 +1,2 @@", "+a", "+b"),
		},
		{
			name: "delete file", old: lines("a"), new: "", context: 3,
			want: lines("--- a/x", "+++ /dev/null", "@@ -1 +0,0 @@", "-a"),
		},
		{
			name: "newline added at end", old: "a\nb", new: "a\nb\n", context: 3,
			want: lines("--- a/x", "+++ b/x", "@@ -1,2 +1,2 @@", " a", "-b", `\ No newline at end of file`, "+b"),
		},
		{
			name: "no newline at end on both sides", old: "a\nb\nc", new: "A\nb\nc", context: 1,
			want: lines("--- a/x", "+++ b/x", "@@ -1,2 +1,2 @@", "-a", "+A", " b"),
		},
		{
			name: "unterminated context line", old: "a\nb", new: "A\nb", context: 3,
			want: lines("--- a/x", "+++ b/x", "@@ -1,2 +1,2 @@", "-a", "+A", " b", `\ No newline at end of file`),
		},
		{
			name: "zero context", old: lines("a", "b", "c"), new: lines("a", "x", "b", "c"), context: 0,
			want: lines("--- a/x", "+++ b/x", "@@ -1,0 +2 @@", "+x"),
		},
		{
			name: "separate hunks", old: lines("1", "2", "3", "4", "5", "6", "7"), new: lines("0", "2", "3", "4", "5", "6", "8"), context: 1,
			want: lines("--- a/x", "+++ b/x", "@@ -1,2 +1,2 @@", "-1", "+0", " 2", "@@ -6,2 +6,2 @@", " 6", "-7", "+8"),
		},
		{
			name: "close changes share a hunk", old: lines("1", "2", "3", "4"), new: lines("0", "2", "3", "5"), context: 1,
			want: lines("--- a/x", "+++ b/x", "@@ -1,4 +1,4 @@", "-1", "+0", " 2", " 3", "-4", "+5"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldName, newName := "x", "x"
			if tt.old == "" {
				oldName = ""
			}
			if tt.new == "" {
				newName = ""
			}
			got := unifiedDiff(oldName, newName, []byte(tt.old), []byte(tt.new), tt.context)
			if got != tt.want {
				t.Errorf("unifiedDiff(%q, %q) =\n%s\nwant\n%s", tt.old, tt.new, got, tt.want)
			}
			if tt.context == 3 {
				body := ""
				if parts := strings.SplitAfterN(got, "\n", 3); len(parts) == 3 {
					body = parts[2]
				}
				if h := Hunks([]byte(tt.old), []byte(tt.new)); h != body {
					t.Errorf("Hunks(%q, %q) = %q, want %q", tt.old, tt.new, h, body)
				}
			}
		})
	}
}

// gitCases are old and new contents that git apply checks unifiedDiff on.
var gitCases = []struct{ name, old, new string }{
	{"change", lines("package a", "", "func A() int {", "\treturn 1", "}"), lines("package a", "", "func A() int {", "\treturn 2", "}")},
	{"several hunks", lines("1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14"), lines("one", "2", "3", "4", "5", "6", "7", "7.5", "8", "9", "10", "11", "12", "13")},
	{"add newline at end", "a\nb", "a\nb\n"},
	{"drop newline at end", "a\nb\n", "a\nc"},
	{"unterminated on both sides", "a\nb\nc", "x\nb\nc"},
	{"CRLF", "a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\nd\r\n"},
	{"repeated lines", lines("x", "x", "x", "y", "x", "x"), lines("x", "y", "x", "x", "x", "y")},
	{"create", "", lines("new", "file")},
	{"remove", lines("old", "file"), ""},
}

// TestUnifiedDiffGitApply checks that git apply turns old into new with
// unifiedDiff's output.
func TestUnifiedDiffGitApply(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	for _, tc := range gitCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "f.txt")
			oldName, newName := "f.txt", "f.txt"
			if tc.old == "" {
				oldName = ""
			} else if err := os.WriteFile(file, []byte(tc.old), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.new == "" {
				newName = ""
			}
			diff := unifiedDiff(oldName, newName, []byte(tc.old), []byte(tc.new), 3)
			patchFile := filepath.Join(dir, "change.diff")
			if err := os.WriteFile(patchFile, []byte(diff), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(git, "apply", "--verbose", patchFile)
			cmd.Dir = dir
			// Keep git to dir and away from user and system config.
			cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git apply: %v\n%s\ndiff:\n%s", err, out, diff)
			}
			got, err := os.ReadFile(file)
			if tc.new == "" {
				if err == nil {
					t.Errorf("git apply left %q, want the file removed", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.new {
				t.Errorf("git apply of\n%s\ngave %q, want %q", diff, got, tc.new)
			}
		})
	}
}

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$`)

// applyUnified applies the hunks of a unified diff (as from Hunks) to old,
// checking every line and count, or fails the test.
func applyUnified(t *testing.T, old, diff string) string {
	t.Helper()
	a := rawLines(old)
	var out []string
	cur := 0 // lines of a copied or consumed
	ls := rawLines(diff)
	for i := 0; i < len(ls); {
		m := hunkHeader.FindStringSubmatch(strings.TrimSuffix(ls[i], "\n"))
		if m == nil {
			t.Fatalf("diff line %d: %q is not a hunk header in\n%s", i+1, ls[i], diff)
		}
		i++
		num := func(s string) int {
			if s == "" {
				return 1
			}
			n, _ := strconv.Atoi(s)
			return n
		}
		oldStart, oldCount, newStart, newCount := num(m[1]), num(m[2]), num(m[3]), num(m[4])
		if oldCount > 0 {
			oldStart--
		}
		if newCount > 0 {
			newStart--
		}
		if oldStart < cur || oldStart > len(a) {
			t.Fatalf("hunk %q starts at %d, before %d or after %d", m[0], oldStart, cur, len(a))
		}
		out = append(out, a[cur:oldStart]...)
		cur = oldStart
		if len(out) != newStart {
			t.Fatalf("hunk %q: new side starts at %d, want %d", m[0], len(out), newStart)
		}
		seenOld, seenNew := 0, 0
		for i < len(ls) && !strings.HasPrefix(ls[i], "@@") {
			l := ls[i]
			i++
			text := l[1:]
			if i < len(ls) && ls[i] == "\\ No newline at end of file\n" {
				text = strings.TrimSuffix(text, "\n")
				i++
			}
			switch l[0] {
			case ' ', '-':
				if cur >= len(a) || a[cur] != text {
					t.Fatalf("diff line %q doesn't match old line %d", l, cur+1)
				}
				if l[0] == ' ' {
					out = append(out, text)
					seenNew++
				}
				cur++
				seenOld++
			case '+':
				out = append(out, text)
				seenNew++
			default:
				t.Fatalf("bad diff line %q", l)
			}
		}
		if seenOld != oldCount || seenNew != newCount {
			t.Fatalf("hunk %q has %d old and %d new lines", m[0], seenOld, seenNew)
		}
	}
	return strings.Join(append(out, a[cur:]...), "")
}

func TestHunksLarge(t *testing.T) {
	// Beyond maxMyers lines the middle is replaced whole; still a valid diff.
	var a, b strings.Builder
	for i := range maxMyers {
		fmt.Fprintf(&a, "line %d\n", i)
		fmt.Fprintf(&b, "line %d\n", i*7%maxMyers)
	}
	old, new := "head\n"+a.String()+"tail\n", "head\n"+b.String()+"tail\n"
	d := Hunks([]byte(old), []byte(new))
	if got := applyUnified(t, old, d); got != new {
		t.Errorf("applying Hunks gave a different file")
	}
	if n := strings.Count(d, "\n@@ "); n != 0 {
		t.Errorf("Hunks has %d hunks, want one replacing the middle", n+1)
	}
}

func TestFromDiff(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     string
	}{
		{name: "same lines", old: "a\r\nb", new: "a\nb\n", want: ""},
		{
			name: "change", old: lines("1", "2", "3", "4", "5", "6", "7", "8", "9", "10"), new: lines("1", "2", "3", "4", "5", "6", "7", "8", "9", "ten"),
			want: patchText("*** Update File: d/f.txt", "@@", " 7", " 8", " 9", "-10", "+ten", "*** End of File"),
		},
		{
			name: "empty lines are rendered with a space", old: lines("a", "", "b", "c", "d", "e"), new: lines("A", "", "b", "c", "d", "e"),
			want: patchText("*** Update File: d/f.txt", "@@", "-a", "+A", " ", " b", " c"),
		},
		{
			name: "into an empty file", old: "", new: lines("a"),
			want: patchText("*** Update File: d/f.txt", "@@", "+a", "*** End of File"),
		},
		{
			// With three lines of context the second hunk would match at
			// the first "x x x z x x x"; it needs context back to "x x k".
			name: "context widened until unambiguous",
			old:  lines("a", "x", "x", "x", "k", "x", "x", "x", "z", "x", "x", "x", "k", "x", "x", "x", "z", "x", "x", "x", "e"),
			new:  lines("A", "x", "x", "x", "k", "x", "x", "x", "z", "x", "x", "x", "k", "x", "x", "x", "Z", "x", "x", "x", "e"),
			want: patchText("*** Update File: d/f.txt", "@@", "-a", "+A", " x", " x", " x",
				"@@", " x", " x", " k", " x", " x", " x", "-z", "+Z", " x", " x", " x"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fromDiff("d/f.txt", []byte(tt.old), []byte(tt.new))
			if got != tt.want {
				t.Errorf("fromDiff(%q, %q) =\n%s\nwant\n%s", tt.old, tt.new, got, tt.want)
			}
			if got == "" {
				return
			}
			p, err := Parse(got)
			if err != nil {
				t.Fatal(err)
			}
			rs, err := Apply(p, memFS(map[string]string{"d/f.txt": tt.old}))
			if err != nil {
				t.Fatal(err)
			}
			if string(rs[0].New) != tt.new {
				t.Errorf("Apply(fromDiff) = %q, want %q", rs[0].New, tt.new)
			}
		})
	}
}

// unifiedDiff returns a unified diff from before to after in git's style,
// with context lines of context around each change, or "" if they are
// equal (a test helper around hunks, which is live through Hunks). The names are relative paths, shown as a/oldName and b/newName; an
// empty name is shown as /dev/null, as for an added or deleted file. A last
// line without a newline is marked "\ No newline at end of file".
func unifiedDiff(oldName, newName string, before, after []byte, context int) string {
	body := hunks(before, after, context)
	if body == "" {
		return ""
	}
	return "--- " + diffName("a/", oldName) + "\n+++ " + diffName("b/", newName) + "\n" + body
}

func diffName(prefix, name string) string {
	if name == "" {
		return "/dev/null"
	}
	return prefix + name
}
