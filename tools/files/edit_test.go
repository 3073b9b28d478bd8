package files_test

import (
	"strings"
	"testing"

	"github.com/apserver/apserver/tools/files"
)

func TestEdit(t *testing.T) {
	tree := map[string]string{
		"a.go":     "package a\n\nfunc f() {\n\treturn\n}\n",
		"dup.txt":  "x = 1\nx = 1\ny = 2\n",
		"crlf.txt": "one\r\ntwo\r\nthree\r\n",
		"bin":      "a\x00b",
		"dir/":     "",
	}
	tests := []struct {
		name    string
		p       files.EditParams
		kind    string
		path    string
		want    string // file content after Commit
		wantErr string // substring of the error
	}{
		{name: "replace once", p: files.EditParams{Path: "a.go", OldString: "\treturn\n", NewString: "\treturn // done\n"},
			kind: files.KindUpdate, path: "a.go", want: "package a\n\nfunc f() {\n\treturn // done\n}\n"},
		{name: "replace all", p: files.EditParams{Path: "dup.txt", OldString: "x = 1", NewString: "x = 3", ReplaceAll: true},
			kind: files.KindUpdate, path: "dup.txt", want: "x = 3\nx = 3\ny = 2\n"},
		{name: "unique with context", p: files.EditParams{Path: "dup.txt", OldString: "x = 1\ny", NewString: "x = 9\ny"},
			kind: files.KindUpdate, path: "dup.txt", want: "x = 1\nx = 9\ny = 2\n"},
		{name: "crlf file with lf old_string", p: files.EditParams{Path: "crlf.txt", OldString: "one\ntwo\n", NewString: "1\n2\n"},
			kind: files.KindUpdate, path: "crlf.txt", want: "1\r\n2\r\nthree\r\n"},
		{name: "create with empty old_string", p: files.EditParams{Path: "new/n.txt", NewString: "hi\n"},
			kind: files.KindAdd, path: "new/n.txt", want: "hi\n"},
		{name: "delete text", p: files.EditParams{Path: "a.go", OldString: "\n\nfunc f() {\n\treturn\n}", NewString: ""},
			kind: files.KindUpdate, path: "a.go", want: "package a\n"},
		{name: "not found, whitespace hint", p: files.EditParams{Path: "a.go", OldString: "    return\n", NewString: "x"},
			wantErr: "Line 4 differs from its first line only in whitespace"},
		{name: "not found, later line differs", p: files.EditParams{Path: "a.go", OldString: "func f() {\n\treturn nil\n", NewString: "x"},
			wantErr: "first line matches line 3"},
		{name: "not found", p: files.EditParams{Path: "a.go", OldString: "nothing like it", NewString: "x"},
			wantErr: "not found in a.go"},
		{name: "ambiguous", p: files.EditParams{Path: "dup.txt", OldString: "x = 1", NewString: "x = 2"},
			wantErr: "occurs 2 times in dup.txt (lines 1, 2)"},
		{name: "same strings", p: files.EditParams{Path: "a.go", OldString: "package", NewString: "package"},
			wantErr: "the same"},
		{name: "empty old_string on existing file", p: files.EditParams{Path: "a.go", NewString: "x"},
			wantErr: "already exists"},
		{name: "missing file", p: files.EditParams{Path: "nope.go", OldString: "a", NewString: "b"},
			wantErr: "does not exist"},
		{name: "binary", p: files.EditParams{Path: "bin", OldString: "a", NewString: "c"},
			wantErr: "binary"},
		{name: "directory", p: files.EditParams{Path: "dir", OldString: "a", NewString: "c"},
			wantErr: "directory"},
		{name: "no path", p: files.EditParams{OldString: "a", NewString: "c"},
			wantErr: "path is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, root := newWorkspace(t, tree)
			changes, err := w.Edit(tt.p)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Edit(%+v) = %v, want error containing %q", tt.p, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Edit(%+v) = %v", tt.p, err)
			}
			if len(changes) != 1 || changes[0].Kind != tt.kind || changes[0].Path != tt.path {
				t.Fatalf("Edit(%+v) = %+v, want one %s of %s", tt.p, changes, tt.kind, tt.path)
			}
			if got := readFile(t, root, tt.path); got != tree[tt.path] && tt.kind == files.KindUpdate {
				t.Fatalf("Edit wrote %s before Commit", tt.path)
			}
			if err := w.Commit(changes); err != nil {
				t.Fatalf("Commit = %v", err)
			}
			if got := readFile(t, root, tt.path); got != tt.want {
				t.Errorf("after Edit(%+v): %s = %q, want %q", tt.p, tt.path, got, tt.want)
			}
		})
	}
}

func TestEditDiff(t *testing.T) {
	w, _ := newWorkspace(t, map[string]string{"f.txt": "1\n2\n3\n4\n5\n6\n7\n8\n9\n"})
	changes, err := w.Edit(files.EditParams{Path: "f.txt", OldString: "5\n", NewString: "five\n"})
	if err != nil {
		t.Fatal(err)
	}
	want := "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
	if changes[0].Diff != want {
		t.Errorf("Diff = %q, want %q", changes[0].Diff, want)
	}
}
