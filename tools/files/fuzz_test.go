package files_test

import (
	"fmt"
	"os"
	"path/filepath"
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
