package files_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/tools/files"
)

func TestList(t *testing.T) {
	tree := map[string]string{
		"b.txt":          "",
		"a/x.go":         "",
		"a/deep/y.go":    "",
		"a/deep/z/w.go":  "",
		".git/HEAD":      "",
		"a.txt":          "",
		"empty/":         "",
		"sub/.gitignore": "",
	}
	w, root := newWorkspace(t, tree)
	if err := os.Symlink("a", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		p       files.ListParams
		want    string
		wantErr string
	}{
		{name: "root default depth", p: files.ListParams{},
			want: "a.txt\na/\na/deep/\na/x.go\nb.txt\nempty/\nlink@\nsub/\nsub/.gitignore\n"},
		{name: "depth 1", p: files.ListParams{Path: ".", Depth: 1}, want: "a.txt\na/\nb.txt\nempty/\nlink@\nsub/\n"},
		{name: "subdir deep", p: files.ListParams{Path: "a", Depth: 5}, want: "a/deep/\na/deep/y.go\na/deep/z/\na/deep/z/w.go\na/x.go\n"},
		{name: "through symlink", p: files.ListParams{Path: "link", Depth: 1}, want: "a/deep/\na/x.go\n"},
		{name: "empty", p: files.ListParams{Path: "empty"}, want: "[empty directory]\n"},
		{name: "file", p: files.ListParams{Path: "b.txt"}, wantErr: "not a directory"},
		{name: "missing", p: files.ListParams{Path: "nope"}, wantErr: "does not exist"},
		{name: "negative depth", p: files.ListParams{Depth: -1}, wantErr: "positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := w.List(tt.p)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("List(%+v) = %q, %v; want error containing %q", tt.p, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("List(%+v) = %q, %v; want %q", tt.p, got, err, tt.want)
			}
		})
	}
}

func TestListCap(t *testing.T) {
	tree := map[string]string{}
	for i := range 300 {
		tree[fmt.Sprintf("d%03d/f", i)] = ""
		tree[fmt.Sprintf("f%03d", i)] = ""
	}
	w, _ := newWorkspace(t, tree)
	got, err := w.List(files.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 501 || !strings.HasPrefix(lines[500], "[listing cut at 500 entries") {
		t.Fatalf("List = %d lines ending %q, want 500 entries and a note", len(lines), lines[len(lines)-1])
	}
	// Breadth first: all 600 top-level entries compete before any child.
	for _, l := range lines[:500] {
		if strings.Contains(strings.TrimSuffix(l, "/"), "/") {
			t.Fatalf("List shows %q before all top-level entries", l)
		}
	}
}
