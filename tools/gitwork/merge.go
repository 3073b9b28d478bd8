package gitwork

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// MergeMode is how Merge brings a branch into its base.
type MergeMode string

const (
	// MergeFastForward moves base to the branch; it fails with
	// ErrNotFastForward when base has commits the branch lacks.
	MergeFastForward MergeMode = "ff"
	// MergeSquash adds one commit to base with the branch's changes.
	MergeSquash MergeMode = "squash"
)

// Errors of Merge that callers branch on.
var (
	// ErrBaseDirty: base is checked out in a worktree with uncommitted
	// changes to tracked files; nothing was changed.
	ErrBaseDirty = errors.New("base branch is checked out with uncommitted changes")
	// ErrNotFastForward: base has moved on since the branch left it.
	ErrNotFastForward = errors.New("not a fast-forward")
	// ErrConflict: the squash merge of the branch into base conflicts.
	ErrConflict = errors.New("merge conflict")
)

// SquashTrailer is the trailer key Merge puts on a squash commit, with the
// SHA of the branch commit it squashed, so that a repeated Merge finds it.
const SquashTrailer = "Apserver-Squash-Of"

// useMergeTree is false in tests that exercise the temporary worktree, the
// way squash commits are built with a git older than 2.38.
var useMergeTree = true

// errNoMergeTree: git is older than 2.38 and has no merge-tree --write-tree.
var errNoMergeTree = errors.New("git merge-tree --write-tree is not supported")

// Merge brings branch into base and returns base's new tip. It never
// touches uncommitted work:
//
//   - base checked out nowhere: the ref is moved with a compare-and-swap
//     against the tip Merge started from; no work tree is involved.
//   - base checked out in a worktree (the user's checkout, say) whose
//     tracked files are unchanged: git merge --ff-only runs there, which
//     updates its files and index. git refuses to overwrite an untracked
//     file there; an ignored one it replaces, as it always does.
//   - base checked out with uncommitted changes to tracked files (staged or
//     not): ErrBaseDirty, and nothing changes.
//
// In squash mode the squash commit (message plus a SquashTrailer line) is
// built off any checkout (git merge-tree, or a temporary worktree with an
// older git) and then fast-forwarded to as above. In ff mode message is
// not used.
//
// Merge converges when repeated: a branch already contained in base, or
// already squashed into it (a commit among FindDepth newest of base has
// the SquashTrailer of the branch's tip), returns base's tip unchanged.
func (r *Repo) Merge(ctx context.Context, base, branch string, mode MergeMode, message string) (string, error) {
	unlock, err := r.lock(ctx)
	if err != nil {
		return "", fmt.Errorf("merging %s into %s: %w", branch, base, err)
	}
	defer unlock()
	for round := 0; ; round++ {
		sha, err := r.mergeOnce(ctx, base, branch, mode, message)
		// base moved under the merge (a git that a killed apserver left
		// running may have made this very merge): look again.
		if err != nil && round < 2 && refMoved(err) {
			continue
		}
		return sha, err
	}
}

func (r *Repo) mergeOnce(ctx context.Context, base, branch string, mode MergeMode, message string) (string, error) {
	if mode != MergeFastForward && mode != MergeSquash {
		return "", fmt.Errorf("merging %s into %s: unknown mode %q (ff or squash)", branch, base, mode)
	}
	for _, b := range []string{base, branch} {
		if err := checkRefFormat(ctx, r.root, b); err != nil {
			return "", fmt.Errorf("merging %s into %s: %w", branch, base, err)
		}
	}
	baseRef := "refs/heads/" + base
	baseSHA, err := resolve(ctx, r.root, baseRef)
	if err != nil {
		return "", fmt.Errorf("merging %s into %s: %w", branch, base, err)
	}
	branchSHA, err := resolve(ctx, r.root, "refs/heads/"+branch)
	if err != nil {
		return "", fmt.Errorf("merging %s into %s: %w", branch, base, err)
	}
	merged, err := isAncestor(ctx, r.root, branchSHA, baseSHA)
	if err != nil {
		return "", fmt.Errorf("merging %s into %s: %w", branch, base, err)
	}
	if merged {
		return baseSHA, nil
	}
	ff, err := isAncestor(ctx, r.root, baseSHA, branchSHA)
	if err != nil {
		return "", fmt.Errorf("merging %s into %s: %w", branch, base, err)
	}
	var target string
	switch mode {
	case MergeFastForward:
		if !ff {
			return "", fmt.Errorf("merging %s into %s: %w", branch, base, ErrNotFastForward)
		}
		target = branchSHA
	case MergeSquash:
		mark := []Trailer{{SquashTrailer, branchSHA}}
		if _, ok, err := findCommit(ctx, r.root, baseRef, mark); err != nil {
			return "", fmt.Errorf("merging %s into %s: %w", branch, base, err)
		} else if ok {
			return baseSHA, nil // squashed before; base may have moved on since
		}
		target, err = r.squash(ctx, baseSHA, branchSHA, ff, message, mark)
		if err != nil {
			return "", fmt.Errorf("squashing %s into %s: %w", branch, base, err)
		}
	}

	if err := r.advance(ctx, base, baseSHA, target, "merge "+branch); err != nil {
		return "", fmt.Errorf("merging %s into %s: %w", branch, base, err)
	}
	return target, nil
}

