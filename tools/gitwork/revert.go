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
// newest of branch is returned instead of a second one. Paths under keep
// (directories, relative to the root) stay as they are on the branch: a
// run's own records, which later commits rewrite, are not reverted with
// one of its tasks.
func (r *Repo) Revert(ctx context.Context, branch string, commits []string, message string, trailers []Trailer, keep ...string) (string, error) {
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
	target, err := r.revertInWorktree(ctx, tip, commits, msg+"\n", keep)
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

func (r *Repo) revertInWorktree(ctx context.Context, tip string, commits []string, msg string, keep []string) (sha string, err error) {
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
	kept := func(f string) bool {
		for _, k := range keep {
			if f == k || strings.HasPrefix(f, strings.TrimSuffix(k, "/")+"/") {
				return true
			}
		}
		return false
	}
	for i := len(commits) - 1; i >= 0; i-- {
		args := []string{"revert", "--no-commit", "--no-edit"}
		if parents, _ := git(ctx, tmp, "rev-list", "--parents", "-n", "1", commits[i]); len(strings.Fields(parents)) > 2 {
			args = append(args, "-m", "1") // a merge commit: undo what it brought into its first parent
		}
		_, rerr := run(ctx, call{dir: tmp, config: id, args: append(args, commits[i])})
		var conflicts []string
		if rerr != nil {
			files, ferr := git(ctx, tmp, "diff", "--name-only", "--diff-filter=U")
			if ferr != nil || files == "" {
				return "", rerr
			}
			for _, f := range strings.Split(files, "\n") {
				if !kept(f) {
					conflicts = append(conflicts, f)
				}
			}
			if len(conflicts) > 0 {
				return "", &ConflictError{Files: conflicts}
			}
		}
		if rerr != nil {
			// The conflicts were all in kept paths: end the revert's
			// sequencer state, keep its index.
			_, _ = git(ctx, tmp, "revert", "--quit")
		}
		// What is kept goes back to the branch's version, conflicted or not.
		for _, k := range keep {
			if in, _ := git(ctx, tmp, "ls-tree", "--name-only", tip, "--", k); in != "" {
				if _, err := git(ctx, tmp, "checkout", tip, "--", k); err != nil {
					return "", err
				}
			} else if _, err := git(ctx, tmp, "rm", "-r", "-q", "-f", "--ignore-unmatch", "--", k); err != nil {
				return "", err
			}
		}
	}
	if _, err := run(ctx, call{dir: tmp, config: id, stdin: []byte(msg), args: []string{"commit", "--quiet", "--allow-empty", "--no-verify", "--cleanup=whitespace", "--file=-"}}); err != nil {
		return "", err
	}
	return resolve(ctx, tmp, "HEAD")
}

// DeleteBranch deletes a local branch and returns the tip it had, so that
// `git branch NAME TIP` brings it back. A branch checked out somewhere is
// refused by git.
func (r *Repo) DeleteBranch(ctx context.Context, branch string) (string, error) {
	unlock, err := r.lock(ctx)
	if err != nil {
		return "", fmt.Errorf("deleting branch %s: %w", branch, err)
	}
	defer unlock()
	tip, err := resolve(ctx, r.root, "refs/heads/"+branch)
	if err != nil {
		return "", fmt.Errorf("deleting branch %s: %w", branch, err)
	}
	if _, err := git(ctx, r.root, "branch", "-D", "--quiet", branch); err != nil {
		return "", fmt.Errorf("deleting branch %s: %w", branch, err)
	}
	return tip, nil
}
