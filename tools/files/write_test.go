package files_test

import (
	"strings"
	"testing"

	"github.com/apserver/apserver/tools/files"
)

func TestWrite(t *testing.T) {
	tree := map[string]string{"a.txt": "old\n", "d/": "", "file": "x"}
	tests := []struct {
		name     string
		p        files.WriteParams
		kind     string
		path     string
		wantDiff string
		wantErr  string
	}{
		{name: "add", p: files.WriteParams{Path: "b.txt", Content: "new\n"}, kind: files.KindAdd, path: "b.txt", wantDiff: "new\n"},
		{name: "add with dirs", p: files.WriteParams{Path: "x/y/z.txt", Content: "z"}, kind: files.KindAdd, path: "x/y/z.txt", wantDiff: "z"},
		{name: "add empty", p: files.WriteParams{Path: "empty", Content: ""}, kind: files.KindAdd, path: "empty", wantDiff: ""},
		{name: "update", p: files.WriteParams{Path: "a.txt", Content: "new\n"}, kind: files.KindUpdate, path: "a.txt", wantDiff: "@@ -1 +1 @@\n-old\n+new\n"},
		{name: "unchanged", p: files.WriteParams{Path: "a.txt", Content: "old\n"}, wantErr: "already has exactly this content"},
		{name: "directory", p: files.WriteParams{Path: "d", Content: "x"}, wantErr: "directory"},
		{name: "under a file", p: files.WriteParams{Path: "file/x", Content: "x"}, wantErr: "is a file"},
		{name: "no path", p: files.WriteParams{Content: "x"}, wantErr: "path is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, root := newWorkspace(t, tree)
			changes, err := w.Write(tt.p)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Write(%+v) = %v, want error containing %q", tt.p, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Write(%+v) = %v", tt.p, err)
			}
			if len(changes) != 1 || changes[0].Kind != tt.kind || changes[0].Path != tt.path || changes[0].Diff != tt.wantDiff {
				t.Fatalf("Write(%+v) = %+v, want one %s of %s with diff %q", tt.p, changes, tt.kind, tt.path, tt.wantDiff)
			}
			if err := w.Commit(changes); err != nil {
				t.Fatalf("Commit = %v", err)
			}
			if got := readFile(t, root, tt.path); got != tt.p.Content {
				t.Errorf("after Write(%+v): %s = %q", tt.p, tt.path, got)
			}
		})
	}
}
