package controller

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func parsePackage(t *testing.T) []*ast.File {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// TestDocListsEveryRule: doc.go, which the docs link to, names every rule
// id Decide can return.
func TestDocListsEveryRule(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range parsePackage(t) {
		ast.Inspect(f, func(node ast.Node) bool {
			vs, ok := node.(*ast.ValueSpec)
			if !ok || len(vs.Names) != 1 || !strings.HasPrefix(vs.Names[0].Name, "rule") || len(vs.Values) != 1 {
				return true
			}
			lit, ok := vs.Values[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			id, _ := strconv.Unquote(lit.Value)
			n++
			if !strings.Contains(string(doc), " "+id+":") && !strings.Contains(string(doc), " "+id+" ") && !strings.Contains(string(doc), " "+id+",") {
				t.Errorf("doc.go does not document rule %q (%s)", id, vs.Names[0].Name)
			}
			return true
		})
	}
	if n < 30 {
		t.Errorf("found %d rule ids, want the full set", n)
	}
}

// The controller's purity (the standard library only; no clock,
// randomness, I/O or concurrency) is checked with every other package's
// layering in internal/layers.
