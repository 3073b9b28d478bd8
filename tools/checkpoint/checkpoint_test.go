package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// TestUserRepository snapshots a workspace that is a git repository with
// history, a branch, a staged change and an untracked file, and checks that
// the user's .git is not touched by anything the store does.
func TestUserRepository(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	testGit(t, ws, "init", "-q", "-b", "main")
	write(t, ws, ".gitignore", "*.log\nbuild/\n")
	write(t, ws, "README.md", "# demo\n")
	write(t, ws, "src/main.go", "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n")
	write(t, ws, "src/util.go", strings.Repeat("// util line\n", 20))
	write(t, ws, "docs/a.txt", "a\n")
	write(t, ws, "script.sh", "#!/bin/sh\necho hi\n")
	write(t, ws, "bin.dat", "\x00\x01\x02binary")
	testGit(t, ws, "add", "-A")
	testGit(t, ws, "commit", "-q", "-m", "one")
	testGit(t, ws, "checkout", "-q", "-b", "feature")
	write(t, ws, "feature.txt", "feature\n")
	testGit(t, ws, "add", "feature.txt")
	testGit(t, ws, "commit", "-q", "-m", "feature")
	testGit(t, ws, "checkout", "-q", "main")
	write(t, ws, "README.md", "# demo\n\nstaged\n")
	testGit(t, ws, "add", "README.md")
	write(t, ws, "notes.txt", "untracked\n")
	write(t, ws, "debug.log", "ignored\n")
	write(t, ws, "build/out", "ignored\n")

	userGit := fingerprint(t, filepath.Join(ws, ".git"))
	dataDir := t.TempDir()
	s, err := Open(ctx, dataDir, ws, Options{})
	if err != nil {
		t.Fatalf("Open = %v", err)
	}

	sum := sha256.Sum256([]byte(ws))
	storeDir := filepath.Join(dataDir, "checkpoints", hex.EncodeToString(sum[:])[:16]+".git")
	if s.dir != storeDir {
		t.Errorf("store at %s, want %s", s.dir, storeDir)
	}
	if got := strings.TrimSpace(testGit(t, s.dir, "rev-parse", "--is-bare-repository")); got != "true" {
		t.Errorf("store is bare = %s, want true", got)
	}

	first := snapshot(t, s, "turn 1")
	wantFirst := []string{".gitignore", "README.md", "bin.dat", "docs/a.txt", "notes.txt", "script.sh", "src/main.go", "src/util.go"}
	if got := treePaths(t, s, first); !slices.Equal(got, wantFirst) {
		t.Errorf("first snapshot has %q, want %q", got, wantFirst)
	}
	before := t.TempDir()
	copyWorkspace(t, ws, before)
	filesBefore := files(t, ws)

	write(t, ws, "src/main.go", "package main\n\nfunc main() {\n\tprintln(\"bye\")\n}\n")
	write(t, ws, "new/dir/file.txt", "new\n")
	remove(t, ws, "docs/a.txt")
	if err := os.Rename(filepath.Join(ws, "src/util.go"), filepath.Join(ws, "src/helpers.go")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(ws, "script.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, ws, "bin.dat", "\x00\x01\x03binary")
	write(t, ws, "debug.log", "ignored, changed\n")
	write(t, ws, "build/new", "ignored, new\n")

	second := snapshot(t, s, "turn 2")
	after := t.TempDir()
	copyWorkspace(t, ws, after)

	diff, err := s.Diff(ctx, first.ID, second.ID)
	if err != nil {
		t.Fatalf("Diff = %v", err)
	}
	if want := plainGitDiff(t, before, after); diff != want {
		t.Errorf("Diff =\n%s\nwant (git diff)\n%s", diff, want)
	}
	for _, want := range []string{"rename from src/util.go", "old mode 100644\nnew mode 100755", "Binary files a/bin.dat and b/bin.dat differ"} {
		if !strings.Contains(diff, want) {
			t.Errorf("Diff lacks %q:\n%s", want, diff)
		}
	}

	wantChanged := []string{"bin.dat", "docs/a.txt", "new/dir/file.txt", "script.sh", "src/helpers.go", "src/main.go", "src/util.go"}
	if got := changed(t, s, first, second); !slices.Equal(got, wantChanged) {
		t.Errorf("Changed = %q, want %q", got, wantChanged)
	}

	if got := restore(t, s, first, second); !slices.Equal(got, wantChanged) {
		t.Errorf("Restore = %q, want %q", got, wantChanged)
	}
	wantFiles := filesBefore
	wantFiles["debug.log"] = "file(x=false):ignored, changed\n"
	wantFiles["build/new"] = "file(x=false):ignored, new\n"
	if d := diffMaps(wantFiles, files(t, ws)); d != "" {
		t.Errorf("after Restore:\n%s", d)
	}
	if _, err := os.Stat(filepath.Join(ws, "new")); !os.IsNotExist(err) {
		t.Errorf("directory new left behind: %v", err)
	}

	third := snapshot(t, s, "after restore")
	if third.Tree != first.Tree {
		t.Errorf("tree after Restore = %s, want %s", third.Tree, first.Tree)
	}
	if third.ID == second.ID {
		t.Errorf("snapshot after Restore reused %s", second.ID)
	}
	if err := s.Prune(ctx); err != nil {
		t.Fatalf("Prune = %v", err)
	}

	if got := fingerprint(t, filepath.Join(ws, ".git")); got != userGit {
		t.Errorf("user .git changed")
	}
	if got := testGit(t, ws, "status", "--porcelain"); got != "M  README.md\n?? notes.txt\n" {
		t.Errorf("git status = %q", got)
	}
}

func TestNonGitWorkspace(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	write(t, ws, "a.txt", "a\n")
	write(t, ws, "d/b.txt", "b\n")
	if err := os.Symlink("a.txt", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	s := open(t, ws, Options{})
	first := snapshot(t, s, "one")
	want := files(t, ws)

	if again := snapshot(t, s, "unchanged"); again.ID != first.ID {
		t.Errorf("Snapshot of unchanged workspace = %s, want %s", again.ID, first.ID)
	}

	write(t, ws, "a.txt", "a changed\n")
	remove(t, ws, "link")
	if err := os.Symlink("d/b.txt", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	write(t, ws, "c.txt", "c\n")
	second := snapshot(t, s, "two")

	diff, err := s.Diff(ctx, first.ID, second.ID)
	if err != nil {
		t.Fatalf("Diff = %v", err)
	}
	if !strings.Contains(diff, "diff --git a/a.txt b/a.txt\n") || !strings.Contains(diff, "+a changed\n") {
		t.Errorf("Diff =\n%s", diff)
	}
	wantChanged := []string{"a.txt", "c.txt", "link"}
	if got := changed(t, s, first, second); !slices.Equal(got, wantChanged) {
		t.Errorf("Changed = %q, want %q", got, wantChanged)
	}
	if got := restore(t, s, first, second); !slices.Equal(got, wantChanged) {
		t.Errorf("Restore = %q, want %q", got, wantChanged)
	}
	if d := diffMaps(want, files(t, ws)); d != "" {
		t.Errorf("after Restore:\n%s", d)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git")); !os.IsNotExist(err) {
		t.Errorf("workspace has a .git: %v", err)
	}
}

func TestStoreInsideWorkspace(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "a.txt", "a\n")
	s, err := Open(context.Background(), filepath.Join(ws, "data [x]"), ws, Options{})
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	snapshot(t, s, "one")
	write(t, ws, "a.txt", "b\n")
	snap := snapshot(t, s, "two")
	if got := treePaths(t, s, snap); !slices.Equal(got, []string{"a.txt"}) {
		t.Errorf("snapshot has %q, want a.txt only", got)
	}
}

func TestGitignore(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, ".gitignore", "*.tmp\ncache/\n")
	write(t, ws, "keep.txt", "keep\n")
	write(t, ws, "x.tmp", "tmp 1\n")
	write(t, ws, "cache/c", "c\n")
	write(t, ws, "sub/.gitignore", "local\n")
	write(t, ws, "sub/local", "l\n")
	s := open(t, ws, Options{})
	first := snapshot(t, s, "one")
	if got, want := treePaths(t, s, first), []string{".gitignore", "keep.txt", "sub/.gitignore"}; !slices.Equal(got, want) {
		t.Errorf("snapshot has %q, want %q", got, want)
	}

	write(t, ws, "x.tmp", "tmp 2\n")
	write(t, ws, "y.tmp", "new tmp\n")
	write(t, ws, "keep.txt", "changed\n")
	remove(t, ws, "cache")
	second := snapshot(t, s, "two")
	if got, want := changed(t, s, first, second), []string{"keep.txt"}; !slices.Equal(got, want) {
		t.Errorf("Changed = %q, want %q", got, want)
	}
	if got, want := restore(t, s, first, second), []string{"keep.txt"}; !slices.Equal(got, want) {
		t.Errorf("Restore = %q, want %q", got, want)
	}
	got := files(t, ws)
	for path, want := range map[string]string{
		"keep.txt":  "file(x=false):keep\n",
		"x.tmp":     "file(x=false):tmp 2\n",
		"y.tmp":     "file(x=false):new tmp\n",
		"sub/local": "file(x=false):l\n",
		"cache/c":   "",
	} {
		if got[path] != want {
			t.Errorf("%s after Restore = %q, want %q", path, got[path], want)
		}
	}
}

func TestBigFileSkipped(t *testing.T) {
	ws := t.TempDir()
	big := strings.Repeat("x", 101)
	write(t, ws, "small", "small\n")
	write(t, ws, "big.bin", big)
	s := open(t, ws, Options{MaxFileBytes: 100})

	first := snapshot(t, s, "one")
	if want := []string{"big.bin"}; !slices.Equal(first.Skipped, want) {
		t.Errorf("Skipped = %q, want %q", first.Skipped, want)
	}
	if got, want := treePaths(t, s, first), []string{"small"}; !slices.Equal(got, want) {
		t.Errorf("snapshot has %q, want %q", got, want)
	}
	if again := snapshot(t, s, "again"); again.ID != first.ID || !slices.Equal(again.Skipped, first.Skipped) {
		t.Errorf("Snapshot of unchanged workspace = %+v, want %+v", again, first)
	}

	// Small now: captured.
	write(t, ws, "big.bin", "tiny\n")
	second := snapshot(t, s, "two")
	if len(second.Skipped) != 0 {
		t.Errorf("Skipped = %q, want none", second.Skipped)
	}
	// Restoring a snapshot that skipped the file leaves it alone.
	if got := restore(t, s, first, second); len(got) != 0 {
		t.Errorf("Restore = %q, want nothing", got)
	}
	if got := files(t, ws)["big.bin"]; got != "file(x=false):tiny\n" {
		t.Errorf("big.bin after Restore = %q", got)
	}

	// Big again: dropped from the snapshot, and restoring the snapshot
	// that had it small writes it back.
	write(t, ws, "big.bin", big)
	third := snapshot(t, s, "three")
	if got, want := treePaths(t, s, third), []string{"small"}; !slices.Equal(got, want) || !slices.Equal(third.Skipped, []string{"big.bin"}) {
		t.Errorf("snapshot has %q skipping %q, want %q skipping big.bin", got, third.Skipped, want)
	}
	if got, want := restore(t, s, second, third), []string{"big.bin"}; !slices.Equal(got, want) {
		t.Errorf("Restore = %q, want %q", got, want)
	}
	if got := files(t, ws)["big.bin"]; got != "file(x=false):tiny\n" {
		t.Errorf("big.bin after Restore = %q", got)
	}
}

func TestEmptyWorkspace(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	s := open(t, ws, Options{})
	first := snapshot(t, s, "empty")
	if first.Tree != emptyTree {
		t.Errorf("Tree = %s, want %s", first.Tree, emptyTree)
	}
	second := snapshot(t, s, "still empty")
	if second.ID != first.ID {
		t.Errorf("second Snapshot = %s, want %s", second.ID, first.ID)
	}
	diff, err := s.Diff(ctx, first.ID, second.ID)
	if err != nil || diff != "" {
		t.Errorf("Diff = %q, %v; want empty", diff, err)
	}
	if got := changed(t, s, first, second); len(got) != 0 {
		t.Errorf("Changed = %q, want none", got)
	}
	if got := restore(t, s, first, second); len(got) != 0 {
		t.Errorf("Restore = %q, want none", got)
	}
}

func TestTypeChange(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "x", "file\n")
	write(t, ws, "keep", "keep\n")
	s := open(t, ws, Options{})
	asFile := snapshot(t, s, "file")
	wantFile := files(t, ws)

	remove(t, ws, "x")
	write(t, ws, "x/y", "inside\n")
	write(t, ws, "x/z/w", "deeper\n")
	asDir := snapshot(t, s, "dir")
	wantDir := files(t, ws)

	want := []string{"x", "x/y", "x/z/w"}
	if got := changed(t, s, asFile, asDir); !slices.Equal(got, want) {
		t.Errorf("Changed = %q, want %q", got, want)
	}
	if got := restore(t, s, asFile, asDir); !slices.Equal(got, want) {
		t.Errorf("Restore(file) = %q, want %q", got, want)
	}
	if d := diffMaps(wantFile, files(t, ws)); d != "" {
		t.Errorf("after Restore(file):\n%s", d)
	}
	if got := restore(t, s, asDir, asFile); !slices.Equal(got, want) {
		t.Errorf("Restore(dir) = %q, want %q", got, want)
	}
	if d := diffMaps(wantDir, files(t, ws)); d != "" {
		t.Errorf("after Restore(dir):\n%s", d)
	}
}

func TestRestoreRefusesToClobber(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	write(t, ws, "x", "file\n")
	s := open(t, ws, Options{})
	asFile := snapshot(t, s, "file")
	remove(t, ws, "x")
	write(t, ws, "x/y", "inside\n")
	asDir := snapshot(t, s, "dir")
	write(t, ws, "x/untracked", "mine\n")
	want := files(t, ws)

	if got, err := s.Restore(ctx, asFile.ID, asDir.ID); err == nil {
		t.Errorf("Restore = %q, nil; want an error", got)
	}
	if d := diffMaps(want, files(t, ws)); d != "" {
		t.Errorf("Restore that failed changed files:\n%s", d)
	}
}

func TestNestedRepositories(t *testing.T) {
	ws := t.TempDir()
	testGit(t, ws, "init", "-q")
	write(t, ws, "top.txt", "top\n")
	sub := filepath.Join(ws, "sub")
	write(t, ws, "sub/a.txt", "a\n")
	write(t, ws, "sub/.gitignore", "*.o\n")
	write(t, ws, "sub/x.o", "object\n")
	testGit(t, sub, "init", "-q")
	testGit(t, sub, "add", "-A")
	testGit(t, sub, "commit", "-q", "-m", "sub")
	write(t, ws, "sub/deeper/b.txt", "b\n")
	testGit(t, filepath.Join(ws, "sub/deeper"), "init", "-q")
	write(t, ws, "fresh/c.txt", "c\n")
	testGit(t, filepath.Join(ws, "fresh"), "init", "-q") // no commits
	testGit(t, ws, "init", "-q", "bare-init")            // an empty repository
	prints := map[string]string{}
	for _, d := range []string{".git", "sub/.git", "sub/deeper/.git", "fresh/.git", "bare-init/.git"} {
		prints[d] = fingerprint(t, filepath.Join(ws, d))
	}

	s := open(t, ws, Options{})
	first := snapshot(t, s, "one")
	want := []string{"fresh/c.txt", "sub/.gitignore", "sub/a.txt", "sub/deeper/b.txt", "top.txt"}
	if got := treePaths(t, s, first); !slices.Equal(got, want) {
		t.Errorf("snapshot has %q, want %q", got, want)
	}

	write(t, ws, "sub/new.txt", "new\n")
	write(t, ws, "sub/deeper/b.txt", "b changed\n")
	write(t, ws, "fresh/d.txt", "d\n")
	second := snapshot(t, s, "two")
	wantChanged := []string{"fresh/d.txt", "sub/deeper/b.txt", "sub/new.txt"}
	if got := changed(t, s, first, second); !slices.Equal(got, wantChanged) {
		t.Errorf("Changed = %q, want %q", got, wantChanged)
	}
	if got := restore(t, s, first, second); !slices.Equal(got, wantChanged) {
		t.Errorf("Restore = %q, want %q", got, wantChanged)
	}
	if got := files(t, ws)["sub/deeper/b.txt"]; got != "file(x=false):b\n" {
		t.Errorf("sub/deeper/b.txt after Restore = %q", got)
	}
	for d, want := range prints {
		if got := fingerprint(t, filepath.Join(ws, d)); got != want {
			t.Errorf("%s changed", d)
		}
	}
}

func TestNoContentConversion(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, ".gitattributes", "* text=auto eol=crlf ident\n")
	write(t, ws, "lf.txt", "one\ntwo $Id$\n")
	write(t, ws, "crlf.txt", "one\r\ntwo\r\n")
	s := open(t, ws, Options{})
	first := snapshot(t, s, "one")
	want := files(t, ws)
	write(t, ws, "lf.txt", "changed\n")
	remove(t, ws, "crlf.txt")
	second := snapshot(t, s, "two")
	restore(t, s, first, second)
	if d := diffMaps(want, files(t, ws)); d != "" {
		t.Errorf("after Restore:\n%s", d)
	}
}

