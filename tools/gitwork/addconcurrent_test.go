package gitwork

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// TestAddWorktreeConcurrent: worktrees added to one repository and removed
// from it at once, each caller through its own Repo, all succeed, each
// with its branch, and no two git worktree adds of the repository ever run
// at the same time.
func TestAddWorktreeConcurrent(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	base := t.TempDir()
	var mu sync.Mutex
	inFlight, most := 0, 0
	onWorktreeAdd = func(d int) {
		mu.Lock()
		defer mu.Unlock()
		inFlight += d
		most = max(most, inFlight)
	}
	t.Cleanup(func() { onWorktreeAdd = nil })
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := Open(ctx, dir)
			if err != nil {
				errs[i] = err
				return
			}
			// The same base name: git numbers the admin directories.
			path := filepath.Join(base, fmt.Sprint(i), "wt")
			errs[i] = r.AddWorktree(ctx, path, fmt.Sprintf("apserver/r%d", i), "main")
			if errs[i] == nil && i%2 == 1 {
				errs[i] = r.RemoveWorktree(ctx, path)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
	}
	for i := 0; i < n; i += 2 {
		if got := testGit(t, filepath.Join(base, fmt.Sprint(i), "wt"), "symbolic-ref", "HEAD"); got != fmt.Sprintf("refs/heads/apserver/r%d", i) {
			t.Errorf("worktree %d has %s checked out", i, got)
		}
	}
	if most != 1 {
		t.Errorf("%d git worktree adds ran at once in one repository, want 1", most)
	}
}
