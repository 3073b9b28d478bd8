package gitwork

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrWorktreeConflict: the path is a worktree of another branch, or a
// directory that is not a worktree and is not empty.
var ErrWorktreeConflict = errors.New("worktree path is in use")

// worktree is one entry of git worktree list.
type worktree struct {
	path     string
	head     string
	branch   string // refs/heads/…, empty when detached
	bare     bool
	main     bool // the repository's main work tree (listed first)
	locked   bool
	lockNote string
	prunable bool
}

// Lock reasons of a worktree in transition: git worktree add writes
// initializing while it creates one and removes it when it is done;
// RemoveWorktree locks with removing before it deletes anything. A
// worktree still locked with either was interrupted half-way, and is never
// taken for a finished one.
const (
	initializing = "initializing"
	removing     = "apserver: removing"
)

// halfDone reports whether wt is a worktree left in transition.
func (wt *worktree) halfDone() bool {
	return wt.prunable || wt.locked && (wt.lockNote == initializing || wt.lockNote == removing)
}

func (r *Repo) worktrees(ctx context.Context) ([]worktree, error) {
	var out string
	var err error
	wait := 20 * time.Millisecond
	for range 8 {
		// A git creating a worktree right now (one that a killed apserver
		// left running) can make the listing fail for a moment: it reads
		// the new worktree's commondir while that git is still writing it
		// ("failed to read …/commondir: Success"). On a loaded machine
		// that moment lasted longer than 100 ms, so the waits double, to
		// about 5 s in all.
		if out, err = git(ctx, r.root, "worktree", "list", "--porcelain"); err == nil {
			break
		}
		if perr := pause(ctx, wait); perr != nil {
			return nil, perr
		}
		wait *= 2
	}
	if err != nil {
		return nil, fmt.Errorf("listing worktrees: %w", err)
	}
	var list []worktree
	var cur *worktree
	for _, line := range strings.Split(out, "\n") {
		key, val, _ := strings.Cut(line, " ")
		switch key {
		case "worktree":
			list = append(list, worktree{path: val, main: len(list) == 0})
			cur = &list[len(list)-1]
		case "HEAD":
			if cur != nil {
				cur.head = val
			}
		case "branch":
			if cur != nil {
				cur.branch = val
			}
		case "bare":
			if cur != nil {
				cur.bare = true
			}
		case "locked":
			if cur != nil {
				cur.locked, cur.lockNote = true, val
			}
		case "prunable":
			if cur != nil {
				cur.prunable = true
			}
		}
	}
	return list, nil
}

