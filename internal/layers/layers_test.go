package layers

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/apserver/apserver"

// layers is the import direction (docs/architecture.md): a package imports
// only packages of a later layer, or of its own layer when that is the
// leaves' (4). The longest matching path (a package and those under it)
// names a package's layer; a
// package that matches none fails the test, so that a new package is
// placed on purpose.
var layers = []struct {
	prefix string
	layer  int
}{
	{"cmd/", 0}, {"bench", 0}, {"e2e", 0}, {"internal/editor/inprocess", 0}, {"internal/layers", 0},
	{"server", 1}, {"cluster", 1},
	{"runner", 2}, {"blueprints", 2}, {"brains", 2}, {"projects", 2},
	{"services", 2}, // beside session, never importing it: command/exec, fs/watch, config/read, ...
	{"session", 3},
	{"session/port", 4},
	{"fullauto", 4}, {"autodrive", 4}, {"runs", 4}, {"compaction", 4}, {"blueprint", 4}, {"brain", 4}, {"manager", 4}, {"controller", 4}, {"tools", 4}, {"store", 4}, {"model", 4}, {"config", 4},
	{"github", 4}, {"mcp", 4}, {"mcpservers", 4}, {"internal/", 4},
	{"tooloutput", 4}, {"imageinput", 4}, {"paramcheck", 4}, {"instructions", 4}, {"threadwire", 4}, {"mcptool", 4}, {"agenttools", 4}, {"modelcatalog", 4}, {"dynamictools", 4},
	{"turnwire", 4}, {"outcomes", 4}, {"contextwindow", 4}, {"modelstream", 4},
	{"commandpolicy", 4}, // the command judge: rules, sandbox, approval policy
	{"filechange", 4},    // a file-changing tool call's changes without a thread
	{"protocol", 5},
}

// leaves is the layer whose packages may import each other.
const leaves = 4

func layerOf(rel string) (int, bool) {
	best, layer := -1, 0
	for _, l := range layers {
		p := strings.TrimSuffix(l.prefix, "/")
		if (rel == p || strings.HasPrefix(rel, p+"/")) && len(p) > best {
			best, layer = len(p), l.layer
		}
	}
	return layer, best >= 0
}

// pure are the packages that decide without effects (the decision cores)
// and the thread port: what they may import of the module, and which
// standard packages they must not (no clock, randomness, I/O or
// concurrency). Everything else they reach must be the standard library.
// A new decision core gets a row.
var pure = []struct {
	pkg       string
	may       []string
	forbidden []string
}{
	{"fullauto", []string{"controller", "protocol"},
		[]string{"time", "math/rand", "math/rand/v2", "os", "os/exec", "net", "net/http", "sync", "io/fs", "path/filepath", "log", "log/slog"}},
	{"runs", []string{"protocol"},
		[]string{"math/rand", "math/rand/v2", "os", "os/exec", "net", "net/http", "sync", "io/fs", "path/filepath", "log", "log/slog"}},
	{"controller", nil,
		[]string{"time", "math/rand", "math/rand/v2", "os", "net", "net/http", "sync"}},
	{"session/port", []string{"protocol"},
		[]string{"time", "math/rand", "math/rand/v2", "os", "os/exec", "net", "net/http", "io/fs", "path/filepath", "log", "log/slog"}},
	{"blueprint", []string{"protocol"},
		[]string{"time", "math/rand", "math/rand/v2", "os", "os/exec", "net", "net/http", "sync", "io/fs", "path/filepath", "log", "log/slog"}},
	{"brain", []string{"protocol"},
		[]string{"time", "math/rand", "math/rand/v2", "os", "os/exec", "net", "net/http", "sync", "io/fs", "path/filepath", "log", "log/slog"}},
	{"manager", []string{"protocol"},
		[]string{"time", "math/rand", "math/rand/v2", "os", "os/exec", "net", "net/http", "sync", "io/fs", "path/filepath", "log", "log/slog"}},
	{"compaction", []string{"protocol"},
		[]string{"time", "math/rand", "math/rand/v2", "os", "os/exec", "net", "net/http", "sync", "io/fs", "path/filepath", "log", "log/slog"}},
	{"tooloutput", nil,
		[]string{"time", "math/rand", "math/rand/v2", "os", "os/exec", "net", "net/http", "sync", "io/fs", "path/filepath", "log", "log/slog"}},
	{"protocol", nil, nil},
}

