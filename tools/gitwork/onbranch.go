package gitwork

import (
	"context"
	"errors"
	"fmt"
)

// OnBranch says whether the commit sha is on branch: the branch exists
// and the commit is it or one of its ancestors. An unknown commit or
// branch is false, not an error.
func (r *Repo) OnBranch(ctx context.Context, sha, branch string) (bool, error) {
	if sha == "" || branch == "" {
		return false, nil
	}
	tip, err := resolve(ctx, r.root, "refs/heads/"+branch)
	if errors.Is(err, ErrUnknownRef) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	c, err := resolve(ctx, r.root, sha)
	if errors.Is(err, ErrUnknownRef) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	ok, err := isAncestor(ctx, r.root, c, tip)
	if err != nil {
		return false, fmt.Errorf("is %s on branch %s of %s: %w", sha, branch, r.root, err)
	}
	return ok, nil
}
