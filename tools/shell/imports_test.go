package shell

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports keeps the layering: tools/shell imports only the standard
// library and mvdan.cc/sh, and tools/rules reads commands through
// tools/shell, never through tools.
func TestImports(t *testing.T) {
	for dir, allowed := range map[string]func(string) bool{
		".": func(p string) bool {
			return !strings.Contains(strings.Split(p, "/")[0], ".") || strings.HasPrefix(p, "mvdan.cc/sh/")
		},
		"../rules": func(p string) bool {
			return !strings.HasPrefix(p, "github.com/apserver/apserver/") || p == "github.com/apserver/apserver/tools/shell"
		},
	} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s (%v)", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if !allowed(p) {
					t.Errorf("%s imports %s", f, p)
				}
			}
		}
	}
}
