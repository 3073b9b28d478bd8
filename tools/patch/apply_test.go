package patch

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"testing"
)

// memFS returns a read function over files.
func memFS(files map[string]string) func(string) ([]byte, error) {
	return func(name string) ([]byte, error) {
		s, ok := files[name]
		if !ok {
			return nil, fmt.Errorf("open %s: %w", name, fs.ErrNotExist)
		}
		return []byte(s), nil
	}
}

// patchText wraps body lines in Begin/End markers.
func patchText(body ...string) string {
	return lines(append(append([]string{"*** Begin Patch"}, body...), "*** End Patch")...)
}

func TestApply(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		patch string
		want  []Result
	}{
		{
			name:  "add",
			patch: patchText("*** Add File: d/new.txt", "+hello", "+world"),
			want:  []Result{{Kind: Add, Path: "d/new.txt", New: []byte("hello\nworld\n")}},
		},
		{
			name:  "add overwrites",
			files: map[string]string{"a": "old\n"},
			patch: patchText("*** Add File: a", "+new"),
			want:  []Result{{Kind: Add, Path: "a", Old: []byte("old\n"), New: []byte("new\n")}},
		},
		{
			name:  "delete",
			files: map[string]string{"a": "x\n"},
			patch: patchText("*** Delete File: a"),
			want:  []Result{{Kind: Delete, Path: "a", Old: []byte("x\n")}},
		},
		{
			name:  "update",
			files: map[string]string{"a.go": "package a\n\nfunc A() int {\n\treturn 1\n}\n"},
			patch: patchText("*** Update File: a.go", "@@ func A() int {", "-\treturn 1", "+\treturn 2"),
			want: []Result{{Kind: Update, Path: "a.go",
				Old: []byte("package a\n\nfunc A() int {\n\treturn 1\n}\n"),
				New: []byte("package a\n\nfunc A() int {\n\treturn 2\n}\n")}},
		},
		{
			name:  "update and move",
			files: map[string]string{"a": "x\ny\n"},
			patch: patchText("*** Update File: a", "*** Move to: b/c", " x", "-y", "+z"),
			want:  []Result{{Kind: Update, Path: "a", MoveTo: "b/c", Old: []byte("x\ny\n"), New: []byte("x\nz\n")}},
		},
		{
			name:  "pure move",
			files: map[string]string{"a": "x\n"},
			patch: patchText("*** Update File: a", "*** Move to: b"),
			want:  []Result{{Kind: Update, Path: "a", MoveTo: "b", Old: []byte("x\n"), New: []byte("x\n")}},
		},
		{
			name:  "move to itself is no move",
			files: map[string]string{"a": "x\n"},
			patch: patchText("*** Update File: a", "*** Move to: ./a", "-x", "+y"),
			want:  []Result{{Kind: Update, Path: "a", Old: []byte("x\n"), New: []byte("y\n")}},
		},
		{
			name:  "several operations",
			files: map[string]string{"a": "1\n", "b": "2\n"},
			patch: patchText("*** Delete File: a", "*** Update File: b", "-2", "+3", "*** Add File: c", "+4"),
			want: []Result{
				{Kind: Delete, Path: "a", Old: []byte("1\n")},
				{Kind: Update, Path: "b", Old: []byte("2\n"), New: []byte("3\n")},
				{Kind: Add, Path: "c", New: []byte("4\n")},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.patch)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Apply(p, memFS(tt.files))
			if err != nil {
				t.Fatalf("Apply = %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Apply = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestApplyUpdate covers how hunks are found and applied.
func TestApplyUpdate(t *testing.T) {
	tests := []struct {
		name string
		old  string
		body []string // the hunks of an *** Update File: f
		want string
	}{
		{
			name: "hunks apply in order",
			old:  lines("a", "x", "b", "x", "c"),
			body: []string{"@@", "-x", "+1", "@@", "-x", "+2"},
			want: lines("a", "1", "b", "2", "c"),
		},
		{
			name: "second hunk searched after the first",
			old:  lines("x", "y", "x", "y"),
			body: []string{"@@", " y", "+1", "@@", " x", "+2"},
			want: lines("x", "y", "1", "x", "2", "y"),
		},
		{
			name: "@@ context picks the function",
			old:  lines("func a() {", "\treturn 0", "}", "func b() {", "\treturn 0", "}"),
			body: []string{"@@ func b() {", "-\treturn 0", "+\treturn 1"},
			want: lines("func a() {", "\treturn 0", "}", "func b() {", "\treturn 1", "}"),
		},
		{
			name: "nested @@ context",
			old:  lines("class A:", "  def f():", "    pass", "class B:", "  def g():", "    pass", "  def f():", "    pass"),
			body: []string{"@@ class B:", "@@   def f():", "-    pass", "+    return 1"},
			want: lines("class A:", "  def f():", "    pass", "class B:", "  def g():", "    pass", "  def f():", "    return 1"),
		},
		{
			name: "@@ context contained in a line",
			old:  lines("def f(x):", "    return x", "def g(x):", "    return x"),
			body: []string{"@@ def g", "-    return x", "+    return -x"},
			want: lines("def f(x):", "    return x", "def g(x):", "    return -x"),
		},
		{
			name: "unified-diff @@ line",
			old:  lines("a", "b", "c", "a", "b"),
			body: []string{"@@ -4,2 +4,2 @@", " a", "-b", "+B"},
			want: lines("a", "B", "c", "a", "b"),
		},
		{
			name: "body repeats its @@ line",
			old:  lines("x", "func f() {", "\tbody", "}"),
			body: []string{"@@ func f() {", " func f() {", "-\tbody", "+\tnew"},
			want: lines("x", "func f() {", "\tnew", "}"),
		},
		{
			name: "insertion after @@ line",
			old:  lines("import (", "\t\"fmt\"", ")"),
			body: []string{"@@ import (", "+\t\"errors\""},
			want: lines("import (", "\t\"errors\"", "\t\"fmt\"", ")"),
		},
		{
			name: "insertion without context appends",
			old:  lines("a"),
			body: []string{"+b", "+c"},
			want: lines("a", "b", "c"),
		},
		{
			name: "insertion into empty file",
			old:  "",
			body: []string{"+a"},
			want: lines("a"),
		},
		{
			name: "end of file anchors at the end",
			old:  lines("}", "x", "}"),
			body: []string{"-}", "+};", "*** End of File"},
			want: lines("}", "x", "};"),
		},
		{
			name: "end of file falls back to a search",
			old:  lines("a", "b", "c"),
			body: []string{"-a", "+A", "*** End of File"},
			want: lines("A", "b", "c"),
		},
		{
			name: "trailing whitespace ignored",
			old:  "a  \nb\t\nc\n",
			body: []string{" a", "-b", "+B"},
			want: "a  \nB\nc\n",
		},
		{
			name: "indentation ignored, context kept verbatim",
			old:  lines("\tif x {", "\t\ty()", "\t}"),
			body: []string{"    if x {", "-        y()", "+\t\tz()"},
			want: lines("\tif x {", "\t\tz()", "\t}"),
		},
		{
			name: "exact match preferred over an earlier fuzzy one",
			old:  lines("x ", "y", "x", "y"),
			body: []string{" x", "-y", "+z"},
			want: lines("x ", "y", "x", "z"),
		},
		{
			name: "unicode punctuation normalized",
			old:  lines("s := “hi” — ok", "n := 1"),
			body: []string{" s := \"hi\" - ok", "-n := 1", "+n := 2"},
			want: lines("s := “hi” — ok", "n := 2"),
		},
		{
			name: "non-breaking space normalized",
			old:  "a\u00a0b\nc\n",
			body: []string{" a b", "-c", "+d"},
			want: "a\u00a0b\nd\n",
		},
		{
			name: "trailing empty context retried without it",
			old:  lines("a", "b"),
			body: []string{" a", "-b", "+c", " "},
			want: lines("a", "c"),
		},
		{
			name: "blank line inside hunk is an empty context line",
			old:  lines("a", "", "b"),
			body: []string{" a", "", "-b", "+c"},
			want: lines("a", "", "c"),
		},
		{
			name: "CRLF file stays CRLF",
			old:  "a\r\nb\r\nc\r\n",
			body: []string{" a", "-b", "+B1", "+B2"},
			want: "a\r\nB1\r\nB2\r\nc\r\n",
		},
		{
			name: "mixed line endings keep their bytes",
			old:  "a\r\nb\nc\r\n",
			body: []string{" b", "+x"},
			want: "a\r\nb\nx\r\nc\r\n",
		},
		{
			name: "no newline at end kept when the last line is untouched",
			old:  "a\nb\nc",
			body: []string{"-a", "+A", " b"},
			want: "A\nb\nc",
		},
		{
			name: "no newline at end: changed last line gets one",
			old:  "a\nb",
			body: []string{" a", "-b", "+B"},
			want: "a\nB\n",
		},
		{
			name: "no newline at end: lines appended after it",
			old:  "a\r\nb",
			body: []string{" b", "+c"},
			want: "a\r\nb\r\nc\r\n",
		},
		{
			name: "no newline at end: deleted last line",
			old:  "a\nb",
			body: []string{" a", "-b"},
			want: "a\n",
		},
		{
			name: "delete everything",
			old:  lines("a", "b"),
			body: []string{"-a", "-b"},
			want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := patchText(append([]string{"*** Update File: f"}, tt.body...)...)
			p, err := Parse(text)
			if err != nil {
				t.Fatal(err)
			}
			rs, err := Apply(p, memFS(map[string]string{"f": tt.old}))
			if err != nil {
				t.Fatalf("Apply = %v", err)
			}
			if got := string(rs[0].New); got != tt.want {
				t.Errorf("Apply(%q) = %q, want %q", tt.old, got, tt.want)
			}
			if rs[0].New == nil {
				t.Errorf("Apply(%q) New = nil, want non-nil", tt.old)
			}
		})
	}
}

func TestApplyErrors(t *testing.T) {
	errDisk := errors.New("disk on fire")
	tests := []struct {
		name   string
		files  map[string]string
		patch  string
		want   string
		wantIs error
	}{
		{
			name:   "update missing file",
			patch:  patchText("*** Update File: a", "-x"),
			want:   "apply_patch: a: patch line 2: cannot update: file does not exist",
			wantIs: fs.ErrNotExist,
		},
		{
			name:   "delete missing file",
			patch:  patchText("*** Delete File: a"),
			want:   "apply_patch: a: patch line 2: cannot delete: file does not exist",
			wantIs: fs.ErrNotExist,
		},
		{
			name:   "move onto an existing file",
			files:  map[string]string{"a": "x\n", "b": ""},
			patch:  patchText("*** Update File: a", "*** Move to: b", "-x"),
			want:   "apply_patch: a: patch line 2: cannot move to b: file already exists",
			wantIs: fs.ErrExist,
		},
		{
			name:   "read error",
			files:  map[string]string{"bad": ""},
			patch:  patchText("*** Delete File: bad"),
			want:   "apply_patch: bad: patch line 2: reading file: disk on fire",
			wantIs: errDisk,
		},
		{
			name:  "same path twice",
			files: map[string]string{"a": "x\n"},
			patch: patchText("*** Update File: a", "-x", "+y", "*** Delete File: ./a"),
			want:  "apply_patch: ./a: patch line 5: file ./a is changed twice in one patch",
		},
		{
			name:  "move onto a path the patch adds",
			files: map[string]string{"a": "x\n"},
			patch: patchText("*** Add File: b", "+1", "*** Update File: a", "*** Move to: b"),
			want:  "apply_patch: a: patch line 4: file b is changed twice in one patch",
		},
		{
			name:  "@@ context not found",
			files: map[string]string{"src/a.go": "package a\n"},
			patch: patchText("*** Update File: src/a.go", "@@ package a", "@@ func foo() {", "-x"),
			want:  `apply_patch: src/a.go: patch line 4: context not found: "func foo() {"`,
		},
		{
			name:  "hunk lines not found",
			files: map[string]string{"a": "1\n2\n3\n"},
			patch: patchText("*** Update File: a", "@@", " 1", "-2", "+x", "@@", "+y", " 3", "-4"),
			want:  `apply_patch: a: patch line 9: context not found: "3"`,
		},
		{
			name:  "hunk before the previous one",
			files: map[string]string{"a": "1\n2\n3\n"},
			patch: patchText("*** Update File: a", "-2", "@@", "-1"),
			want:  `apply_patch: a: patch line 5: context not found: "1"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.patch)
			if err != nil {
				t.Fatal(err)
			}
			read := memFS(tt.files)
			if tt.wantIs == errDisk {
				read = func(string) ([]byte, error) { return nil, errDisk }
			}
			rs, err := Apply(p, read)
			var ae *ApplyError
			if !errors.As(err, &ae) {
				t.Fatalf("Apply = %+v, %v; want an *ApplyError", rs, err)
			}
			if rs != nil {
				t.Errorf("Apply results = %+v, want none", rs)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("Apply error = %s\nwant %s", got, tt.want)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Apply error %v is not %v", err, tt.wantIs)
			}
		})
	}
}

func TestApplyHandBuilt(t *testing.T) {
	p := &Patch{Ops: []FileOp{{Kind: Update, Path: "a", Hunks: []Hunk{{Lines: []Line{{'-', "nope"}}}}}}}
	_, err := Apply(p, memFS(map[string]string{"a": "x\n"}))
	if want := `apply_patch: a: context not found: "nope"`; err == nil || err.Error() != want {
		t.Errorf("Apply = %v, want %s", err, want)
	}
	p = &Patch{Ops: []FileOp{{Kind: Delete}}}
	if _, err := Apply(p, memFS(nil)); err == nil || err.Error() != "apply_patch: empty path" {
		t.Errorf("Apply = %v, want empty path error", err)
	}
	if rs, err := Apply(nil, memFS(nil)); rs != nil || err != nil {
		t.Errorf("Apply(nil) = %v, %v; want nil, nil", rs, err)
	}
}
