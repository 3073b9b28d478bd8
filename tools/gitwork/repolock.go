package gitwork

import (
	"context"
	"sync"
)

// repoLocks holds, per repository (its common git directory), the lock
// that AddWorktree, RemoveWorktree and Merge take: git worktree add, prune
// and remove read and write the repository's shared list of worktrees
// (<common>/worktrees), and one of them can read another's half-made
// entry; merges into one base are best taken one after the other. Other
// processes are covered by git's own lock files, which run retries.
var repoLocks sync.Map // canonical common dir → chan struct{} (1-buffered)

// onWorktreeAdd, when set by a test, is called with +1 before AddWorktree
// runs git worktree add and with -1 after.
var onWorktreeAdd func(delta int)

// lock takes the repository's lock, or fails when ctx ends first; the
// returned function lets go of it.
func (r *Repo) lock(ctx context.Context) (func(), error) {
	v, _ := repoLocks.LoadOrStore(canonical(r.common), make(chan struct{}, 1))
	ch := v.(chan struct{})
	select {
	case ch <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return func() { <-ch }, nil
}
