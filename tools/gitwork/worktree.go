package gitwork

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// initializing is the lock reason git worktree add writes while it creates
// a worktree and removes when it is done: a worktree still locked with it
// was interrupted half-way.
const initializing = "initializing"

func (r *Repo) worktrees(ctx context.Context) ([]worktree, error) {
	out, err := git(ctx, r.root, "worktree", "list", "--porcelain")
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
// as it is (nil); one that a killed git left half-created (still locked
// "initializing") or whose directory is gone is cleared and created again;
// a branch left by an earlier attempt is checked out as it is, base is
// then not used. A path holding another branch's worktree, or a non-empty
// directory that is no worktree, fails with ErrWorktreeConflict.
func (r *Repo) AddWorktree(ctx context.Context, path, branch, base string) error {
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
	wt, err := r.findWorktree(ctx, path)
	if err != nil {
		return fmt.Errorf("adding worktree at %s: %w", path, err)
	}
	if wt != nil {
		switch {
		case wt.main || wt.bare:
			return fmt.Errorf("adding worktree at %s: %w: it is the main work tree", path, ErrWorktreeConflict)
		case wt.locked && wt.lockNote == initializing, wt.prunable:
			// git worktree add was killed before it finished, or the
			// directory is gone.
			if err := r.clearWorktree(ctx, path, wt); err != nil {
				return fmt.Errorf("clearing half-created worktree %s: %w", path, err)
			}
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
	if _, err := git(ctx, r.root, args...); err != nil {
		return fmt.Errorf("adding worktree at %s: %w", path, err)
	}
	return nil
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
	path, err := filepath.Abs(path)
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
	}
	if err := r.clearWorktree(ctx, path, wt); err != nil {
		return fmt.Errorf("removing worktree %s: %w", path, err)
	}
	return nil
}

// clearWorktree removes the worktree wt at path whatever state it is in:
// locked, half-created by a killed git, or with its directory gone.
func (r *Repo) clearWorktree(ctx context.Context, path string, wt *worktree) error {
	if wt.locked {
		if _, err := git(ctx, r.root, "worktree", "unlock", path); err != nil {
			return err
		}
	}
	if !wt.prunable {
		if _, err := git(ctx, r.root, "worktree", "remove", "--force", path); err == nil {
			return nil
		}
		// git refuses a worktree it cannot validate (a killed git worktree
		// add may not have written path/.git yet): the directory is ours,
		// remove it and let prune drop the registration.
		if err := os.RemoveAll(path); err != nil {
			return err
		}
	}
	_, err := git(ctx, r.root, "worktree", "prune")
	return err
}
