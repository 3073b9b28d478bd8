package gitwork

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// CatchUp brings the branch checked out in worktree up to base with a
// merge commit (message, then a paragraph of trailers), so that Merge can
// fast-forward base to it afterwards. It returns whether it committed: a
// branch that already contains base is left as it is.
//
// A merge commit, not a rebase: the branch's commits keep the SHAs that
// were recorded for them, and Commit still finds them by their trailers.
//
// For each file that conflicts, mend gets the path (slash-separated,
// relative to the worktree) and base's version of the file (nil when base
// deleted it) and returns the content to commit, or false when it cannot
// resolve it. verify, if not nil, runs in the merged work tree before the
// commit. When a conflict stays unresolved (ErrConflict naming the files)
// or verify fails (its error), the merge is undone and the branch is as it
// was.
//
// CatchUp converges when repeated after a kill: a merge that a killed
// apserver left half done in worktree is undone and made again, and a
// merge commit already made means the branch contains base.
func CatchUp(ctx context.Context, worktree, base, message string, trailers []Trailer,
	mend func(path string, theirs []byte) ([]byte, bool), verify func(context.Context) error) (bool, error) {
	changed, err := catchUp(ctx, worktree, base, message, trailers, mend, verify)
	if err != nil {
		return false, fmt.Errorf("bringing %s up to %s: %w", worktree, base, err)
	}
	return changed, nil
}

func catchUp(ctx context.Context, worktree, base, message string, trailers []Trailer,
	mend func(path string, theirs []byte) ([]byte, bool), verify func(context.Context) error) (bool, error) {
	if err := checkTrailers(trailers); err != nil {
		return false, err
	}
	if err := checkRefFormat(ctx, worktree, base); err != nil {
		return false, err
	}
	if err := settleWorktree(ctx, worktree); err != nil {
		return false, err
	}
	gitDir, err := gitDirOf(ctx, worktree)
	if err != nil {
		return false, err
	}
	if _, err := os.Lstat(filepath.Join(gitDir, "MERGE_HEAD")); err == nil {
		// A merge a killed apserver left half done.
		if _, err := git(ctx, worktree, "merge", "--abort"); err != nil {
			return false, err
		}
	}
	baseSHA, err := resolve(ctx, worktree, "refs/heads/"+base)
	if err != nil {
		return false, err
	}
	head, err := resolve(ctx, worktree, "HEAD")
	if err != nil {
		return false, err
	}
	if in, err := isAncestor(ctx, worktree, baseSHA, head); err != nil || in {
		return false, err
	}
	id, err := identity(ctx, worktree)
	if err != nil {
		return false, err
	}
	undo := func(err error) (bool, error) {
		if _, aerr := git(context.WithoutCancel(ctx), worktree, "merge", "--abort"); aerr != nil {
			return false, errors.Join(err, aerr)
		}
		return false, err
	}
	if _, err := run(ctx, call{dir: worktree, config: id, args: []string{"merge", "--no-ff", "--no-commit", "--quiet", baseSHA}}); err != nil {
		files, ferr := git(ctx, worktree, "diff", "--name-only", "--diff-filter=U")
		if ferr != nil || files == "" {
			if _, serr := os.Lstat(filepath.Join(gitDir, "MERGE_HEAD")); serr == nil {
				return undo(err)
			}
			return false, err
		}
		var left []string
		for _, f := range strings.Split(files, "\n") {
			theirs, serr := run(ctx, call{dir: worktree, args: []string{"show", ":3:" + f}})
			if serr != nil {
				theirs = nil
			}
			b, ok := []byte(nil), false
			if mend != nil {
				b, ok = mend(f, theirs)
			}
			if !ok {
				left = append(left, f)
				continue
			}
			if err := os.WriteFile(filepath.Join(worktree, filepath.FromSlash(f)), b, 0o644); err != nil {
				return undo(err)
			}
			if _, err := git(ctx, worktree, "add", "--", f); err != nil {
				return undo(err)
			}
		}
		if len(left) > 0 {
			return undo(fmt.Errorf("%w in %s", ErrConflict, strings.Join(left, ", ")))
		}
	}
	if verify != nil {
		if err := verify(ctx); err != nil {
			return undo(err)
		}
	}
	msg := strings.TrimRight(message, "\n\t ")
	if msg == "" {
		msg = "apserver: merge " + base
	}
	if len(trailers) > 0 {
		msg += "\n"
		for _, t := range trailers {
			msg += "\n" + t.String()
		}
	}
	if _, err := run(ctx, call{dir: worktree, config: id, stdin: []byte(msg + "\n"),
		args: []string{"commit", "--quiet", "--no-verify", "--cleanup=whitespace", "--file=-"}}); err != nil {
		return undo(err)
	}
	return true, nil
}