// portUsers are the layers above threads: they reach session only
// through its port (session/port), never session itself. Blueprints, the
// manager and workers get a row when they come.
var portUsers = []string{"runner"}

type pkg struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Deps       []string
	Error      *struct{ Err string }
}

// list returns the module's packages as go list -json ./... reports them.
func list(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decoding go list: %v", err)
		}
		if p.Error != nil {
			t.Errorf("go list %s: %s", p.ImportPath, p.Error.Err)
		}
		rel, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			continue
		}
		pkgs[rel] = p
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages of the module, want them all", len(pkgs))
	}
	return pkgs
}

// inModule is the module-relative path of an import path, if it is the
// module's.
func inModule(path string) (string, bool) { return strings.CutPrefix(path, module+"/") }

// standard reports whether an import path is the standard library's (its
// first element has no dot).
func standard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func sorted(m map[string]pkg) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestImportsPointDown: cmd → server → runner → session → {fullauto, runs,
// controller, session/port, tools/*, store, model, config} → protocol, for
// every package of the module.
func TestImportsPointDown(t *testing.T) {
	pkgs := list(t)
	checked := 0
	for _, rel := range sorted(pkgs) {
		from, ok := layerOf(rel)
		if !ok {
			t.Errorf("%s has no layer in this test: add it to layers", rel)
			continue
		}
		for _, imp := range pkgs[rel].Imports {
			dep, ok := inModule(imp)
			if !ok {
				continue
			}
			to, known := layerOf(dep)
			switch {
			case !known:
				t.Errorf("%s imports %s, which has no layer in this test", rel, dep)
			case to < from || (to == from && from != leaves):
				t.Errorf("%s (layer %d) imports %s (layer %d): imports point down only", rel, from, dep, to)
			}
			checked++
		}
	}
	if checked < 50 {
		t.Errorf("checked %d imports, want the whole module", checked)
	}
}

// TestPurePackages: a decision core (and the port) reaches nothing but the
// module packages its row allows and the standard library, and imports no
// clock, randomness, I/O or concurrency.
func TestPurePackages(t *testing.T) {
	pkgs := list(t)
	for _, row := range pure {
		p, ok := pkgs[row.pkg]
		if !ok {
			t.Errorf("pure package %s is not in the module", row.pkg)
			continue
		}
		for _, d := range p.Deps {
			if rel, ok := inModule(d); ok {
				if !slices.Contains(row.may, rel) && !slices.ContainsFunc(row.may, func(m string) bool { return slices.Contains(depsOf(pkgs, m), d) }) {
					t.Errorf("%s reaches %s; it may import only %v and the standard library", row.pkg, rel, row.may)
				}
				continue
			}
			if !standard(d) {
				t.Errorf("%s reaches %s; no dependencies outside the standard library", row.pkg, d)
			}
		}
		for _, imp := range p.Imports {
			if slices.Contains(row.forbidden, imp) {
				t.Errorf("%s imports %s: no clock, randomness, I/O or concurrency", row.pkg, imp)
			}
		}
	}
}

func depsOf(pkgs map[string]pkg, rel string) []string { return pkgs[rel].Deps }

// TestPortOnly: the layers above threads reach session only through its
// port.
func TestPortOnly(t *testing.T) {
	pkgs := list(t)
	for _, user := range portUsers {
		p, ok := pkgs[user]
		if !ok {
			t.Errorf("%s is not in the module", user)
			continue
		}
		reachesPort := false
		for _, d := range p.Deps {
			switch d {
			case module + "/session":
				t.Errorf("%s reaches session; it may drive threads only through session/port", user)
			case module + "/session/port":
				reachesPort = true
			}
		}
		if !reachesPort {
			t.Errorf("%s does not use session/port; this test expects it to", user)
		}
	}
}

// beside are the packages that live beside session rather than above it:
// the services that never touch a thread. They may use session/port's
// plain types, never session itself (nor anything that reaches it).
var beside = []string{"services"}

// TestServicesBesideSession: no package under services reaches session.
func TestServicesBesideSession(t *testing.T) {
	pkgs := list(t)
	for _, root := range beside {
		found := false
		for _, rel := range sorted(pkgs) {
			if rel != root && !strings.HasPrefix(rel, root+"/") {
				continue
			}
			found = true
			for _, d := range pkgs[rel].Deps {
				if d == module+"/session" {
					t.Errorf("%s reaches session; a service beside the threads may use session/port only", rel)
				}
			}
		}
		if !found {
			t.Errorf("%s is not in the module", root)
		}
	}
}
