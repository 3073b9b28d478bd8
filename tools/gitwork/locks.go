package gitwork

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Locks. git takes a lock file before it changes an index or a ref and
// fails when it finds one taken. A lock held by a live git is waited for
// (run retries); one left by a git killed together with apserver is
// removed, but only when it belongs to a run alone: a run's worktree's own
// index and HEAD, and its branch. The user's locks are never removed.

// settleWorktree waits, once per worktree and process, for the gits that
// a killed apserver left running in worktree, then removes the locks they
// left that belong to the worktree alone and that no process holds.
func settleWorktree(ctx context.Context, worktree string) error {
	key := "worktree " + canonical(worktree)
	if _, ok := settled.Load(key); ok {
		return nil
	}
	if err := settle(ctx, key, func() bool { return gitInDir(worktree) }); err != nil {
		return err
	}
	gitDir, err := gitDirOf(ctx, worktree)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(gitDir, "commondir")); err != nil {
		return nil // the main work tree: the user's locks are not ours
	}
	locks, _ := filepath.Glob(filepath.Join(gitDir, "*.lock"))
	if ref, common := headRef(gitDir); ref != "" {
		locks = append(locks, filepath.Join(common, filepath.FromSlash(ref))+".lock")
	}
	for _, lock := range locks {
		if _, err := os.Lstat(lock); err == nil && !fileInUse(lock) {
			os.Remove(lock)
		}
	}
	return nil
}

// refMoved reports whether err is git refusing a ref update because the ref
// changed since the command read it.
func refMoved(err error) bool {
	var ge *GitError
	return errors.As(err, &ge) && strings.Contains(ge.Stderr, "but expected")
}

// lockPathRE finds the lock file in git's "File exists" message.
var lockPathRE = regexp.MustCompile(`Unable to create '([^']+\.lock)': File exists`)

// clearingStaleLock runs fn, a git command, and if it failed because a lock
// that owned says belongs to the run alone stayed taken all the while run
// retried, is older than that and no process has it open (git keeps a
// lock file open until it is almost done, so a git killed together with
// apserver left it behind), removes the lock and runs fn again. Other
// locks of the shared repository are never removed.
func clearingStaleLock(ctx context.Context, owned func(lock string) bool, fn func() error) error {
	for cleared := 0; ; cleared++ {
		err := fn()
		var ge *GitError
		if err == nil || cleared == 2 || !errors.As(err, &ge) || !lockContention(ge.Stderr) {
			return err
		}
		m := lockPathRE.FindStringSubmatch(ge.Stderr)
		if m == nil || !owned(m[1]) {
			return err
		}
		info, serr := os.Stat(m[1])
		if serr != nil || time.Since(info.ModTime()) < lockRetry || fileInUse(m[1]) {
			return err
		}
		if rerr := os.Remove(m[1]); rerr != nil {
			return err
		}
	}
}

// worktreeLock reports whether lock belongs to worktree alone: a lock in
// its private git directory (index.lock, HEAD.lock), or that of the branch
// checked out in it.
func worktreeLock(ctx context.Context, worktree string) func(lock string) bool {
	return func(lock string) bool {
		gitDir, err := gitDirOf(ctx, worktree)
		if err != nil {
			return false
		}
		if _, err := os.Stat(filepath.Join(gitDir, "commondir")); err != nil {
			return false // the main work tree: the user's, not a run's
		}
		lock = canonical(lock)
		if filepath.Dir(lock) == canonical(gitDir) {
			return true
		}
		ref, common := headRef(gitDir)
		return ref != "" && lock == canonical(filepath.Join(common, filepath.FromSlash(ref))+".lock")
	}
}

// headRef is the branch ref (refs/heads/…) that gitDir's HEAD names, or ""
// when HEAD is detached or unreadable, and the repository's common git
// directory, where branch refs live.
func headRef(gitDir string) (ref, common string) {
	common = gitDir
	if data, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		common = strings.TrimSpace(string(data))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitDir, common)
		}
	}
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", common
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: ")
	if !ok || !strings.HasPrefix(ref, "refs/heads/") || !filepath.IsLocal(filepath.FromSlash(ref)) {
		return "", common
	}
	return ref, common
}
