package gitwork

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ConflictError is a revert (or merge) that conflicts with later work:
// the files, and nothing was changed. errors.Is(err, ErrConflict) holds.
type ConflictError struct {
	Op    string
	Files []string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s: %v in %s", e.Op, ErrConflict, strings.Join(e.Files, ", "))
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// RunCommits are the commits of a run on the first-parent history of tip,
// oldest first: those whose message has the trailer "Apserver-Run: id",
// merge commits left out (a catch-up brings in others' work, which a
// revert must keep).
func RunCommits(ctx context.Context, dir, tip, id string) ([]string, error) {
	out, err := git(ctx, dir, "rev-list", "--first-parent", "--no-merges", "--reverse", "-F", "--grep", "Apserver-Run: "+id, tip)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// Revert adds to branch one commit that undoes commits (oldest first;
// reverted newest first) and returns it. The commit is built in a
// temporary worktree at the branch's tip; a revert that conflicts with
// later work is a *ConflictError naming the files, and nothing changes.
// The branch then moves as Merge moves its base: in the checkout that has
// it when its tracked files are clean (ErrBaseDirty otherwise), else by a
// compare-and-swap of the ref. A commit with trailers among the FindDepth
// newest of branch is returned instead of a second one.
func (r *Repo) Revert(ctx context.Context, branch string, commits []string, message string, trailers []Trailer) (string, error) {
	op := "reverting on " + branch
	if len(commits) == 0 {
		return "", fmt.Errorf("%s: no commit to revert", op)
	}
	if err := checkTrailers(trailers); err != nil {
		return "", fmt.Errorf("%s: %w", op, err)
	}
	unlock, err := r.lock(ctx)
	if err != nil {
		return "", fmt.Errorf("%s: %w", op, err)
	}
	defer unlock()
	ref := "refs/heads/" + branch
	if len(trailers) > 0 {
		if sha, ok, err := findCommit(ctx, r.root, ref, trailers); err != nil || ok {
			if err != nil {
				return "", fmt.Errorf("%s: %w", op, err)
			}
			return sha, nil
		}
	}
	tip, err := resolve(ctx, r.root, ref)
	if err != nil {
		return "", fmt.Errorf("%s: %w", op, err)
	}
	msg := strings.TrimRight(message, "\n\t ")
	if len(trailers) > 0 {
		msg += "\n"
		for _, t := range trailers {
			msg += "\n" + t.String()
		}
	}
	target, err := r.revertInWorktree(ctx, tip, commits, msg+"\n")
	if err != nil {
		var ce *ConflictError
		if errors.As(err, &ce) {
			ce.Op = op
			return "", ce
		}
		return "", fmt.Errorf("%s: %w", op, err)
	}
	if err := r.advance(ctx, branch, tip, target, "revert"); err != nil {
		return "", fmt.Errorf("%s: %w", op, err)
	}
	return target, nil
}

func (r *Repo) revertInWorktree(ctx context.Context, tip string, commits []string, msg string) (sha string, err error) {
	id, err := identity(ctx, r.root)
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "apserver-revert-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if _, err := git(ctx, r.root, "worktree", "add", "--quiet", "--detach", tmp, tip); err != nil {
		return "", err
	}
	defer func() {
		if _, rerr := git(context.WithoutCancel(ctx), r.root, "worktree", "remove", "--force", tmp); rerr != nil && err == nil {
			err = rerr
		}
	}()
	for i := len(commits) - 1; i >= 0; i-- {
		if _, err := run(ctx, call{dir: tmp, config: id, args: []string{"revert", "--no-commit", "--no-edit", commits[i]}}); err != nil {
			if files, ferr := git(ctx, tmp, "diff", "--name-only", "--diff-filter=U"); ferr == nil && files != "" {
				return "", &ConflictError{Files: strings.Split(files, "\n")}
			}
			return "", err
		}
	}
	if _, err := run(ctx, call{dir: tmp, config: id, stdin: []byte(msg), args: []string{"commit", "--quiet", "--allow-empty", "--no-verify", "--cleanup=whitespace", "--file=-"}}); err != nil {
		return "", err
	}
	return resolve(ctx, tmp, "HEAD")
}
