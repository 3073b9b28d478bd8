package gitwork

import (
	"context"
	"strings"
)

// Branches are the repository's local branches (short names).
func (r *Repo) Branches(ctx context.Context) ([]string, error) {
	out, err := git(ctx, r.root, "for-each-ref", "--format=%(refname:short)", "refs/heads")
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// ListDir names the entries of directory dir in the tree of rev (none when
// it has no such directory).
func (r *Repo) ListDir(ctx context.Context, rev, dir string) ([]string, error) {
	out, err := git(ctx, r.root, "ls-tree", "--name-only", rev+":"+dir)
	if err != nil {
		if exitCode(err) == 128 {
			return nil, nil
		}
		return nil, err
	}
	return strings.Fields(out), nil
}

// ReadFile is the content of path in the tree of rev.
func (r *Repo) ReadFile(ctx context.Context, rev, path string) ([]byte, error) {
	return run(ctx, call{dir: r.root, args: []string{"show", rev + ":" + path}})
}

// IsAncestor says whether commit a is an ancestor of (or is) b.
func (r *Repo) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	return isAncestor(ctx, r.root, a, b)
}

// FindOn looks among the FindDepth newest commits of branch for one with
// all the trailers.
func (r *Repo) FindOn(ctx context.Context, branch string, trailers []Trailer) (string, bool, error) {
	return findCommit(ctx, r.root, "refs/heads/"+branch, trailers)
}
