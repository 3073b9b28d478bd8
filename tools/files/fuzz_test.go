package files_test

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apserver/apserver/tools/files"
)

// FuzzReadsStayInside: whatever path the model gives, read_file, list_dir,
// search and ReadHead (AGENTS.md) bring back nothing of the files outside
// the workspace, each of which holds the word SECRET: not through ../
// chains, absolute paths, links out (absolute, relative, chained, to /),
// /proc/self/root or /proc/<pid>/fd, nor any mix of them the fuzzer finds.
// Nor does list_dir name what is only outside. The workspace is
// TestAttacks' one, without its hard link to a file outside (which
// read_file may read by design: see the package doc).
func FuzzReadsStayInside(f *testing.F) {
	e := newAttackEnv(f)
	if err := os.Remove(filepath.Join(e.ws, "hard")); err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		"a.txt", "sub/f.txt", "../outside/.ssh/id_rsa", "sub/../../outside/target.txt",
		e.outside + "/.ssh/id_rsa", "root" + e.outside + "/target.txt", "sib/.ssh/id_rsa", "sib/../outside/.bashrc",
		"key", "tlink", "l1", "l2/..", "loop/x", "dang", "dangrel", "procroot" + e.outside + "/target.txt",
		"/proc/self/root" + e.outside + "/.ssh/id_rsa", "/proc/self/cwd/../outside/target.txt", fmt.Sprintf("/proc/self/fd/%d", e.fd),
		fmt.Sprintf("/dev/fd/%d", e.fd), "/proc/thread-self/root" + e.outside, "sub/./../sib/dir/inner.txt", "sib/dir", "root/",
		"hooks/../../outside/docs/readme", "gitlink/../sib/etc/passwd", ".", "/", "//" + e.outside[1:] + "/dir",
		strings.Repeat("../", 30) + e.outside[1:] + "/etc/passwd", e.ws + "/../outside/sub/f.txt",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if strings.ContainsRune(p, 0) {
			return // no such path reaches a system call
		}
		read, _ := e.w.Read(files.ReadParams{Path: p, Limit: 50})
		list, _ := e.w.List(files.ListParams{Path: p, Depth: 3})
		found, _ := e.w.Search(files.SearchParams{Pattern: "SECRET", Path: p})
		head, _, _ := e.w.ReadHead(p, 4096)
		for tool, out := range map[string]string{"read_file": read, "list_dir": list, "search": found, "ReadHead": string(head)} {
			if strings.Contains(out, secret+"-") {
				t.Fatalf("%s(%q) brought back a file from outside the workspace:\n%s", tool, p, out)
			}
		}
		// Names only outside have no place in a listing either.
		for _, name := range []string{"id_rsa", ".bashrc", "inner.txt", "passwd", "readme", "target.txt"} {
			if strings.Contains(list, name) {
				t.Fatalf("list_dir(%q) lists %s, which is outside the workspace:\n%s", p, name, list)
			}
		}
	})
}

// FuzzWritesStayInside: whatever paths the model gives, write_file,
// edit_file and the changes they propose, committed as given or turned
// into a move or a delete, change nothing outside the workspace: the
// files beside it stay as they were and nothing appears next to it.
func FuzzWritesStayInside(f *testing.F) {
	for _, seed := range [][2]string{
		{"a.txt", "moved.txt"}, {"new/dir/n.txt", "sub/f.txt"}, {"../outside/target.txt", "a.txt"},
		{"a.txt", "../outside/new.txt"}, {"sib/new.txt", "sib/target.txt"}, {"key", "tlink"}, {"dang", "dangrel"},
		{"l1", "loop"}, {"hooks/pre-commit", "gitlink/config"}, {"root/tmp/x", "procroot/tmp/y"},
		{"/proc/self/root/tmp/z", "/proc/self/cwd/z"}, {"sub/../../outside/.bashrc", "sub/../a.txt"},
		{"hard", "pipe"}, {"sub", "a.txt/x"}, {".", "/"}, {"sub/f.txt", "sib/sub/f.txt"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, p, q string) {
		if strings.ContainsRune(p+q, 0) {
			return
		}
		e := newAttackEnv(t)
		before := snapshotOutside(t, e)
		if changes, err := e.w.Write(files.WriteParams{Path: p, Content: "pwned\n"}); err == nil {
			moved := slices.Clone(changes)
			for i := range moved {
				if moved[i].Kind == files.KindUpdate {
					moved[i].MoveTo = q
				}
			}
			deleted := slices.Clone(changes)
			for i := range deleted {
				if deleted[i].Kind == files.KindUpdate {
					deleted[i].Kind, deleted[i].New = files.KindDelete, nil
				}
			}
			_ = e.w.Commit(moved)
			_ = e.w.Commit(deleted)
			_ = e.w.Commit(changes)
		}
		if changes, err := e.w.Edit(files.EditParams{Path: p, OldString: "f", NewString: "pwned"}); err == nil {
			_ = e.w.Commit(changes)
		}
		if changes, err := e.w.Write(files.WriteParams{Path: q, Content: "pwned\n"}); err == nil {
			_ = e.w.Commit(changes)
		}
		if after := snapshotOutside(t, e); !maps.Equal(before, after) {
			t.Fatalf("writing %q (moved to %q) changed what is outside the workspace:\nbefore %q\nafter  %q", p, q, before, after)
		}
	})
}

// snapshotOutside is everything beside the workspace: each entry under
// its parent directory but the workspace, with its content or link target.
func snapshotOutside(t *testing.T, e *attackEnv) map[string]string {
	t.Helper()
	snap := map[string]string{}
	base := filepath.Dir(e.ws)
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == e.ws {
			return filepath.SkipDir
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			snap[p] = "-> " + target
			return err
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			snap[p] = string(data)
			return err
		default:
			snap[p] = d.Type().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}
