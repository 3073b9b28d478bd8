package gitwork

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Errors callers branch on.
var (
	// ErrNotRepository: the directory is not inside a git work tree.
	ErrNotRepository = errors.New("not a git repository")
	// ErrDetachedHead: the checkout is on no branch.
	ErrDetachedHead = errors.New("HEAD is detached")
	// ErrUnknownRef: the ref names no commit.
	ErrUnknownRef = errors.New("unknown ref")
)

// Repo is the user's repository, as seen from one of its work trees (the
// one Open was given a directory of).
type Repo struct {
	root   string
	common string // the git directory shared by all worktrees
}

// Open finds the repository that dir is in (dir may be any directory inside
// its work tree). It fails with ErrNotRepository outside a work tree,
// including in a bare repository.
func Open(ctx context.Context, dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("opening repository at %s: %w", dir, err)
	}
	out, err := git(ctx, abs, "rev-parse", "--path-format=absolute", "--is-inside-work-tree", "--show-toplevel", "--git-common-dir")
	if err != nil {
		var ge *GitError
		if errors.As(err, &ge) && (strings.Contains(ge.Stderr, "not a git repository") || strings.Contains(ge.Stderr, "must be run in a work tree")) {
			return nil, fmt.Errorf("opening %s: %w: %w", abs, ErrNotRepository, err)
		}
		return nil, fmt.Errorf("opening repository at %s: %w", abs, err)
	}
	lines := strings.Split(out, "\n")
	if len(lines) != 3 || lines[0] != "true" || lines[1] == "" {
		return nil, fmt.Errorf("opening %s: %w (no work tree)", abs, ErrNotRepository)
	}
	return &Repo{root: lines[1], common: lines[2]}, nil
}

// Root is the top directory of the work tree the repository was opened in.
func (r *Repo) Root() string { return r.root }

// CurrentBranch is the short name of the branch checked out in Root, or
// ErrDetachedHead.
func (r *Repo) CurrentBranch(ctx context.Context) (string, error) {
	out, err := run(ctx, call{dir: r.root, args: []string{"symbolic-ref", "--quiet", "--short", "HEAD"}})
	if err != nil {
		if exitCode(err) == 1 {
			return "", fmt.Errorf("current branch of %s: %w", r.root, ErrDetachedHead)
		}
		return "", fmt.Errorf("current branch of %s: %w", r.root, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// HeadSHA is the full SHA of the commit ref names (a branch, tag, SHA or
// any revision git understands; "HEAD" for Root's checkout), or
// ErrUnknownRef.
func (r *Repo) HeadSHA(ctx context.Context, ref string) (string, error) {
	return resolve(ctx, r.root, ref)
}

// HasCommit says whether the repository has any commit at all (on any
// branch): a repository just made by git init has none.
func (r *Repo) HasCommit(ctx context.Context) (bool, error) {
	out, err := git(ctx, r.root, "rev-list", "-n", "1", "--all")
	if err != nil {
		return false, fmt.Errorf("listing the commits of %s: %w", r.root, err)
	}
	return out != "", nil
}

// Prune drops the registrations of worktrees whose directories are gone
// (git worktree prune).
func (r *Repo) Prune(ctx context.Context) error {
	unlock, err := r.lock(ctx)
	if err != nil {
		return fmt.Errorf("pruning worktrees of %s: %w", r.root, err)
	}
	defer unlock()
	if _, err := git(ctx, r.root, "worktree", "prune"); err != nil {
		return fmt.Errorf("pruning worktrees of %s: %w", r.root, err)
	}
	return nil
}

func resolve(ctx context.Context, dir, ref string) (string, error) {
	if ref == "" || strings.HasPrefix(ref, "-") {
		return "", fmt.Errorf("resolving %q: %w", ref, ErrUnknownRef)
	}
	out, err := run(ctx, call{dir: dir, args: []string{"rev-parse", "--verify", "--quiet", "--end-of-options", ref + "^{commit}"}})
	if err != nil {
		if exitCode(err) == 1 {
			return "", fmt.Errorf("resolving %q: %w", ref, ErrUnknownRef)
		}
		return "", fmt.Errorf("resolving %q: %w", ref, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Bounds of BranchName.
const (
	shortIDLen = 8
	slugLen    = 40
)

// BranchName is the branch of a run: "apserver/<short-id>-<slug>". The
// short id is the first 8 letters or digits of runID, lowercased; the slug
// is the request's first words in lowercase ASCII letters and digits joined
// by '-', at most 40 bytes and cut at a word boundary when it can be. The
// result is always a valid git branch name; it is "apserver/<short-id>"
// when the request has no usable word, and uses "run" for an id without
// letters or digits.
func BranchName(runID, request string) string {
	var id strings.Builder
	for _, c := range strings.ToLower(runID) {
		if id.Len() == shortIDLen {
			break
		}
		if c < utf8.RuneSelf && isAlnum(byte(c)) {
			id.WriteRune(c)
		}
	}
	if id.Len() == 0 {
		id.WriteString("run")
	}
	slug := slugify(request)
	if slug == "" {
		return "apserver/" + id.String()
	}
	return "apserver/" + id.String() + "-" + slug
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
}

func slugify(s string) string {
	var words []string
	var w strings.Builder
	for i := 0; i <= len(s); i++ {
		var c byte
		if i < len(s) {
			c = s[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
		}
		if i < len(s) && isAlnum(c) {
			w.WriteByte(c)
			continue
		}
		if w.Len() > 0 {
			words = append(words, w.String())
			w.Reset()
		}
	}
	var slug string
	for _, word := range words {
		next := word
		if slug != "" {
			next = slug + "-" + word
		}
		if len(next) > slugLen {
			if slug == "" {
				slug = word[:slugLen]
			}
			break
		}
		slug = next
	}
	return slug
}
