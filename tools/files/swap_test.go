package files

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// swapSetup makes tmp/ws with sub/f.txt and a.txt, and tmp/outside with
// f.txt and a.txt, and returns the workspace and both directories.
func swapSetup(t *testing.T) (*Workspace, string, string) {
	t.Helper()
	tmp := t.TempDir()
	ws, outside := filepath.Join(tmp, "ws"), filepath.Join(tmp, "outside")
	for _, d := range []string{filepath.Join(ws, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"ws/sub/f.txt", "ws/a.txt", "outside/f.txt", "outside/a.txt"} {
		if err := os.WriteFile(filepath.Join(tmp, f), []byte("orig\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := NewWorkspace(ws, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return w, ws, outside
}

func checkOutside(t *testing.T, outside string) {
	t.Helper()
	for _, f := range []string{"f.txt", "a.txt"} {
		data, err := os.ReadFile(filepath.Join(outside, f))
		if err != nil || string(data) != "orig\n" {
			t.Errorf("outside/%s = %q, %v; want it unchanged", f, data, err)
		}
	}
	if des, _ := os.ReadDir(outside); len(des) != 2 {
		t.Errorf("outside has %d entries, want 2", len(des))
	}
}

// swapDir replaces dir with a symlink to target, keeping the old directory
// as dir+".old".
func swapDir(t *testing.T, dir, target string) {
	t.Helper()
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, dir); err != nil {
		t.Fatal(err)
	}
}

// TestSwapAfterCheck swaps symlinks in after Commit's checks and before it
// writes: the writes stay in the directories that were checked.
func TestSwapAfterCheck(t *testing.T) {
	t.Run("directory opened at check time", func(t *testing.T) {
		w, ws, outside := swapSetup(t)
		steps, err := w.check([]Change{{Kind: KindUpdate, Path: "sub/f.txt", Old: []byte("orig\n"), New: []byte("new\n")}})
		defer closeSteps(steps)
		if err != nil {
			t.Fatal(err)
		}
		swapDir(t, filepath.Join(ws, "sub"), outside)
		var tx txn
		if err := tx.run(steps); err != nil {
			t.Fatal(err)
		}
		checkOutside(t, outside)
		if data, _ := os.ReadFile(filepath.Join(ws, "sub.old", "f.txt")); string(data) != "new\n" {
			t.Errorf("the checked directory's f.txt = %q, want the new content", data)
		}
	})
	t.Run("directory to create in", func(t *testing.T) {
		w, ws, outside := swapSetup(t)
		steps, err := w.check([]Change{{Kind: KindAdd, Path: "sub/g.txt", New: []byte("g\n")}})
		defer closeSteps(steps)
		if err != nil {
			t.Fatal(err)
		}
		swapDir(t, filepath.Join(ws, "sub"), outside)
		var tx txn
		err = tx.run(steps)
		if !errors.Is(err, syscall.ELOOP) && !errors.Is(err, syscall.ENOTDIR) {
			t.Fatalf("run = %v, want a symlink refusal", err)
		}
		if err := tx.rollback(steps); err != nil {
			t.Fatal(err)
		}
		checkOutside(t, outside)
	})
	t.Run("file replaced by symlink", func(t *testing.T) {
		w, ws, outside := swapSetup(t)
		steps, err := w.check([]Change{{Kind: KindUpdate, Path: "a.txt", Old: []byte("orig\n"), New: []byte("new\n")}})
		defer closeSteps(steps)
		if err != nil {
			t.Fatal(err)
		}
		a := filepath.Join(ws, "a.txt")
		if err := os.Remove(a); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(outside, "a.txt"), a); err != nil {
			t.Fatal(err)
		}
		var tx txn
		if err := tx.run(steps); err != nil {
			t.Fatal(err)
		}
		checkOutside(t, outside)
		fi, err := os.Lstat(a)
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("a.txt = %v, %v; want the symlink replaced by a regular file", fi, err)
		}
	})
	t.Run("read through swapped parent", func(t *testing.T) {
		w, ws, outside := swapSetup(t)
		abs, err := w.ResolveRead("sub/f.txt")
		if err != nil {
			t.Fatal(err)
		}
		swapDir(t, filepath.Join(ws, "sub"), outside)
		f, _, err := openEntry(w.root, abs)
		if err == nil {
			f.Close()
			t.Fatal("openEntry followed a symlink swapped in after resolving")
		}
	})
}
