package fswatch

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// deadline bounds every wait for an event; it is generous on purpose.
const deadline = 10 * time.Second

type call struct {
	id    string
	paths []string
}

func start(t *testing.T, debounce time.Duration) (*Watcher, <-chan call) {
	t.Helper()
	calls := make(chan call, 1000)
	w, err := New(debounce, func(id string, paths []string) {
		calls <- call{id, paths}
	})
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w, calls
}

// tempDir is t.TempDir with symlinks resolved, as Watch reports it.
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func mustWatch(t *testing.T, w *Watcher, id, path string) {
	t.Helper()
	got, err := w.Watch(id, path)
	if err != nil {
		t.Fatalf("Watch(%q, %s) = %v", id, path, err)
	}
	if got != path {
		t.Fatalf("Watch(%q, %s) = %s, want the same path", id, path, got)
	}
}

// waitFor receives calls until those for id have reported every path in
// want, and returns all calls received, for any id.
func waitFor(t *testing.T, calls <-chan call, id string, want ...string) []call {
	t.Helper()
	missing := make(map[string]bool)
	for _, p := range want {
		missing[p] = true
	}
	var got []call
	timeout := time.After(deadline)
	for len(missing) > 0 {
		select {
		case c := <-calls:
			checkCall(t, c)
			got = append(got, c)
			if c.id == id {
				for _, p := range c.paths {
					delete(missing, p)
				}
			}
		case <-timeout:
			t.Fatalf("watch %s: after %v, no report of %q; got %v", id, deadline, slices.Sorted(maps.Keys(missing)), got)
		}
	}
	return got
}

func checkCall(t *testing.T, c call) {
	t.Helper()
	if len(c.paths) == 0 {
		t.Errorf("watch %s: empty report", c.id)
	}
	if !slices.IsSorted(c.paths) || len(slices.Compact(slices.Clone(c.paths))) != len(c.paths) {
		t.Errorf("watch %s: paths %q not sorted and unique", c.id, c.paths)
	}
	for _, p := range c.paths {
		if !filepath.IsAbs(p) {
			t.Errorf("watch %s: path %q not absolute", c.id, p)
		}
	}
}

// reported lists every path reported to id in calls.
func reported(calls []call, id string) []string {
	var paths []string
	for _, c := range calls {
		if c.id == id {
			paths = append(paths, c.paths...)
		}
	}
	return paths
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTreeChanges(t *testing.T) {
	root := tempDir(t)
	writeFile(t, filepath.Join(root, "a/x.txt"), "x")
	writeFile(t, filepath.Join(root, "a/b/c/gone.txt"), "gone")
	writeFile(t, filepath.Join(root, "a/old.txt"), "old")
	w, calls := start(t, 50*time.Millisecond)
	mustWatch(t, w, "w", root)

	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"create", func() { writeFile(t, filepath.Join(root, "a/b/new.txt"), "new") }, []string{filepath.Join(root, "a/b/new.txt")}},
		{"modify", func() { writeFile(t, filepath.Join(root, "a/x.txt"), "x2") }, []string{filepath.Join(root, "a/x.txt")}},
		{"delete", func() {
			if err := os.Remove(filepath.Join(root, "a/b/c/gone.txt")); err != nil {
				t.Fatal(err)
			}
		}, []string{filepath.Join(root, "a/b/c/gone.txt")}},
		{"rename", func() {
			if err := os.Rename(filepath.Join(root, "a/old.txt"), filepath.Join(root, "a/b/c/renamed.txt")); err != nil {
				t.Fatal(err)
			}
		}, []string{filepath.Join(root, "a/old.txt"), filepath.Join(root, "a/b/c/renamed.txt")}},
		{"rename dir", func() {
			if err := os.Rename(filepath.Join(root, "a/b"), filepath.Join(root, "moved")); err != nil {
				t.Fatal(err)
			}
		}, []string{filepath.Join(root, "a/b"), filepath.Join(root, "moved")}},
		{"write in moved dir", func() { writeFile(t, filepath.Join(root, "moved/c/late.txt"), "late") }, []string{filepath.Join(root, "moved/c/late.txt")}},
	}
	for _, step := range steps {
		step.do()
		waitFor(t, calls, "w", step.want...)
	}
}

