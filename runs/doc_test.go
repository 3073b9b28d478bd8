package runs

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsStayPure: runs imports only protocol and the standard
// library, and nothing that reads the clock, does I/O or starts
// goroutines' plumbing.
func TestImportsStayPure(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case p == "github.com/apserver/apserver/protocol":
			case strings.Contains(strings.SplitN(p, "/", 2)[0], "."):
				t.Errorf("%s imports %s; runs may import only protocol and the standard library", name, p)
			}
			switch p {
			case "math/rand", "math/rand/v2", "os", "os/exec", "net", "net/http", "sync", "io/fs", "path/filepath", "log", "log/slog":
				t.Errorf("%s imports %s: no clock, randomness, I/O or concurrency", name, p)
			}
		}
	}
}
