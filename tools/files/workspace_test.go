package files_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/tools/files"
)

func TestNewWorkspaceErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	writeTree(t, dir, map[string]string{"f": "x"})
	tests := []struct {
		name               string
		root               string
		writable, readable []string
	}{
		{"relative root", "ws", nil, nil},
		{"missing root", filepath.Join(dir, "nope"), nil, nil},
		{"file root", file, nil, nil},
		{"relative writable", dir, []string{"x"}, nil},
		{"missing readable", dir, nil, []string{filepath.Join(dir, "nope")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := files.NewWorkspace(tt.root, tt.writable, tt.readable); err == nil {
				t.Errorf("NewWorkspace(%q, %q, %q) = nil error, want one", tt.root, tt.writable, tt.readable)
			}
		})
	}
}

func TestResolveAllowed(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	extraW := filepath.Join(base, "cache")
	extraR := filepath.Join(base, "docs")
	writeTree(t, base, map[string]string{
		"ws/a/b.txt":    "b",
		"ws/c.txt":      "c",
		"cache/x":       "x",
		"docs/readme":   "r",
		"ws/.gitignore": "",
	})
	for _, l := range []struct{ link, target string }{
		{"ws/inside", "a/b.txt"},
		{"ws/dirlink", "a"},
		{"ws/abslink", filepath.Join(ws, "c.txt")},
		{"ws/tocache", extraW},
		{"ws/dangling", "a/new.txt"},
	} {
		if err := os.Symlink(l.target, filepath.Join(base, l.link)); err != nil {
			t.Fatal(err)
		}
	}
	w, err := files.NewWorkspace(ws, []string{extraW}, []string{extraR})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path  string
		want  string // relative to base
		write bool   // also writable
	}{
		{"c.txt", "ws/c.txt", true},
		{"./a/../c.txt", "ws/c.txt", true},
		{filepath.Join(ws, "a/b.txt"), "ws/a/b.txt", true},
		{"a/new/deep.txt", "ws/a/new/deep.txt", true},
		{"inside", "ws/a/b.txt", true},
		{"dirlink/b.txt", "ws/a/b.txt", true},
		{"abslink", "ws/c.txt", true},
		{"dangling", "ws/a/new.txt", true},
		{"tocache/x", "cache/x", true},
		{filepath.Join(extraW, "y"), "cache/y", true},
		{filepath.Join(extraR, "readme"), "docs/readme", false},
		{"../docs/readme", "docs/readme", false},
		{".", "ws", false},
		{".gitignore", "ws/.gitignore", true},
		{".github/workflows/ci.yml", "ws/.github/workflows/ci.yml", true},
	}
	for _, tt := range tests {
		want := filepath.Join(base, tt.want)
		got, err := w.ResolveRead(tt.path)
		if err != nil || got != want {
			t.Errorf("ResolveRead(%q) = %q, %v; want %q", tt.path, got, err, want)
		}
		got, err = w.ResolveWrite(tt.path)
		if tt.write && (err != nil || got != want) {
			t.Errorf("ResolveWrite(%q) = %q, %v; want %q", tt.path, got, err, want)
		}
		var pe *files.PathError
		if !tt.write && !errors.As(err, &pe) {
			t.Errorf("ResolveWrite(%q) = %q, %v; want a *PathError", tt.path, got, err)
		}
	}
}

func TestPathErrorMessage(t *testing.T) {
	w, _ := newWorkspace(t, nil)
	_, err := w.ResolveRead("../../etc/passwd")
	var pe *files.PathError
	if !errors.As(err, &pe) {
		t.Fatalf("ResolveRead = %v, want a *PathError", err)
	}
	if pe.Path != "../../etc/passwd" || !strings.Contains(err.Error(), "../../etc/passwd") || !strings.Contains(err.Error(), "outside") {
		t.Errorf("error = %q (Path %q), want it to name the path and say it is outside", err, pe.Path)
	}
}

func TestStamp(t *testing.T) {
	w, root := newWorkspace(t, map[string]string{"a.txt": "one", "d/": ""})
	s1, err := w.Stamp("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	s2, err := w.Stamp("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !s1.Same(s2) {
		t.Error("two stamps of an unchanged file differ")
	}
	missing, err := w.Stamp("nope.txt")
	if err != nil {
		t.Fatal(err)
	}
	if missing.Same(s1) || !missing.Same(files.Stamp{}) {
		t.Error("a missing file's stamp is not the distinct missing stamp")
	}
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	s3, err := w.Stamp("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if s3.Same(s1) {
		t.Error("the stamp did not change with the content")
	}
	if _, err := w.Stamp("d"); err == nil {
		t.Error("Stamp(dir) = nil error, want one")
	}
	if _, err := w.Stamp("../x"); err == nil {
		t.Error("Stamp outside = nil error, want one")
	}
}