func TestPrune(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	s := open(t, ws, Options{MaxSnapshots: 3})
	s.gcLoose = 0 // collect garbage on every Prune
	var snaps []Snapshot
	for i := range 5 {
		write(t, ws, "f", fmt.Sprintf("version %d\n", i))
		snaps = append(snaps, snapshot(t, s, fmt.Sprint(i)))
	}
	refs, err := s.refs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, r := range refs {
		kept = append(kept, r.id)
	}
	want := []string{snaps[2].ID, snaps[3].ID, snaps[4].ID}
	if !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}

	if err := s.Prune(ctx); err != nil {
		t.Fatalf("Prune = %v", err)
	}
	if _, err := s.Diff(ctx, snaps[0].ID, snaps[4].ID); err == nil {
		t.Errorf("Diff of a pruned snapshot succeeded")
	}
	if _, err := s.Diff(ctx, snaps[2].ID, snaps[4].ID); err != nil {
		t.Errorf("Diff of kept snapshots = %v", err)
	}
	write(t, ws, "f", "version 5\n")
	if next := snapshot(t, s, "5"); next.ID == snaps[4].ID {
		t.Errorf("Snapshot after Prune reused %s", next.ID)
	}
}

// TestConcurrentSnapshots snapshots from two goroutines, through one Store
// and through two Stores on the same data directory, as two processes would.
func TestConcurrentSnapshots(t *testing.T) {
	for _, stores := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d stores", stores), func(t *testing.T) {
			ctx := context.Background()
			ws, dataDir := t.TempDir(), t.TempDir()
			var ss [2]*Store
			for i := range ss {
				if i < stores {
					s, err := Open(ctx, dataDir, ws, Options{})
					if err != nil {
						t.Fatalf("Open = %v", err)
					}
					ss[i] = s
				} else {
					ss[i] = ss[0]
				}
			}
			var wg sync.WaitGroup
			errs := make(chan error, len(ss))
			for g, s := range ss {
				wg.Go(func() {
					for i := range 10 {
						name := filepath.Join(ws, fmt.Sprintf("g%d-%d", g, i))
						if err := os.WriteFile(name, []byte("x"), 0o644); err != nil {
							errs <- err
							return
						}
						if _, err := s.Snapshot(ctx, name); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("concurrent Snapshot: %v", err)
			}
			s := ss[0]
			last := snapshot(t, s, "last")
			if got := len(treePaths(t, s, last)); got != 20 {
				t.Errorf("last snapshot has %d files, want 20", got)
			}
			refs, err := s.refs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i < len(refs); i++ {
				parent := strings.TrimSpace(testGit(t, s.dir, "rev-parse", refs[i].id+"^"))
				if parent != refs[i-1].id {
					t.Errorf("snapshot %d has parent %s, want %s", refs[i].seq, parent, refs[i-1].id)
				}
			}
		})
	}
}

