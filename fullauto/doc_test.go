package fullauto

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/apserver/apserver/"

// imports returns the imports of the non-test Go files of the package in
// dir.
func imports(t *testing.T, dir string) map[string]bool {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
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
			out[p] = true
		}
	}
	return out
}

// TestImportsStayPure: fullauto imports only controller, protocol and the
// standard library, and nothing that reads the clock, does I/O or starts
// goroutines' plumbing.
func TestImportsStayPure(t *testing.T) {
	for p := range imports(t, ".") {
		switch {
		case p == module+"controller", p == module+"protocol":
		case strings.HasPrefix(p, module):
			t.Errorf("fullauto imports %s; it may import only controller and protocol", p)
		case strings.Contains(strings.SplitN(p, "/", 2)[0], "."):
			t.Errorf("fullauto imports %s; no dependencies outside the standard library", p)
		}
		switch p {
		case "time", "math/rand", "math/rand/v2", "os", "os/exec", "net", "net/http", "sync", "io/fs", "path/filepath", "log", "log/slog":
			t.Errorf("fullauto imports %s: no clock, randomness, I/O or concurrency", p)
		}
	}
}

// layers is the import direction of the repository (STYLE.md): a package
// imports only packages of a later layer, or of its own layer when that
// layer is the leaves' (4). The first matching prefix names a package's
// layer.
var layers = []struct {
	prefix string
	layer  int
}{
	{"cmd/", 0}, {"bench", 0}, {"internal/editor/inprocess", 0},
	{"server", 1},
	{"runner", 2},
	{"session", 3},
	{"fullauto", 4}, {"runs", 4}, {"controller", 4}, {"tools", 4}, {"store", 4}, {"model", 4}, {"config", 4}, {"github", 4}, {"internal/", 4},
	{"protocol", 5},
}

func layerOf(pkg string) (int, bool) {
	for _, l := range layers {
		if pkg == strings.TrimSuffix(l.prefix, "/") || strings.HasPrefix(pkg, l.prefix) {
			return l.layer, true
		}
	}
	return 0, false
}

// TestImportsPointDown: cmd → server → runner → session → {fullauto, controller,
// tools/*, store, model, config} → protocol, for every package of the
// repository.
func TestImportsPointDown(t *testing.T) {
	root := ".."
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		switch d.Name() {
		case "testdata", "node_modules", "editors", ".git":
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		from, ok := layerOf(rel)
		if !ok {
			return nil
		}
		for p := range imports(t, path) {
			dep, ok := strings.CutPrefix(p, module)
			if !ok {
				continue
			}
			to, known := layerOf(dep)
			switch {
			case !known:
				t.Errorf("%s imports %s, which has no layer in this test", rel, dep)
			case to < from || (to == from && from != 4):
				t.Errorf("%s (layer %d) imports %s (layer %d): imports point down only", rel, from, dep, to)
			case from == 5:
				t.Errorf("protocol imports %s; it may import only the standard library", dep)
			}
			checked++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Errorf("checked %d imports, want the whole repository", checked)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Errorf("the repository root is not at %s: %v", root, err)
	}
}