func TestNewDirectories(t *testing.T) {
	root := tempDir(t)
	w, calls := start(t, 50*time.Millisecond)
	mustWatch(t, w, "w", root)

	// Created faster than a watch can be added: reported from the walk.
	writeFile(t, filepath.Join(root, "p/q/r/f.txt"), "f")
	waitFor(t, calls, "w", filepath.Join(root, "p"), filepath.Join(root, "p/q/r/f.txt"))

	// Later changes in the new directories are seen through their watches.
	writeFile(t, filepath.Join(root, "p/q/r/g.txt"), "g")
	waitFor(t, calls, "w", filepath.Join(root, "p/q/r/g.txt"))

	if err := os.Mkdir(filepath.Join(root, "n"), 0o755); err != nil {
		t.Fatal(err)
	}
	waitFor(t, calls, "w", filepath.Join(root, "n"))
	writeFile(t, filepath.Join(root, "n/h.txt"), "h")
	waitFor(t, calls, "w", filepath.Join(root, "n/h.txt"))
}

func TestBatching(t *testing.T) {
	root := tempDir(t)
	w, calls := start(t, 500*time.Millisecond)
	mustWatch(t, w, "w", root)
	one, two := filepath.Join(root, "one.txt"), filepath.Join(root, "sub/two.txt")
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	waitFor(t, calls, "w", filepath.Join(root, "sub"))

	writeFile(t, one, "1")
	writeFile(t, two, "2")
	got := waitFor(t, calls, "w", one)
	if first := got[0].paths; !slices.Equal(first, []string{one, two}) {
		t.Errorf("first report = %q, want %q", first, []string{one, two})
	}
}

func TestGitIgnored(t *testing.T) {
	root := tempDir(t)
	writeFile(t, filepath.Join(root, ".git/HEAD"), "ref: refs/heads/main\n")
	writeFile(t, filepath.Join(root, "sub/.git/HEAD"), "ref: refs/heads/main\n")
	w, calls := start(t, 50*time.Millisecond)
	mustWatch(t, w, "w", root)

	writeFile(t, filepath.Join(root, ".git/index"), "index")
	writeFile(t, filepath.Join(root, ".git/objects/ab/cdef"), "object")
	writeFile(t, filepath.Join(root, "sub/.git/HEAD"), "changed")
	if err := os.Mkdir(filepath.Join(root, "other"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "other/.git"), "gitdir: elsewhere\n")
	sentinel := filepath.Join(root, "sentinel.txt")
	writeFile(t, sentinel, "done")

	got := waitFor(t, calls, "w", sentinel)
	for _, p := range reported(got, "w") {
		if strings.Contains(p+"/", "/.git/") {
			t.Errorf("reported %s", p)
		}
	}
}

func TestUnwatch(t *testing.T) {
	dirA, dirB := tempDir(t), tempDir(t)
	w, calls := start(t, 50*time.Millisecond)
	mustWatch(t, w, "a", dirA)
	mustWatch(t, w, "b", dirB)
	writeFile(t, filepath.Join(dirA, "before.txt"), "x")
	waitFor(t, calls, "a", filepath.Join(dirA, "before.txt"))

	w.Unwatch("a")
	w.Unwatch("no such watch")
	writeFile(t, filepath.Join(dirA, "after.txt"), "x")
	writeFile(t, filepath.Join(dirB, "sentinel.txt"), "x")
	got := waitFor(t, calls, "b", filepath.Join(dirB, "sentinel.txt"))
	if paths := reported(got, "a"); len(paths) > 0 {
		t.Errorf("unwatched a reported %q", paths)
	}

	// The id can be used again.
	mustWatch(t, w, "a", dirA)
	writeFile(t, filepath.Join(dirA, "again.txt"), "x")
	waitFor(t, calls, "a", filepath.Join(dirA, "again.txt"))
}