func TestCancelled(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "f", "x")
	s := open(t, ws, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Snapshot(ctx, "cancelled"); !errors.Is(err, context.Canceled) {
		t.Errorf("Snapshot(cancelled) = %v, want context.Canceled", err)
	}
	snap := snapshot(t, s, "after")
	if got := treePaths(t, s, snap); !slices.Equal(got, []string{"f"}) {
		t.Errorf("snapshot has %q, want f", got)
	}
}

func TestBadIDs(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir(), Options{})
	snap := snapshot(t, s, "one")
	for _, id := range []string{"", "HEAD", "--output=x", snap.ID[:7], strings.ToUpper(snap.ID)} {
		if _, err := s.Diff(ctx, id, snap.ID); err == nil {
			t.Errorf("Diff(%q) succeeded", id)
		}
		if _, err := s.Changed(ctx, snap.ID, id); err == nil {
			t.Errorf("Changed(%q) succeeded", id)
		}
		if _, err := s.Restore(ctx, id, snap.ID); err == nil {
			t.Errorf("Restore(%q) succeeded", id)
		}
	}
}

// TestRestoreTypeSwaps: undo puts back a tracked directory that a command
// replaced with a symlink (without following the symlink), and the reverse,
// and a file replaced by a directory and a directory by a file, in both
// directions, leaving the work tree exactly as snapshotted.
func TestRestoreTypeSwaps(t *testing.T) {
	cases := []struct {
		name   string
		before func(t *testing.T, ws string)
		after  func(t *testing.T, ws string)
	}{
		{"dir to symlink to outside dir", func(t *testing.T, ws string) {
			write(t, ws, "sub/a.txt", "a\n")
			write(t, ws, "sub/deep/b.txt", "b\n")
		}, func(t *testing.T, ws string) {
			remove(t, ws, "sub")
			symlink(t, ws, filepath.Join(filepath.Dir(ws), "outside"), "sub")
		}},
		{"dir to symlink in workspace", func(t *testing.T, ws string) {
			write(t, ws, "sub/a.txt", "a\n")
			write(t, ws, "other/a.txt", "other\n")
		}, func(t *testing.T, ws string) {
			remove(t, ws, "sub")
			symlink(t, ws, "other", "sub")
		}},
		{"dir to dangling symlink", func(t *testing.T, ws string) {
			write(t, ws, "sub/a.txt", "a\n")
		}, func(t *testing.T, ws string) {
			remove(t, ws, "sub")
			symlink(t, ws, "nowhere", "sub")
		}},
		{"symlink to dir", func(t *testing.T, ws string) {
			write(t, ws, "other/a.txt", "other\n")
			symlink(t, ws, "other", "sub")
		}, func(t *testing.T, ws string) {
			remove(t, ws, "sub")
			write(t, ws, "sub/a.txt", "a\n")
			write(t, ws, "sub/deep/b.txt", "b\n")
		}},
		{"file to dir", func(t *testing.T, ws string) {
			write(t, ws, "sub", "file\n")
		}, func(t *testing.T, ws string) {
			remove(t, ws, "sub")
			write(t, ws, "sub/a.txt", "a\n")
		}},
		{"symlink to file", func(t *testing.T, ws string) {
			write(t, ws, "other/a.txt", "other\n")
			symlink(t, ws, "other", "sub")
		}, func(t *testing.T, ws string) {
			remove(t, ws, "sub")
			write(t, ws, "sub", "file\n")
		}},
		{"nested dir to symlink", func(t *testing.T, ws string) {
			write(t, ws, "a/b/c/d.txt", "d\n")
			write(t, ws, "a/e.txt", "e\n")
		}, func(t *testing.T, ws string) {
			remove(t, ws, "a/b")
			symlink(t, ws, "..", "a/b")
		}},
	}
	for _, tc := range cases {
		for _, back := range []bool{true, false} {
			name := tc.name
			if !back {
				name += " reversed"
			}
			t.Run(name, func(t *testing.T) {
				ws := filepath.Join(t.TempDir(), "ws")
				outside := filepath.Join(filepath.Dir(ws), "outside")
				write(t, outside, "secret.txt", "secret\n")
				write(t, ws, "keep.txt", "keep\n")
				tc.before(t, ws)
				s := open(t, ws, Options{})
				first := snapshot(t, s, "before")
				wantFirst := files(t, ws)
				tc.after(t, ws)
				second := snapshot(t, s, "after")
				wantSecond := files(t, ws)
				wantOutside := files(t, outside)

				target, current, want := first, second, wantFirst
				if !back {
					// Go back first, then forward again (redo).
					restore(t, s, first, second)
					target, current, want = second, first, wantSecond
				}
				ctx := context.Background()
				if _, err := s.Restore(ctx, target.ID, current.ID); err != nil {
					t.Fatalf("Restore = %v", err)
				}
				if d := diffMaps(want, files(t, ws)); d != "" {
					t.Errorf("after Restore:\n%s", d)
				}
				if d := diffMaps(wantOutside, files(t, outside)); d != "" {
					t.Errorf("Restore changed files outside the workspace:\n%s", d)
				}
				if got := changed(t, s, target, snapshot(t, s, "check")); len(got) != 0 {
					t.Errorf("after Restore the work tree differs from the target in %q", got)
				}
			})
		}
	}
}
