package fuzzy

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/apserver/apserver/protocol"
)

func search(t *testing.T, s *Service, p protocol.FuzzyFileSearchParams) []protocol.FuzzyFileMatch {
	t.Helper()
	got := make(chan any, 1)
	s.FileSearch(context.Background(), p, func(res any, err error) {
		if err != nil {
			t.Errorf("fuzzyFileSearch: %v", err)
		}
		got <- res
	})
	return (<-got).(protocol.FuzzyFileSearchResult).Files
}

// TestFileSearch: the best match first (a file name match over a
// directory match), what is under .git left out, nothing once the service
// is closed.
func TestFileSearch(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"main.go", "cmd/main_test.go", ".git/main.go", "docs/readme.md"} {
		p := filepath.Join(root, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, nil, 0o600)
	}
	s := New()
	files := search(t, s, protocol.FuzzyFileSearchParams{Query: "main", Roots: []string{root}})
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path)
	}
	if len(paths) != 2 || paths[0] != "main.go" || paths[1] != "cmd/main_test.go" {
		t.Errorf("fuzzyFileSearch(main) = %v, want [main.go cmd/main_test.go]", paths)
	}
	tok := "t"
	s.Close()
	if files := search(t, s, protocol.FuzzyFileSearchParams{Query: "main", Roots: []string{root}, CancellationToken: &tok}); len(files) != 0 {
		t.Errorf("fuzzyFileSearch after Close = %v, want none", files)
	}
}
