package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is the repository root, seen from this package's directory.
const repoRoot = "../.."

// TestGeneratedUpToDate regenerates every file into a temporary directory
// and compares it with the committed one, as gopls checks its generated
// protocol: a schema edited without `make generate`, or a generated file
// edited by hand, fails here.
func TestGeneratedUpToDate(t *testing.T) {
	files, err := generate(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := write(dir, files); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{goFile, tsFile, luaFile} {
		got, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.Join(repoRoot, p))
		if err != nil {
			t.Errorf("%s: %v (run make generate)", p, err)
			continue
		}
		if !bytes.Equal(got, committed) {
			t.Errorf("%s is not what the schemas generate (run make generate): %s", p, firstDiff(committed, got))
		}
	}
}

// firstDiff describes the first line where the committed and the
// generated text differ.
func firstDiff(committed, generated []byte) string {
	a := strings.Split(string(committed), "\n")
	b := strings.Split(string(generated), "\n")
	for i := 0; i < len(a) || i < len(b); i++ {
		var la, lb string
		if i < len(a) {
			la = a[i]
		}
		if i < len(b) {
			lb = b[i]
		}
		if la != lb || i >= len(a) || i >= len(b) {
			return fmt.Sprintf("line %d is %q, want %q", i+1, la, lb)
		}
	}
	return "same lines, different bytes"
}

// TestGeneratedHeaders: every generated file says so on its first line.
func TestGeneratedHeaders(t *testing.T) {
	files, err := generate(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for p, marker := range map[string]string{goFile: "// ", tsFile: "// ", luaFile: "-- "} {
		first, _, _ := strings.Cut(string(files[p]), "\n")
		if first != marker+header || !regexp.MustCompile(`^(//|--) Code generated .* DO NOT EDIT\.$`).MatchString(first) {
			t.Errorf("%s starts %q", p, first)
		}
	}
}

// schemaMethods is every method name both schemas declare.
func schemaMethods(t *testing.T) map[string]bool {
	t.Helper()
	s, err := load(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, x := range s.methods {
		m[x.name] = true
	}
	if !m["turn/start"] || !m["fullAuto/start"] || !m["run/start"] {
		t.Fatalf("the schemas lack turn/start, fullAuto/start or run/start: %d methods read", len(m))
	}
	return m
}

// TestNoHandWrittenGoMethodNames: package protocol spells no method name
// by hand outside the generated file, so the schema stays the one source.
func TestNoHandWrittenGoMethodNames(t *testing.T) {
	known := schemaMethods(t)
	dir := filepath.Join(repoRoot, "protocol")
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go") && fi.Name() != filepath.Base(goFile)
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, pkg := range pkgs {
		for name, f := range pkg.Files {
			ast.Inspect(f, func(node ast.Node) bool {
				vs, ok := node.(*ast.ValueSpec)
				if !ok {
					return true
				}
				for i, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					n++
					s, _ := strconv.Unquote(lit.Value)
					id := vs.Names[i].Name
					if known[s] && (strings.HasPrefix(id, "Method") || strings.HasPrefix(id, "Notify") || strings.HasPrefix(id, "Request")) {
						t.Errorf("%s: %s = %q is written by hand; it is generated into %s from the schema", filepath.Base(name), id, s, goFile)
					}
				}
				return true
			})
		}
	}
	if n == 0 {
		t.Fatal("found no string constants in package protocol; the parse is broken")
	}
}

// luaMethodUse matches the places a Lua method name would be spelled: a
// comparison with method, or the first argument of request, notify, tell
// or auto_call.
var luaMethodUse = regexp.MustCompile(`(?:method\s*[=~]=\s*|:request\(\s*|:notify\(\s*|tell\(\s*\w+\s*,\s*|auto_call\(\s*)"([^"]+)"`)

// luaSlashString is any double-quoted Lua string with a slash in it.
var luaSlashString = regexp.MustCompile(`"([^"\s]*/[^"\s]*)"`)

// TestNvimUsesGeneratedMethods: the Neovim plugin spells no method name
// itself; it reads them from the generated apserver.methods module.
func TestNvimUsesGeneratedMethods(t *testing.T) {
	known := schemaMethods(t)
	dir := filepath.Join(repoRoot, "editors", "nvim", "lua")
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".lua") || filepath.ToSlash(p) == filepath.ToSlash(filepath.Join(repoRoot, luaFile)) {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		for i, line := range strings.Split(string(data), "\n") {
			code, _, _ := strings.Cut(line, "--")
			seen := map[string]bool{}
			for _, re := range []*regexp.Regexp{luaMethodUse, luaSlashString} {
				for _, m := range re.FindAllStringSubmatch(code, -1) {
					if known[m[1]] && !seen[m[1]] {
						seen[m[1]] = true
						t.Errorf("%s:%d spells %q; use require(\"apserver.methods\")", p, i+1, m[1])
					}
				}
			}
		}
		if !strings.Contains(string(data), `require("apserver.methods")`) && strings.Contains(string(data), "method ==") {
			t.Errorf("%s compares method names but does not require apserver.methods", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 3 {
		t.Fatalf("read only %d Lua files under %s", n, dir)
	}
}