func TestSingleFile(t *testing.T) {
	dir := tempDir(t)
	file := filepath.Join(dir, "file.txt")
	writeFile(t, file, "v1")
	w, calls := start(t, 50*time.Millisecond)
	mustWatch(t, w, "f", file)

	writeFile(t, filepath.Join(dir, "sibling.txt"), "not watched")
	writeFile(t, file, "v2")
	got := waitFor(t, calls, "f", file)

	// An editor's atomic save.
	tmp := filepath.Join(dir, ".file.txt.swp")
	writeFile(t, tmp, "v3")
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
	got = append(got, waitFor(t, calls, "f", file)...)

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	got = append(got, waitFor(t, calls, "f", file)...)
	for _, p := range reported(got, "f") {
		if p != file {
			t.Errorf("reported %s, want only %s", p, file)
		}
	}
}

func TestNotYetExisting(t *testing.T) {
	dir := tempDir(t)
	root := filepath.Join(dir, "later/deep")
	w, calls := start(t, 50*time.Millisecond)
	mustWatch(t, w, "w", root)
	file := filepath.Join(dir, "later.txt")
	mustWatch(t, w, "f", file)

	writeFile(t, filepath.Join(dir, "unrelated.txt"), "x")
	writeFile(t, filepath.Join(root, "first.txt"), "x")
	got := waitFor(t, calls, "w", root)
	writeFile(t, filepath.Join(root, "second.txt"), "x")
	got = append(got, waitFor(t, calls, "w", filepath.Join(root, "second.txt"))...)

	writeFile(t, file, "x")
	got = append(got, waitFor(t, calls, "f", file)...)
	for _, p := range reported(got, "w") {
		if p != root && !strings.HasPrefix(p, root+"/") {
			t.Errorf("watch w reported %s, outside %s", p, root)
		}
	}
	for _, p := range reported(got, "f") {
		if p != file {
			t.Errorf("watch f reported %s, want only %s", p, file)
		}
	}

	// Deleted and created again: still watched.
	if err := os.RemoveAll(filepath.Join(dir, "later")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, calls, "w", root)
	writeFile(t, filepath.Join(root, "third.txt"), "x")
	waitFor(t, calls, "w", filepath.Join(root, "third.txt"))
}

func TestOverflow(t *testing.T) {
	root := tempDir(t)
	w, calls := start(t, 50*time.Millisecond)
	mustWatch(t, w, "w", root)
	w.fsw.Errors <- fsnotify.ErrEventOverflow
	got := waitFor(t, calls, "w", root)
	if !slices.Equal(got[0].paths, []string{root}) {
		t.Errorf("after overflow reported %q, want %q", got[0].paths, []string{root})
	}
}

func TestWatchErrors(t *testing.T) {
	dir := tempDir(t)
	w, _ := start(t, 0)
	if _, err := w.Watch("rel", "relative/path"); err == nil {
		t.Errorf("Watch of a relative path succeeded")
	}
	mustWatch(t, w, "dup", dir)
	if _, err := w.Watch("dup", dir); !errors.Is(err, ErrExists) {
		t.Errorf("Watch with a used id = %v, want ErrExists", err)
	}
}

func TestCanonical(t *testing.T) {
	dir := tempDir(t)
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	w, calls := start(t, 50*time.Millisecond)
	tests := []struct{ in, want string }{
		{filepath.Join(dir, "link") + "/", real},
		{filepath.Join(dir, "link/./sub/../missing/x"), filepath.Join(real, "missing/x")},
		{filepath.Join(dir, "nothing/here"), filepath.Join(dir, "nothing/here")},
	}
	for i, tt := range tests {
		got, err := w.Watch(string(rune('a'+i)), tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Watch(%s) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	writeFile(t, filepath.Join(dir, "link/f.txt"), "x")
	waitFor(t, calls, "a", filepath.Join(real, "f.txt"))
}

func TestClose(t *testing.T) {
	dir := tempDir(t)
	w, _ := start(t, 0)
	mustWatch(t, w, "w", dir)
	for i := range 2 {
		if err := w.Close(); err != nil {
			t.Errorf("Close #%d = %v", i+1, err)
		}
	}
	if _, err := w.Watch("x", dir); err == nil {
		t.Errorf("Watch after Close succeeded")
	}
	w.Unwatch("w")
}
