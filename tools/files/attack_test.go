package files_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/apserver/apserver/tools/files"
)

// attackEnv is a workspace at tmp/ws next to tmp/outside, which holds the
// secrets and files that the attacks try to read or change.
type attackEnv struct {
	w           *files.Workspace
	ws, outside string
	// fd is an open descriptor on outside/.ssh/id_rsa.
	fd int
}

const secret = "SECRET"

func newAttackEnv(t testing.TB) *attackEnv {
	t.Helper()
	tmp := t.TempDir()
	e := &attackEnv{ws: filepath.Join(tmp, "ws"), outside: filepath.Join(tmp, "outside")}
	writeTree(t, tmp, map[string]string{
		"ws/a.txt":              "a\n",
		"ws/sub/f.txt":          "f\n",
		"ws/.git/config":        "[core]\n",
		"ws/.git/hooks/":        "",
		"outside/.ssh/id_rsa":   secret + "-KEY\n",
		"outside/target.txt":    secret + "-TARGET\n",
		"outside/sub/f.txt":     "f\n", // same content as ws/sub/f.txt
		"outside/.bashrc":       secret + "-RC\n",
		"outside/etc/passwd":    secret + "-PASSWD\n",
		"outside/docs/readme":   secret + "-DOC\n",
		"outside/dir/inner.txt": secret + "-INNER\n",
	})
	links := []struct{ name, target string }{
		{"root", "/"},
		{"sib", "../outside"},
		{"key", filepath.Join(e.outside, ".ssh/id_rsa")},
		{"tlink", filepath.Join(e.outside, "target.txt")},
		{"dang", filepath.Join(e.outside, "created.txt")},
		{"dangrel", "../outside/created2.txt"},
		{"l1", "l2"},
		{"l2", "../outside/.ssh/id_rsa"},
		{"loop", "loop"},
		{"hooks", ".git/hooks"},
		{"gitlink", ".git"},
		{"procroot", "/proc/self/root"},
	}
	for _, l := range links {
		if err := os.Symlink(l.target, filepath.Join(e.ws, l.name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(e.outside, "target.txt"), filepath.Join(e.ws, "hard")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(e.ws, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(e.outside, ".ssh/id_rsa"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	e.fd = int(f.Fd())
	if e.w, err = files.NewWorkspace(e.ws, nil, nil); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *attackEnv) read(p string) (string, error) { return e.w.Read(files.ReadParams{Path: p}) }
func (e *attackEnv) list(p string) (string, error) {
	return e.w.List(files.ListParams{Path: p, Depth: 3})
}
func (e *attackEnv) search(p string) (string, error) {
	return e.w.Search(files.SearchParams{Pattern: ".", Path: p})
}

// edit and write commit the changes their tool proposes, so an attack
// succeeds only if both the tool and Commit let it through.
func (e *attackEnv) edit(p, old, new string) (string, error) {
	changes, err := e.w.Edit(files.EditParams{Path: p, OldString: old, NewString: new})
	if err != nil {
		return "", err
	}
	return "", e.w.Commit(changes)
}

func (e *attackEnv) write(p string) (string, error) {
	changes, err := e.w.Write(files.WriteParams{Path: p, Content: "pwned\n"})
	if err != nil {
		return "", err
	}
	return "", e.w.Commit(changes)
}

func (e *attackEnv) commit(c files.Change) (string, error) {
	return "", e.w.Commit([]files.Change{c})
}

func TestAttacks(t *testing.T) {
	proc := fmt.Sprintf("/proc/%d", os.Getpid())
	tests := []struct {
		name string
		run  func(t *testing.T, e *attackEnv) (string, error)
	}{
		// read_file
		{"read ../ chain", func(t *testing.T, e *attackEnv) (string, error) { return e.read("../outside/.ssh/id_rsa") }},
		{"read deep ../ chain", func(t *testing.T, e *attackEnv) (string, error) {
			return e.read("sub/../../../../../../../../.." + e.outside + "/.ssh/id_rsa")
		}},
		{"read /etc/passwd", func(t *testing.T, e *attackEnv) (string, error) { return e.read("/etc/passwd") }},
		{"read absolute outside", func(t *testing.T, e *attackEnv) (string, error) { return e.read(e.outside + "/.ssh/id_rsa") }},
		{"read ~/.ssh/id_rsa", func(t *testing.T, e *attackEnv) (string, error) { return e.read("~/.ssh/id_rsa") }},
		{"read ~user", func(t *testing.T, e *attackEnv) (string, error) { return e.read("~root/.ssh/id_rsa") }},
		{"read $HOME unexpanded", func(t *testing.T, e *attackEnv) (string, error) { return e.read("$HOME/.ssh/id_rsa") }},
		{"read through symlink to /", func(t *testing.T, e *attackEnv) (string, error) { return e.read("root" + e.outside + "/.ssh/id_rsa") }},
		{"read through symlink to sibling", func(t *testing.T, e *attackEnv) (string, error) { return e.read("sib/.ssh/id_rsa") }},
		{"read symlink to outside file", func(t *testing.T, e *attackEnv) (string, error) { return e.read("key") }},
		{"read symlink chain", func(t *testing.T, e *attackEnv) (string, error) { return e.read("l1") }},
		{"read symlink loop", func(t *testing.T, e *attackEnv) (string, error) { return e.read("loop") }},
		{"read /proc/self/root", func(t *testing.T, e *attackEnv) (string, error) {
			return e.read("/proc/self/root" + e.outside + "/.ssh/id_rsa")
		}},
		{"read /proc/pid/root", func(t *testing.T, e *attackEnv) (string, error) { return e.read(proc + "/root/etc/passwd") }},
		{"read /proc/self/cwd/..", func(t *testing.T, e *attackEnv) (string, error) { return e.read("/proc/self/cwd/../x") }},
		{"read /proc/pid/cwd", func(t *testing.T, e *attackEnv) (string, error) { return e.read(proc + "/cwd/attack_test.go") }},
		{"read /dev/fd", func(t *testing.T, e *attackEnv) (string, error) { return e.read(fmt.Sprintf("/dev/fd/%d", e.fd)) }},
		{"read /proc/self/fd", func(t *testing.T, e *attackEnv) (string, error) {
			return e.read(fmt.Sprintf("/proc/self/fd/%d", e.fd))
		}},
		{"read symlink to /proc/self/root", func(t *testing.T, e *attackEnv) (string, error) {
			return e.read("procroot" + e.outside + "/.ssh/id_rsa")
		}},
		{"read NUL byte", func(t *testing.T, e *attackEnv) (string, error) { return e.read("a.txt\x00/../../outside/.ssh/id_rsa") }},
		{"read very long path", func(t *testing.T, e *attackEnv) (string, error) {
			return e.read(strings.Repeat("sub/../", 700) + "../outside/.ssh/id_rsa")
		}},
		{"read long component", func(t *testing.T, e *attackEnv) (string, error) { return e.read(strings.Repeat("x", 300)) }},
		{"read fifo", func(t *testing.T, e *attackEnv) (string, error) { return e.read("pipe") }},

		// list_dir
		{"list ..", func(t *testing.T, e *attackEnv) (string, error) { return e.list("..") }},
		{"list /", func(t *testing.T, e *attackEnv) (string, error) { return e.list("/") }},
		{"list symlink to sibling", func(t *testing.T, e *attackEnv) (string, error) { return e.list("sib") }},
		{"list /proc/self/root", func(t *testing.T, e *attackEnv) (string, error) { return e.list("/proc/self/root" + e.outside) }},
		{"list ~", func(t *testing.T, e *attackEnv) (string, error) { return e.list("~") }},

		// search
		{"search ../outside", func(t *testing.T, e *attackEnv) (string, error) { return e.search("../outside") }},
		{"search /etc", func(t *testing.T, e *attackEnv) (string, error) { return e.search("/etc") }},
		{"search symlinked dir", func(t *testing.T, e *attackEnv) (string, error) { return e.search("sib/dir") }},
		{"search symlink to outside file", func(t *testing.T, e *attackEnv) (string, error) { return e.search("key") }},
		{"search /proc/self/cwd", func(t *testing.T, e *attackEnv) (string, error) { return e.search("/proc/self/cwd") }},

		// edit_file
		{"edit ../ outside", func(t *testing.T, e *attackEnv) (string, error) {
			return e.edit("../outside/target.txt", secret, "pwned")
		}},
		{"edit absolute outside", func(t *testing.T, e *attackEnv) (string, error) {
			return e.edit(e.outside+"/target.txt", secret, "pwned")
		}},
		{"edit through symlinked parent", func(t *testing.T, e *attackEnv) (string, error) {
			return e.edit("sib/target.txt", secret, "pwned")
		}},
		{"edit symlink to outside file", func(t *testing.T, e *attackEnv) (string, error) { return e.edit("tlink", secret, "pwned") }},
		{"edit hard link to outside file", func(t *testing.T, e *attackEnv) (string, error) { return e.edit("hard", secret, "pwned") }},
		{"edit .git/config", func(t *testing.T, e *attackEnv) (string, error) {
			return e.edit(".git/config", "[core]", "[core]\n\thooksPath = /tmp")
		}},
		{"edit create hook via ..", func(t *testing.T, e *attackEnv) (string, error) {
			return e.edit("sub/../.git/hooks/pre-commit", "", "#!/bin/sh\n")
		}},
		{"edit ~/.bashrc", func(t *testing.T, e *attackEnv) (string, error) { return e.edit("~/.bashrc", secret, "pwned") }},

		// write_file
		{"write ../ outside", func(t *testing.T, e *attackEnv) (string, error) { return e.write("../outside/new.txt") }},
		{"write absolute outside", func(t *testing.T, e *attackEnv) (string, error) { return e.write(e.outside + "/new.txt") }},
		{"write dangling symlink", func(t *testing.T, e *attackEnv) (string, error) { return e.write("dang") }},
		{"write relative dangling symlink", func(t *testing.T, e *attackEnv) (string, error) { return e.write("dangrel") }},
		{"write into symlinked parent", func(t *testing.T, e *attackEnv) (string, error) { return e.write("sib/new.txt") }},
		{"write hard link", func(t *testing.T, e *attackEnv) (string, error) { return e.write("hard") }},
		{"write .git/hooks/pre-commit", func(t *testing.T, e *attackEnv) (string, error) { return e.write(".git/hooks/pre-commit") }},
		{"write case-folded .GIT", func(t *testing.T, e *attackEnv) (string, error) { return e.write(".GIT/hooks/pre-commit") }},
		{"write via symlink into .git", func(t *testing.T, e *attackEnv) (string, error) { return e.write("hooks/pre-commit") }},
		{"write via symlink named other than .git", func(t *testing.T, e *attackEnv) (string, error) {
			return e.write("gitlink/hooks/post-checkout")
		}},
		{"write fifo", func(t *testing.T, e *attackEnv) (string, error) { return e.write("pipe") }},
		{"write /proc/self/cwd/..", func(t *testing.T, e *attackEnv) (string, error) { return e.write("/proc/self/cwd/../x.txt") }},
		{"write /proc/self/root", func(t *testing.T, e *attackEnv) (string, error) {
			return e.write("/proc/self/root" + e.outside + "/new.txt")
		}},
		{"write /dev/fd", func(t *testing.T, e *attackEnv) (string, error) { return e.write(fmt.Sprintf("/dev/fd/%d", e.fd)) }},
		{"write ~/.bashrc", func(t *testing.T, e *attackEnv) (string, error) { return e.write("~/.bashrc") }},
		{"write NUL byte", func(t *testing.T, e *attackEnv) (string, error) { return e.write("new\x00.txt") }},
		{"write very long path", func(t *testing.T, e *attackEnv) (string, error) {
			return e.write(strings.Repeat("d/", 2100) + "x.txt")
		}},

		// Commit with forged changes
		{"commit add outside", func(t *testing.T, e *attackEnv) (string, error) {
			return e.commit(files.Change{Kind: files.KindAdd, Path: "../outside/new.txt", New: []byte("x")})
		}},
		{"commit delete outside", func(t *testing.T, e *attackEnv) (string, error) {
			return e.commit(files.Change{Kind: files.KindDelete, Path: e.outside + "/target.txt", Old: []byte(secret + "-TARGET\n")})
		}},
		{"commit move to outside", func(t *testing.T, e *attackEnv) (string, error) {
			return e.commit(files.Change{Kind: files.KindUpdate, Path: "a.txt", MoveTo: "../outside/moved.txt", Old: []byte("a\n"), New: []byte("a\n")})
		}},
		{"commit move from outside via symlink", func(t *testing.T, e *attackEnv) (string, error) {
			return e.commit(files.Change{Kind: files.KindUpdate, Path: "tlink", MoveTo: "stolen.txt", Old: []byte(secret + "-TARGET\n"), New: []byte("x")})
		}},
		{"commit delete hard link", func(t *testing.T, e *attackEnv) (string, error) {
			return e.commit(files.Change{Kind: files.KindDelete, Path: "hard", Old: []byte(secret + "-TARGET\n")})
		}},
		{"commit add git hook", func(t *testing.T, e *attackEnv) (string, error) {
			return e.commit(files.Change{Kind: files.KindAdd, Path: ".git/hooks/pre-commit", New: []byte("#!/bin/sh\n")})
		}},
		{"commit add through dangling symlink", func(t *testing.T, e *attackEnv) (string, error) {
			return e.commit(files.Change{Kind: files.KindAdd, Path: "dang", New: []byte("x")})
		}},
		{"commit NUL byte", func(t *testing.T, e *attackEnv) (string, error) {
			return e.commit(files.Change{Kind: files.KindAdd, Path: "x\x00y", New: []byte("x")})
		}},
		{"commit after parent swapped for symlink", func(t *testing.T, e *attackEnv) (string, error) {
			changes, err := e.w.Edit(files.EditParams{Path: "sub/f.txt", OldString: "f", NewString: "pwned"})
			if err != nil {
				t.Fatalf("Edit before the swap: %v", err)
			}
			sub := filepath.Join(e.ws, "sub")
			if err := os.RemoveAll(sub); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(e.outside, "sub"), sub); err != nil {
				t.Fatal(err)
			}
			return "", e.w.Commit(changes)
		}},
		{"commit after file swapped for symlink", func(t *testing.T, e *attackEnv) (string, error) {
			changes, err := e.w.Write(files.WriteParams{Path: "sub/f.txt", Content: "pwned"})
			if err != nil {
				t.Fatalf("Write before the swap: %v", err)
			}
			f := filepath.Join(e.ws, "sub/f.txt")
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(e.outside, "sub/f.txt"), f); err != nil {
				t.Fatal(err)
			}
			return "", e.w.Commit(changes)
		}},

		// Stamp
		{"stamp outside", func(t *testing.T, e *attackEnv) (string, error) {
			_, err := e.w.Stamp("../outside/.ssh/id_rsa")
			return "", err
		}},
	}
	if len(tests) < 35 {
		t.Fatalf("only %d attack cases", len(tests))
	}
	escapes := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newAttackEnv(t)
			t.Setenv("HOME", e.outside)
			outside, git := snapshot(t, e.outside), snapshot(t, filepath.Join(e.ws, ".git"))
			out, err := tt.run(t, e)
			t.Logf("refused: %v", err)
			if err == nil {
				escapes++
				t.Errorf("no error; output %q", out)
			}
			if strings.Contains(out, secret) {
				escapes++
				t.Errorf("output leaks a secret: %q", out)
			}
			if snapshot(t, e.outside) != outside || snapshot(t, filepath.Join(e.ws, ".git")) != git {
				escapes++
				t.Errorf("the attack changed files outside the workspace or in .git")
			}
			if _, err := os.Lstat(filepath.Join(e.ws, ".GIT")); err == nil {
				escapes++
				t.Errorf("the attack created .GIT")
			}
		})
	}
	if escapes > 0 {
		t.Errorf("%d escapes in %d attack cases", escapes, len(tests))
	}
}

// TestWalksDoNotFollowSymlinks checks that list_dir and search over the
// whole workspace, which holds symlinks to the outside, never show what is
// outside.
func TestWalksDoNotFollowSymlinks(t *testing.T) {
	e := newAttackEnv(t)
	// Reading a hard link is allowed (see the package doc); this test is
	// about symlinks.
	if err := os.Remove(filepath.Join(e.ws, "hard")); err != nil {
		t.Fatal(err)
	}
	outside := snapshot(t, e.outside)
	listing, err := e.w.List(files.ListParams{Depth: 10})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(listing, ".ssh") || strings.Contains(listing, "target.txt") || strings.Contains(listing, ".git/") {
		t.Errorf("List shows what is outside or in .git:\n%s", listing)
	}
	found, err := e.w.Search(files.SearchParams{Pattern: secret + "|core"})
	if err != nil {
		t.Fatal(err)
	}
	if found != "No matches found.\n" {
		t.Errorf("Search found outside or .git content:\n%s", found)
	}
	if snapshot(t, e.outside) != outside {
		t.Error("walking changed files outside")
	}
}
