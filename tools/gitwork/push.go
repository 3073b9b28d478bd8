package gitwork

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrPushRejected says the remote refused a push because its branch has
// commits the local one does not (someone else pushed): a push never
// forces, so their work is never overwritten.
var ErrPushRejected = errors.New("the remote branch has commits this branch does not have")

// ErrNoRemote says the repository has no such remote.
var ErrNoRemote = errors.New("no such remote")

// RemoteURL is the fetch URL of the remote named name (origin).
func RemoteURL(ctx context.Context, dir, name string) (string, error) {
	out, err := git(ctx, dir, "remote", "get-url", name)
	if err != nil {
		var ge *GitError
		if errors.As(err, &ge) && (strings.Contains(ge.Stderr, "No such remote") || exitCode(ge.Err) == 2) {
			return "", fmt.Errorf("remote %q: %w", name, ErrNoRemote)
		}
		return "", err
	}
	return out, nil
}

// Push pushes the local branch to the branch of the same name on remote,
// never forcing, and returns the SHA pushed. A remote branch that moved
// ahead (a human's commit) is ErrPushRejected. Pushing what the remote
// already has is no error, so a push asked again after a restart is safe.
func Push(ctx context.Context, dir, remote, branch string) (string, error) {
	sha, err := resolve(ctx, dir, "refs/heads/"+branch)
	if err != nil {
		return "", fmt.Errorf("pushing %s: %w", branch, err)
	}
	_, err = run(ctx, call{dir: dir, args: []string{"push", "--quiet", "--porcelain", remote, "refs/heads/" + branch + ":refs/heads/" + branch}})
	if err != nil {
		var ge *GitError
		if errors.As(err, &ge) && (strings.Contains(ge.Stderr, "non-fast-forward") || strings.Contains(ge.Stderr, "fetch first") ||
			strings.Contains(ge.Stderr, "[rejected]") || strings.Contains(ge.Stderr, "Updates were rejected")) {
			return "", fmt.Errorf("pushing %s to %s: %w", branch, remote, ErrPushRejected)
		}
		return "", fmt.Errorf("pushing %s to %s: %w", branch, remote, err)
	}
	return sha, nil
}

// Fetch brings remote's branch into refs/remotes/<remote>/<branch> and
// returns its tip.
func Fetch(ctx context.Context, dir, remote, branch string) (string, error) {
	ref := "refs/remotes/" + remote + "/" + branch
	if _, err := git(ctx, dir, "fetch", "--quiet", "--no-tags", remote, "+refs/heads/"+branch+":"+ref); err != nil {
		return "", fmt.Errorf("fetching %s from %s: %w", branch, remote, err)
	}
	return resolve(ctx, dir, ref)
}

// EnsureBranch creates branch at commit at, unless it exists already.
func (r *Repo) EnsureBranch(ctx context.Context, branch, at string) error {
	if _, err := resolve(ctx, r.root, "refs/heads/"+branch); err == nil {
		return nil
	}
	if err := checkRefFormat(ctx, r.root, branch); err != nil {
		return err
	}
	_, err := git(ctx, r.root, "branch", "--no-track", branch, at)
	return err
}
