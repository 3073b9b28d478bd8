package gitwork

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWorktrees: three runs on one repository, each in its own
// goroutine, create their worktrees and commit ten tasks at the same time;
// every branch ends with exactly its own ten commits.
func TestConcurrentWorktrees(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	before := tree(t, dir)
	base := t.TempDir()
	const runs, tasks = 3, 10
	var wg sync.WaitGroup
	errs := make([]error, runs)
	paths := make([]string, runs)
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("run%d", i)
			paths[i] = filepath.Join(base, id, "wt")
			errs[i] = func() error {
				if err := r.AddWorktree(ctx, paths[i], "apserver/"+id, "main"); err != nil {
					return err
				}
				for k := range tasks {
					task := fmt.Sprintf("t%d", k)
					if err := os.WriteFile(filepath.Join(paths[i], id+"-"+task+".txt"), []byte(task), 0o644); err != nil {
						return err
					}
					if _, err := Commit(ctx, paths[i], id+" "+task, []Trailer{{"Apserver-Run", id}, {"Apserver-Task", task}}); err != nil {
						return err
					}
				}
				_, err := Diff(ctx, paths[i], "main")
				return err
			}()
		}()
	}
	wg.Wait()
	for i := range runs {
		if errs[i] != nil {
			t.Fatalf("run%d: %v", i, errs[i])
		}
	}
	for i := range runs {
		id := fmt.Sprintf("run%d", i)
		log := testGit(t, dir, "log", "--format=%(trailers:key=Apserver-Run,valueonly)", "main..apserver/"+id)
		if got := strings.Count(log, id); got != tasks || strings.Count(log, "run") != tasks {
			t.Errorf("%s: branch holds %q, want %d commits of its own", id, log, tasks)
		}
		files := testGit(t, dir, "diff", "--name-only", "main", "apserver/"+id)
		if got := strings.Count(files, id+"-"); got != tasks || strings.Count(files, "\n")+1 != tasks {
			t.Errorf("%s: branch changes %q", id, files)
		}
		if st := testGit(t, paths[i], "status", "--porcelain"); st != "" {
			t.Errorf("%s: worktree status %q", id, st)
		}
	}
	if after := tree(t, dir); !equalMaps(before, after) {
		t.Errorf("the user's checkout changed")
	}
}

// TestRefLockRetried: a commit that meets its branch's ref locked by
// another git retries, and succeeds once the lock is gone.
func TestRefLockRetried(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	wt, branch := addWorktree(t, r, "lock")
	// Another git holds the lock: the file exists and is open.
	lock := filepath.Join(dir, ".git", "refs", "heads", filepath.FromSlash(branch)+".lock")
	held, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { onLockRetry = nil }()
	var seen []string
	onLockRetry = func(stderr string) {
		seen = append(seen, stderr)
		held.Close() // the other git finishes
		os.Remove(lock)
	}
	write(t, wt, "a.txt", "a\n")
	sha, err := Commit(ctx, wt, "task", runTask("t1"))
	if err != nil {
		t.Fatalf("Commit = %v", err)
	}
	if len(seen) != 1 || !lockContention(seen[0]) {
		t.Errorf("retries = %q, want one after a lock error", seen)
	}
	if got := testGit(t, dir, "rev-parse", branch); got != sha {
		t.Errorf("branch at %s, want %s", got, sha)
	}
}

func TestLockContention(t *testing.T) {
	tests := []struct {
		stderr string
		want   bool
	}{
		{"fatal: cannot lock ref 'HEAD': Unable to create '/r/.git/refs/heads/x.lock': File exists.", true},
		{"fatal: Unable to create '/r/.git/worktrees/wt/index.lock': File exists.\n\nAnother git process seems to be running", true},
		{"error: cannot lock ref 'refs/heads/main': is at 1111 but expected 2222", false},
		{"fatal: not a git repository", false},
		{"error: Your local changes to the following files would be overwritten by merge", false},
	}
	for _, tt := range tests {
		if got := lockContention(tt.stderr); got != tt.want {
			t.Errorf("lockContention(%q) = %v, want %v", tt.stderr, got, tt.want)
		}
	}
}
