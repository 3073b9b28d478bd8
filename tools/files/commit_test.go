package files_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/tools/files"
)

func TestCommit(t *testing.T) {
	tree := map[string]string{"a.txt": "a\n", "b.txt": "b\n", "dir/c.txt": "c\n"}
	tests := []struct {
		name    string
		changes []files.Change
		want    map[string]string // contents after; "<missing>" for none
	}{
		{name: "add update delete", changes: []files.Change{
			{Kind: files.KindAdd, Path: "new/deep/n.txt", New: []byte("n\n")},
			{Kind: files.KindUpdate, Path: "a.txt", Old: []byte("a\n"), New: []byte("A\n")},
			{Kind: files.KindDelete, Path: "b.txt", Old: []byte("b\n")},
		}, want: map[string]string{"new/deep/n.txt": "n\n", "a.txt": "A\n", "b.txt": "<missing>"}},
		{name: "move with new content", changes: []files.Change{
			{Kind: files.KindUpdate, Path: "dir/c.txt", MoveTo: "moved/c2.txt", Old: []byte("c\n"), New: []byte("C\n")},
		}, want: map[string]string{"dir/c.txt": "<missing>", "moved/c2.txt": "C\n"}},
		{name: "move onto itself", changes: []files.Change{
			{Kind: files.KindUpdate, Path: "a.txt", MoveTo: "./a.txt", Old: []byte("a\n"), New: []byte("x\n")},
		}, want: map[string]string{"a.txt": "x\n"}},
		{name: "nothing", changes: nil, want: map[string]string{"a.txt": "a\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, root := newWorkspace(t, tree)
			if err := w.Commit(tt.changes); err != nil {
				t.Fatalf("Commit = %v", err)
			}
			for name, want := range tt.want {
				if got := readFile(t, root, name); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			leftovers, _ := filepath.Glob(filepath.Join(root, "*", ".apserver-*"))
			top, _ := filepath.Glob(filepath.Join(root, ".apserver-*"))
			if len(leftovers)+len(top) > 0 {
				t.Errorf("temporary files left: %v %v", top, leftovers)
			}
		})
	}
}

func TestCommitRefuses(t *testing.T) {
	tree := map[string]string{"a.txt": "a\n", "b.txt": "b\n", "file": "f"}
	tests := []struct {
		name    string
		changes []files.Change
		wantErr string
	}{
		{name: "stale update", changes: []files.Change{
			{Kind: files.KindUpdate, Path: "a.txt", Old: []byte("not a\n"), New: []byte("x")},
		}, wantErr: "has changed since this change was made"},
		{name: "stale delete", changes: []files.Change{
			{Kind: files.KindDelete, Path: "a.txt", Old: []byte("nope")},
		}, wantErr: "has changed"},
		{name: "update of a missing file", changes: []files.Change{
			{Kind: files.KindUpdate, Path: "gone.txt", Old: []byte("x"), New: []byte("y")},
		}, wantErr: "no longer exists"},
		{name: "add over an existing file", changes: []files.Change{
			{Kind: files.KindAdd, Path: "a.txt", New: []byte("x")},
		}, wantErr: "already exists"},
		{name: "move onto an existing file", changes: []files.Change{
			{Kind: files.KindUpdate, Path: "a.txt", MoveTo: "b.txt", Old: []byte("a\n"), New: []byte("x")},
		}, wantErr: "already exists"},
		{name: "same file twice", changes: []files.Change{
			{Kind: files.KindUpdate, Path: "a.txt", Old: []byte("a\n"), New: []byte("1")},
			{Kind: files.KindUpdate, Path: "./a.txt", Old: []byte("a\n"), New: []byte("2")},
		}, wantErr: "another change in this commit also touches a.txt"},
		{name: "unknown kind", changes: []files.Change{{Kind: "rename", Path: "a.txt"}}, wantErr: "unknown change kind"},
		{name: "delete with move", changes: []files.Change{
			{Kind: files.KindDelete, Path: "a.txt", MoveTo: "c.txt", Old: []byte("a\n")},
		}, wantErr: "cannot move"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, root := newWorkspace(t, tree)
			before := snapshot(t, root)
			err := w.Commit(tt.changes)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Commit = %v, want error containing %q", err, tt.wantErr)
			}
			if after := snapshot(t, root); after != before {
				t.Errorf("the tree changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestCommitAtomic makes a later change fail after earlier ones succeeded and
// checks that the tree ends up byte-identical.
func TestCommitAtomic(t *testing.T) {
	tree := map[string]string{"a.txt": "a\n", "b.txt": "b\n", "keep/k.txt": "k\n", "file": "f"}
	tests := []struct {
		name    string
		changes []files.Change
		wantErr string
	}{
		{
			// Found before anything is written.
			name: "parent is a regular file",
			changes: []files.Change{
				{Kind: files.KindUpdate, Path: "a.txt", Old: []byte("a\n"), New: []byte("A\n")},
				{Kind: files.KindAdd, Path: "file/x.txt", New: []byte("x")},
			},
			wantErr: "one of its parent directories is a file",
		},
		{
			// The first add makes directories n and n/m for its temporary
			// file; the second add's name is then taken. The rename fails,
			// and the first add and both directories are removed.
			name: "name taken by a directory the commit made",
			changes: []files.Change{
				{Kind: files.KindAdd, Path: "n/m/x.txt", New: []byte("x")},
				{Kind: files.KindAdd, Path: "n", New: []byte("n")},
				{Kind: files.KindAdd, Path: "n/y.txt", New: []byte("y")},
			},
			wantErr: `add "n":`,
		},
		{
			// Update, delete, move and add all succeed; then an add fails
			// on rename because an earlier change made a directory of that
			// name. Everything is undone.
			name: "rename fails after others applied",
			changes: []files.Change{
				{Kind: files.KindUpdate, Path: "a.txt", Old: []byte("a\n"), New: []byte("A\n")},
				{Kind: files.KindDelete, Path: "b.txt", Old: []byte("b\n")},
				{Kind: files.KindUpdate, Path: "keep/k.txt", MoveTo: "moved/k.txt", Old: []byte("k\n"), New: []byte("K\n")},
				{Kind: files.KindAdd, Path: "d/e/f.txt", New: []byte("f")},
				{Kind: files.KindAdd, Path: "d", New: []byte("d")},
			},
			wantErr: `add "d": rename`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, root := newWorkspace(t, tree)
			if err := os.Chmod(filepath.Join(root, "a.txt"), 0o751); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, root)
			err := w.Commit(tt.changes)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "no change was written") {
				t.Fatalf("Commit = %v, want error containing %q and saying nothing was written", err, tt.wantErr)
			}
			if after := snapshot(t, root); after != before {
				t.Errorf("the tree changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

func TestCommitModes(t *testing.T) {
	w, root := newWorkspace(t, map[string]string{"run.sh": "echo\n"})
	if err := os.Chmod(filepath.Join(root, "run.sh"), 0o754); err != nil {
		t.Fatal(err)
	}
	changes := []files.Change{
		{Kind: files.KindUpdate, Path: "run.sh", Old: []byte("echo\n"), New: []byte("echo hi\n")},
		{Kind: files.KindAdd, Path: "new.txt", New: []byte("n")},
	}
	if err := w.Commit(changes); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{"run.sh": 0o754, "new.txt": 0o644} {
		fi, err := os.Stat(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode = %v, want %v", name, fi.Mode().Perm(), want)
		}
	}
}

// TestToolsThenCommit runs the tools' changes through Commit, with a stale
// one in the same batch: nothing is written.
func TestToolsThenCommit(t *testing.T) {
	w, root := newWorkspace(t, map[string]string{"a.txt": "one\n", "b.txt": "two\n"})
	c1, err := w.Edit(files.EditParams{Path: "a.txt", OldString: "one", NewString: "uno"})
	if err != nil {
		t.Fatal(err)
	}
	c2, err := w.Write(files.WriteParams{Path: "b.txt", Content: "dos\n"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "b.txt"), []byte("user edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, root)
	if err := w.Commit(append(c1, c2...)); err == nil || !strings.Contains(err.Error(), `update "b.txt"`) {
		t.Fatalf("Commit = %v, want a stale b.txt error", err)
	}
	if snapshot(t, root) != before {
		t.Error("a refused commit changed the tree")
	}
	if err := w.Commit(c1); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, root, "a.txt"); got != "uno\n" {
		t.Errorf("a.txt = %q", got)
	}
}
