package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// testGit runs git in dir the way a user would, minus their configuration,
// and returns its output.
func testGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"LC_ALL=C",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, root, rel string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
		t.Fatal(err)
	}
}

// files describes every file under root outside .git directories: path ->
// type, executable bit and content (or link target).
func files(t *testing.T, root string) map[string]string {
	t.Helper()
	m := make(map[string]string)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			m[filepath.ToSlash(rel)] = "link:" + target
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			m[filepath.ToSlash(rel)] = fmt.Sprintf("file(x=%t):%s", fi.Mode()&0o111 != 0, data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// fingerprint hashes everything under dir: every file's path, mode, mtime
// and bytes, every directory and symlink.
func fingerprint(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s\x00%v\x00%d\x00", rel, fi.Mode(), fi.ModTime().UnixNano())
		switch {
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(data)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			h.Write([]byte(target))
		}
		h.Write([]byte{0})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// copyWorkspace copies root into dst, without .git directories, keeping
// modes and symlinks.
func copyWorkspace(t *testing.T, root, dst string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, p)
		out := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			return os.MkdirAll(out, 0o755)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, out)
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := os.WriteFile(out, data, fi.Mode().Perm()); err != nil {
				return err
			}
			return os.Chmod(out, fi.Mode().Perm())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// plainGitDiff computes, in a throwaway repository of its own, what `git
// diff` prints between the workspaces copied into before and after.
func plainGitDiff(t *testing.T, before, after string) string {
	t.Helper()
	repo := t.TempDir()
	testGit(t, repo, "init", "-q")
	for i, state := range []string{before, after} {
		entries, err := os.ReadDir(repo)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() != ".git" {
				remove(t, repo, e.Name())
			}
		}
		copyWorkspace(t, state, repo)
		testGit(t, repo, "add", "-A")
		testGit(t, repo, "commit", "-q", "--allow-empty", "-m", fmt.Sprint(i))
	}
	return testGit(t, repo, "diff", "HEAD~1", "HEAD")
}

func open(t *testing.T, ws string, opt Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), t.TempDir(), ws, opt)
	if err != nil {
		t.Fatalf("Open(%s) = %v", ws, err)
	}
	return s
}

func snapshot(t *testing.T, s *Store, label string) Snapshot {
	t.Helper()
	snap, err := s.Snapshot(context.Background(), label)
	if err != nil {
		t.Fatalf("Snapshot(%q) = %v", label, err)
	}
	return snap
}

func changed(t *testing.T, s *Store, from, to Snapshot) []string {
	t.Helper()
	paths, err := s.Changed(context.Background(), from.ID, to.ID)
	if err != nil {
		t.Fatalf("Changed = %v", err)
	}
	return paths
}

func restore(t *testing.T, s *Store, target, current Snapshot) []string {
	t.Helper()
	paths, err := s.Restore(context.Background(), target.ID, current.ID)
	if err != nil {
		t.Fatalf("Restore = %v", err)
	}
	return paths
}

// treePaths lists the files of a snapshot straight from the store.
func treePaths(t *testing.T, s *Store, snap Snapshot) []string {
	t.Helper()
	m, err := s.tracked(context.Background(), snap.ID)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(maps.Keys(m))
}

func diffMaps(want, got map[string]string) string {
	var b strings.Builder
	keys := maps.Clone(want)
	maps.Copy(keys, got)
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if want[k] != got[k] {
			fmt.Fprintf(&b, "%s: got %q, want %q\n", k, got[k], want[k])
		}
	}
	return b.String()
}

// symlink creates root/rel as a symlink to target, making its parent.
func symlink(t *testing.T, root, target, rel string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}
