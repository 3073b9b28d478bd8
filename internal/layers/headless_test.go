package layers

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// headless are the packages of the headless commands (apserver run,
// apserver runs, apserver exec): they call the runner through its typed Go
// API (runner.Call: Start, Read, Resume, ... and Do), never as a wire
// client answering through replies.
var headless = []string{"cmd/apserver"}

// TestHeadlessCallsRunnerTyped: no non-test file of the headless commands
// names session.Reply or port.Reply, declares execCall, or writes a
// reply-shaped callback (a func(any, error) literal) — the shapes of a
// JSON-RPC answer that a Go caller of the runner does not need.
func TestHeadlessCallsRunnerTyped(t *testing.T) {
	for _, rel := range headless {
		out, err := exec.Command("go", "list", "-json", module+"/"+rel).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", rel, err)
		}
		var p struct {
			Dir     string
			GoFiles []string
		}
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatalf("decoding go list %s: %v", rel, err)
		}
		if len(p.GoFiles) == 0 {
			t.Fatalf("%s has no Go files", rel)
		}
		for _, name := range p.GoFiles {
			for _, bad := range replyShapes(t, filepath.Join(p.Dir, name)) {
				t.Errorf("%s/%s: %s; call the runner's typed API (runner.Call's Do) instead", rel, name, bad)
			}
		}
	}
}

// replyShapes lists, in file, the uses of the reply-callback shapes that
// TestHeadlessCallsRunnerTyped forbids.
func replyShapes(t *testing.T, file string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parsing %s: %v", file, err)
	}
	// The names this file gives session and session/port.
	replyPkgs := map[string]string{}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if path != module+"/session" && path != module+"/session/port" {
			continue
		}
		name := filepath.Base(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		replyPkgs[name] = path
	}
	var bad []string
	at := func(n ast.Node, what string) {
		pos := fset.Position(n.Pos())
		bad = append(bad, fmt.Sprintf("line %d: %s", pos.Line, what))
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && n.Sel.Name == "Reply" && replyPkgs[x.Name] != "" {
				at(n, x.Name+".Reply")
			}
		case *ast.FuncDecl:
			if n.Name.Name == "execCall" {
				at(n, "execCall")
			}
		case *ast.FuncLit:
			if replyShaped(n.Type) {
				at(n, "a func(any, error) callback")
			}
		}
		return true
	})
	return bad
}

// replyShaped is a func(any, error) (or func(interface{}, error)) type.
func replyShaped(ft *ast.FuncType) bool {
	if ft.Params == nil || ft.Results != nil && len(ft.Results.List) > 0 {
		return false
	}
	var types []ast.Expr
	for _, p := range ft.Params.List {
		n := max(len(p.Names), 1)
		for range n {
			types = append(types, p.Type)
		}
	}
	if len(types) != 2 {
		return false
	}
	isAny := false
	switch x := types[0].(type) {
	case *ast.Ident:
		isAny = x.Name == "any"
	case *ast.InterfaceType:
		isAny = x.Methods == nil || len(x.Methods.List) == 0
	}
	e, ok := types[1].(*ast.Ident)
	return isAny && ok && e.Name == "error"
}