// canonical is path made absolute with its symbolic links resolved, as far
// as it exists, so that paths git prints compare with ours.
func canonical(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	rest := ""
	for dir := abs; ; {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

func (r *Repo) findWorktree(ctx context.Context, path string) (*worktree, error) {
	list, err := r.worktrees(ctx)
	if err != nil {
		return nil, err
	}
	want := canonical(path)
	for i := range list {
		if canonical(list[i].path) == want {
			return &list[i], nil
		}
	}
	return nil, nil
}

func branchExists(ctx context.Context, dir, branch string) (bool, error) {
	_, err := run(ctx, call{dir: dir, args: []string{"show-ref", "--verify", "--quiet", "refs/heads/" + branch}})
	if err == nil {
		return true, nil
	}
	if exitCode(err) == 1 {
		return false, nil
	}
	return false, err
}

// AddWorktree creates a worktree at path with branch checked out, creating
// branch from base (not tracking it) if it does not exist. It never touches
// Root's checkout or index.
//
// It converges when repeated: a worktree of branch already at path is kept
// as it is (nil); one that a killed git left half-created or half-removed
// (still locked "initializing" or "apserver: removing"), or whose
// directory is gone, is cleared and created again; a branch left by an
// earlier attempt is checked out as it is, and base is then not used. The
// first call of a process for a path waits for gits that a killed apserver
// left running on it. A path holding another branch's worktree, or a
// non-empty directory that is no worktree, fails with ErrWorktreeConflict.
func (r *Repo) AddWorktree(ctx context.Context, path, branch, base string) error {
	unlock, err := r.lock(ctx)
	if err != nil {
		return fmt.Errorf("adding worktree at %s: %w", path, err)
	}
	defer unlock()
	return r.addWorktree(ctx, path, branch, base)
}

func (r *Repo) addWorktree(ctx context.Context, path, branch, base string) error {
	if branch == "" || strings.HasPrefix(branch, "-") {
		return fmt.Errorf("adding worktree: invalid branch %q", branch)
	}
	if err := checkRefFormat(ctx, r.root, branch); err != nil {
		return fmt.Errorf("adding worktree: %w", err)
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("adding worktree at %s: %w", path, err)
	}
	// Wait for the gits that a killed apserver left working on path.
	if err := settle(ctx, "add "+path, func() bool { return gitRunning("worktree", path) }); err != nil {
		return err
	}
	// Each round looks at the state and takes one step; a step that fails
	// is followed by another look.
	busyUntil := time.Now().Add(busyWait)
	var lastErr error
	for round := 0; round < 4; round++ {
		wt, err := r.findWorktree(ctx, path)
		if err != nil {
			return fmt.Errorf("adding worktree at %s: %w", path, err)
		}
		if wt != nil {
			switch {
			case wt.main || wt.bare:
				return fmt.Errorf("adding worktree at %s: %w: it is the main work tree", path, ErrWorktreeConflict)
			case wt.locked && wt.lockNote == initializing && !wt.prunable && r.worktreeBusy(path):
				// Another git is still creating it.
				if time.Now().After(busyUntil) {
					return fmt.Errorf("adding worktree at %s: %w: another git is still creating it", path, ErrWorktreeConflict)
				}
				round--
				if err := pause(ctx, 50*time.Millisecond); err != nil {
					return err
				}
				continue
			case wt.halfDone():
				lastErr = r.clearWorktree(ctx, path, wt)
				continue
			case wt.branch == "refs/heads/"+branch:
				return nil
			default:
				what := "a detached HEAD"
				if wt.branch != "" {
					what = "branch " + strings.TrimPrefix(wt.branch, "refs/heads/")
				}
				return fmt.Errorf("adding worktree at %s for %s: %w: it has %s", path, branch, ErrWorktreeConflict, what)
			}
		}
		if entries, err := os.ReadDir(path); err == nil && len(entries) > 0 {
			return fmt.Errorf("adding worktree at %s: %w: a non-empty directory that is not a worktree", path, ErrWorktreeConflict)
		}
		exists, err := branchExists(ctx, r.root, branch)
		if err != nil {
			return fmt.Errorf("adding worktree at %s: %w", path, err)
		}
		args := []string{"worktree", "add", "--quiet"}
		if exists {
			args = append(args, "--end-of-options", path, branch)
		} else {
			baseSHA, err := resolve(ctx, r.root, base)
			if err != nil {
				return fmt.Errorf("adding worktree at %s: base: %w", path, err)
			}
			args = append(args, "--no-track", "-b", branch, "--end-of-options", path, baseSHA)
		}
		ownRef := canonical(filepath.Join(r.common, "refs", "heads", filepath.FromSlash(branch)) + ".lock")
		lastErr = clearingStaleLock(ctx, func(lock string) bool { return canonical(lock) == ownRef }, func() error {
			if onWorktreeAdd != nil {
				onWorktreeAdd(+1)
				defer onWorktreeAdd(-1)
			}
			_, err := git(ctx, r.root, args...)
			return err
		})
		if lastErr == nil {
			return nil
		}
	}
	if lastErr == nil {
		lastErr = errors.New("the worktree's state keeps changing")
	}
	return fmt.Errorf("adding worktree at %s: %w", path, lastErr)
}

// busyWait bounds how long AddWorktree waits for another git that is still
// creating the same worktree.
var busyWait = 30 * time.Second

func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// adminDir is the private git directory of the worktree at path
// (<common>/worktrees/<name>), found through the gitdir file that points
// back at path/.git; "" if there is none.
func (r *Repo) adminDir(path string) string {
	dirs, err := os.ReadDir(filepath.Join(r.common, "worktrees"))
	if err != nil {
		return ""
	}
	want := canonical(filepath.Join(path, ".git"))
	for _, d := range dirs {
		admin := filepath.Join(r.common, "worktrees", d.Name())
		data, err := os.ReadFile(filepath.Join(admin, "gitdir"))
		if err == nil && canonical(strings.TrimSpace(string(data))) == want {
			return admin
		}
	}
	return ""
}

// worktreeBusy reports whether a live git may still be creating the
// worktree at path: a git worktree add of path runs (one that a killed
// apserver started), or a process holds the worktree's index lock (the
// checkout).
func (r *Repo) worktreeBusy(path string) bool {
	if gitRunning("worktree", "add", path) {
		return true
	}
	admin := r.adminDir(path)
	return admin != "" && fileInUse(filepath.Join(admin, "index.lock"))
}

func checkRefFormat(ctx context.Context, dir, branch string) error {
	if _, err := run(ctx, call{dir: dir, args: []string{"check-ref-format", "--branch", branch}}); err != nil {
		return fmt.Errorf("invalid branch name %q: %w", branch, err)
	}
	return nil
}

// RemoveWorktree removes the worktree at path and its directory, discarding
// what was not committed in it; the branch and its commits stay. Removing a
// worktree that is already gone succeeds.
func (r *Repo) RemoveWorktree(ctx context.Context, path string) error {
	unlock, err := r.lock(ctx)
	if err != nil {
		return fmt.Errorf("removing worktree %s: %w", path, err)
	}
	defer unlock()
	path, err = filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("removing worktree %s: %w", path, err)
	}
	wt, err := r.findWorktree(ctx, path)
	if err != nil {
		return fmt.Errorf("removing worktree %s: %w", path, err)
	}
	switch {
	case wt == nil:
		return nil
	case wt.main || wt.bare:
		return fmt.Errorf("removing worktree %s: it is the main work tree", path)
	case !wt.locked && !wt.prunable:
		// Marked first, so that a kill half-way through the deletion
		// leaves a worktree that AddWorktree will not take for whole.
		if _, err := git(ctx, r.root, "worktree", "lock", "--reason", removing, path); err != nil {
			return fmt.Errorf("removing worktree %s: %w", path, err)
		}
		wt.locked, wt.lockNote = true, removing
	}
	if err := r.clearWorktree(ctx, path, wt); err != nil {
		return fmt.Errorf("removing worktree %s: %w", path, err)
	}
	return nil
}

// clearWorktree removes the worktree wt at path whatever state it is in:
// locked, half-created by a killed git, or with its directory gone.
func (r *Repo) clearWorktree(ctx context.Context, path string, wt *worktree) error {
	// Twice forced: also when locked. git deletes the directory before the
	// registration and its lock, so a kill half-way leaves it locked.
	if !wt.prunable {
		if _, err := git(ctx, r.root, "worktree", "remove", "--force", "--force", path); err == nil {
			return nil
		}
	}
	// git refuses a worktree it cannot validate (a killed git worktree add
	// may not have written path/.git yet, a killed git worktree remove may
	// have deleted it already). The directory is registered as a worktree,
	// so it is ours: remove it, then the lock, then the registration, in
	// that order, so that a kill between steps leaves it locked.
	if err := os.RemoveAll(path); err != nil {
		return err
	}
	if wt.locked {
		// Another git may have finished and unlocked it meanwhile.
		if _, err := git(ctx, r.root, "worktree", "unlock", path); err != nil && !strings.Contains(err.Error(), "not locked") {
			return err
		}
	}
	_, err := git(ctx, r.root, "worktree", "prune")
	return err
}