// advance moves base from baseSHA to target, a descendant, without
// touching uncommitted work: in the worktree that has base checked out
// (git merge --ff-only, refused with ErrBaseDirty when its tracked files
// have changes), else by a compare-and-swap of the ref. Called with the
// repository's lock held.
func (r *Repo) advance(ctx context.Context, base, baseSHA, target, what string) error {
	baseRef := "refs/heads/" + base
	wts, err := r.worktrees(ctx)
	if err != nil {
		return err
	}
	for _, wt := range wts {
		if wt.branch != baseRef || wt.prunable {
			continue // a worktree whose directory is gone holds no work
		}
		// A git merge that a killed apserver left running there.
		if err := settle(ctx, "merge "+canonical(wt.path), func() bool { return gitInDir(wt.path) }); err != nil {
			return err
		}
		status, err := git(ctx, wt.path, "status", "--porcelain", "--untracked-files=no")
		if err != nil {
			return err
		}
		if status != "" {
			return fmt.Errorf("checked out at %s: %w", wt.path, ErrBaseDirty)
		}
		if _, err := git(ctx, wt.path, "merge", "--ff-only", "--quiet", "--no-edit", target); err != nil {
			return fmt.Errorf("checked out at %s: %w", wt.path, err)
		}
		return nil
	}
	_, err = git(ctx, r.root, "update-ref", "-m", "apserver: "+what, baseRef, target, baseSHA)
	return err
}

func isAncestor(ctx context.Context, dir, a, b string) (bool, error) {
	_, err := run(ctx, call{dir: dir, args: []string{"merge-base", "--is-ancestor", a, b}})
	if err == nil {
		return true, nil
	}
	if exitCode(err) == 1 {
		return false, nil
	}
	return false, err
}

// squash builds the squash commit of branch onto base and returns its SHA;
// it is reachable from no ref yet.
func (r *Repo) squash(ctx context.Context, base, branch string, ff bool, message string, mark []Trailer) (string, error) {
	msg := strings.TrimRight(message, "\n\t ")
	if msg == "" {
		msg = "apserver: squash merge"
	}
	msg += "\n\n" + mark[0].String() + "\n"
	id, err := identity(ctx, r.root)
	if err != nil {
		return "", err
	}
	var tree string
	switch {
	case ff:
		tree, err = git(ctx, r.root, "rev-parse", "--verify", branch+"^{tree}")
	case useMergeTree:
		tree, err = r.mergeTree(ctx, base, branch)
		if errors.Is(err, errNoMergeTree) {
			return r.squashInWorktree(ctx, base, branch, msg, id)
		}
	default:
		return r.squashInWorktree(ctx, base, branch, msg, id)
	}
	if err != nil {
		return "", err
	}
	out, err := run(ctx, call{dir: r.root, config: id, stdin: []byte(msg), args: []string{"commit-tree", tree, "-p", base, "-F", "-"}})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// mergeTree writes the tree of merging branch into base with git merge-tree
// (git 2.38 or later), touching no work tree or index.
func (r *Repo) mergeTree(ctx context.Context, base, branch string) (string, error) {
	out, err := run(ctx, call{dir: r.root, args: []string{"merge-tree", "--write-tree", "--name-only", "--no-messages", base, branch}})
	if err != nil {
		if exitCode(err) == 129 {
			return "", errNoMergeTree
		}
		if exitCode(err) == 1 {
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			return "", fmt.Errorf("%w in %s", ErrConflict, strings.Join(lines[1:], ", "))
		}
		return "", err
	}
	tree, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return tree, nil
}

// squashInWorktree builds the squash commit in a temporary detached
// worktree, which it removes again.
func (r *Repo) squashInWorktree(ctx context.Context, base, branch, msg string, id []string) (sha string, err error) {
	tmp, err := os.MkdirTemp("", "apserver-squash-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if _, err := git(ctx, r.root, "worktree", "add", "--quiet", "--detach", tmp, base); err != nil {
		return "", err
	}
	defer func() {
		if _, rerr := git(context.WithoutCancel(ctx), r.root, "worktree", "remove", "--force", tmp); rerr != nil && err == nil {
			err = rerr
		}
	}()
	if _, err := run(ctx, call{dir: tmp, config: id, args: []string{"merge", "--squash", "--quiet", branch}}); err != nil {
		if files, ferr := git(ctx, tmp, "diff", "--name-only", "--diff-filter=U"); ferr == nil && files != "" {
			return "", fmt.Errorf("%w in %s", ErrConflict, strings.ReplaceAll(files, "\n", ", "))
		}
		return "", err
	}
	if _, err := run(ctx, call{dir: tmp, config: id, stdin: []byte(msg), args: []string{"commit", "--quiet", "--allow-empty", "--no-verify", "--cleanup=whitespace", "--file=-"}}); err != nil {
		return "", err
	}
	return resolve(ctx, tmp, "HEAD")
}
