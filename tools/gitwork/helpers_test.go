package gitwork

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain hides the machine's git configuration, so that the tests see a
// user with no identity and no global hooks, as a fresh machine would.
func TestMain(m *testing.M) {
	os.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	if os.Getenv(helperEnv) != "" {
		helperMain() // a process of TestKilledAnywhere, killed at some point
	}
	os.Exit(m.Run())
}

// testGit runs git in dir the way a user would (with an identity of their
// own) and returns its trimmed output.
func testGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := testGitErr(dir, args...)
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(out)
}

func testGitErr(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C",
		"GIT_AUTHOR_NAME=User", "GIT_AUTHOR_EMAIL=user@example.com",
		"GIT_COMMITTER_NAME=User", "GIT_COMMITTER_EMAIL=user@example.com")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func write(t testing.TB, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t testing.TB, root, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// newRepo is a repository on branch main with one commit holding greet.sh
// and a .gitignore for *.log.
func newRepo(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	testGit(t, dir, "init", "-q", "-b", "main")
	write(t, dir, "greet.sh", "#!/bin/sh\necho hello\n")
	write(t, dir, ".gitignore", "*.log\n")
	testGit(t, dir, "add", "-A")
	testGit(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

func open(t testing.TB, dir string) *Repo {
	t.Helper()
	r, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("Open(%s) = %v", dir, err)
	}
	return r
}

// addWorktree gives the test a run worktree on a new branch from main.
func addWorktree(t testing.TB, r *Repo, name string) (path, branch string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), name)
	branch = "apserver/" + name
	if err := r.AddWorktree(context.Background(), path, branch, "main"); err != nil {
		t.Fatalf("AddWorktree(%s) = %v", path, err)
	}
	return path, branch
}

// tree fingerprints every file under root (path, mode, content hash), .git
// excluded, so that a test can tell whether a checkout changed.
func tree(t testing.TB, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if d.Name() == ".git" {
				return fs.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		m[rel] = info.Mode().String() + " " + hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func removeAll(t testing.TB, path string) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
}
