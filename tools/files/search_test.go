package files_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/tools/files"
)

func TestSearch(t *testing.T) {
	tree := map[string]string{
		".gitignore":          "*.log\n/build/\n!keep.log\nnode_modules/\n",
		"main.go":             "package main\n\nfunc main() {\n\tTODO()\n}\n",
		"lib/util.go":         "package lib\n// todo: later\nfunc TODO() {}\n",
		"lib/util_test.go":    "package lib\n// TODO test\n",
		"lib/web/app.ts":      "// TODO ts\n",
		"lib/web/app.tsx":     "// TODO tsx\n",
		"debug.log":           "TODO in log\n",
		"keep.log":            "TODO kept\n",
		"build/out.go":        "TODO built\n",
		"src/build/x.go":      "TODO not root build\n",
		"node_modules/m/i.js": "TODO dep\n",
		"docs/.gitignore":     "*.md\n!README.md\n",
		"docs/a.md":           "TODO doc\n",
		"docs/README.md":      "TODO readme\n",
		".git/config":         "TODO git\n",
		"bin.dat":             "TODO\x00binary",
		"big.txt":             "TODO\n" + strings.Repeat("x", 1<<20),
		"crlf.txt":            "TODO crlf\r\n",
	}
	w, root := newWorkspace(t, tree)
	if err := os.Symlink(filepath.Join(root, "main.go"), filepath.Join(root, "link.go")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		p       files.SearchParams
		want    string
		wantErr string
	}{
		{name: "everything visible", p: files.SearchParams{Pattern: "TODO"}, want: "" +
			"crlf.txt:1:TODO crlf\n" +
			"docs/README.md:1:TODO readme\n" +
			"keep.log:1:TODO kept\n" +
			"lib/util.go:3:func TODO() {}\n" +
			"lib/util_test.go:2:// TODO test\n" +
			"lib/web/app.ts:1:// TODO ts\n" +
			"lib/web/app.tsx:1:// TODO tsx\n" +
			"main.go:4:\tTODO()\n" +
			"src/build/x.go:1:TODO not root build\n"},
		{name: "case insensitive in subdir", p: files.SearchParams{Pattern: "todo", Path: "lib", CaseInsensitive: true, Glob: "util.go"},
			want: "lib/util.go:2:// todo: later\nlib/util.go:3:func TODO() {}\n"},
		{name: "glob braces", p: files.SearchParams{Pattern: "TODO", Glob: "*.{ts,tsx}"},
			want: "lib/web/app.ts:1:// TODO ts\nlib/web/app.tsx:1:// TODO tsx\n"},
		{name: "glob path", p: files.SearchParams{Pattern: "TODO", Path: "lib", Glob: "web/**/*.tsx"},
			want: "lib/web/app.tsx:1:// TODO tsx\n"},
		{name: "nested gitignore from subdir", p: files.SearchParams{Pattern: "TODO", Path: "docs"},
			want: "docs/README.md:1:TODO readme\n"},
		{name: "one file", p: files.SearchParams{Pattern: "func", Path: "main.go"},
			want: "main.go:3:func main() {\n"},
		{name: "explicit ignored file", p: files.SearchParams{Pattern: "TODO", Path: "debug.log"},
			want: "debug.log:1:TODO in log\n"},
		{name: "regex", p: files.SearchParams{Pattern: `^func \w+\(\)`},
			want: "lib/util.go:3:func TODO() {}\nmain.go:3:func main() {\n"},
		{name: "capped", p: files.SearchParams{Pattern: "TODO", MaxResults: 2},
			want: "crlf.txt:1:TODO crlf\ndocs/README.md:1:TODO readme\n[results capped at 2; narrow the pattern, path or glob, or raise max_results]\n"},
		{name: "exactly max is not capped", p: files.SearchParams{Pattern: "TODO", Glob: "*.{ts,tsx}", MaxResults: 2},
			want: "lib/web/app.ts:1:// TODO ts\nlib/web/app.tsx:1:// TODO tsx\n"},
		{name: "no match", p: files.SearchParams{Pattern: "nothing here"}, want: "No matches found.\n"},
		{name: "bad regex", p: files.SearchParams{Pattern: "("}, wantErr: "invalid pattern"},
		{name: "bad glob", p: files.SearchParams{Pattern: "x", Glob: "[a"}, wantErr: "invalid glob"},
		{name: "no pattern", p: files.SearchParams{}, wantErr: "pattern is required"},
		{name: "binary file", p: files.SearchParams{Pattern: "x", Path: "bin.dat"}, wantErr: "binary"},
		{name: "big file", p: files.SearchParams{Pattern: "x", Path: "big.txt"}, wantErr: "over 1 MiB"},
		{name: "missing", p: files.SearchParams{Pattern: "x", Path: "nope"}, wantErr: "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := w.Search(tt.p)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Search(%+v) = %q, %v; want error containing %q", tt.p, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Search(%+v) = %q, %v\nwant %q", tt.p, got, err, tt.want)
			}
		})
	}
}

func TestSearchDefaultCap(t *testing.T) {
	var sb strings.Builder
	for i := range 250 {
		fmt.Fprintf(&sb, "hit %d\n", i)
	}
	w, _ := newWorkspace(t, map[string]string{"f.txt": sb.String()})
	got, err := w.Search(files.SearchParams{Pattern: "hit"})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 201 || lines[199] != "f.txt:200:hit 199" || !strings.HasPrefix(lines[200], "[results capped at 200") {
		t.Errorf("Search = %d lines ending %q, want 200 results and a note", len(lines), lines[len(lines)-1])
	}
}
