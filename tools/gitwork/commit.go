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

// Trailer is one "Key: Value" line of a commit message's trailer block.
// Keys compare case-insensitively, as git's do; values exactly.
type Trailer struct{ Key, Value string }

func (t Trailer) String() string { return t.Key + ": " + t.Value }

func checkTrailers(trailers []Trailer) error {
	for _, t := range trailers {
		if t.Key == "" || strings.TrimLeft(t.Key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-") != "" || strings.HasPrefix(t.Key, "-") {
			return fmt.Errorf("invalid trailer key %q (letters, digits and '-')", t.Key)
		}
		if t.Value == "" || strings.ContainsAny(t.Value, "\r\n") || strings.TrimSpace(t.Value) != t.Value {
			return fmt.Errorf("invalid trailer value %q for %s (one line, not blank, no surrounding space)", t.Value, t.Key)
		}
	}
	return nil
}

// FindDepth is how many commits back from HEAD FindCommit (and so Commit)
// looks for a commit carrying the trailers.
const FindDepth = 1000

// identity returns the -c settings that give git an identity when the
// user's configuration has none.
func identity(ctx context.Context, dir string) ([]string, error) {
	out, err := run(ctx, call{dir: dir, args: []string{"config", "--get-regexp", `^user\.(name|email)$`}})
	if err != nil && exitCode(err) != 1 {
		return nil, fmt.Errorf("reading the user's identity: %w", err)
	}
	var name, email bool
	for _, line := range strings.Split(string(out), "\n") {
		key, val, _ := strings.Cut(line, " ")
		if strings.TrimSpace(val) == "" {
			continue
		}
		switch key {
		case "user.name":
			name = true
		case "user.email":
			email = true
		}
	}
	var config []string
	if !name {
		config = append(config, "user.name=apserver")
	}
	if !email {
		config = append(config, "user.email=apserver@localhost")
	}
	return config, nil
}

// Commit stages everything in worktree (what .gitignore ignores stays out)
// and commits it with message followed by a paragraph of the trailers, and
// returns the commit's SHA. A commit with no change is still made, so that
// every task has its commit.
//
// The trailers identify the commit: if a commit among the FindDepth newest
// reachable from HEAD already carries all of them (a replay after a crash
// that committed but did not record it), Commit returns its SHA and
// changes nothing, the work tree included. A task that commits more than
// once must therefore add a trailer that tells its commits apart.
//
// Hooks do not run, signing is off, and when the user's configuration has
// no user.name or user.email, "apserver <apserver@localhost>" fills in.
func Commit(ctx context.Context, worktree, message string, trailers []Trailer) (string, error) {
	if err := checkTrailers(trailers); err != nil {
		return "", fmt.Errorf("committing in %s: %w", worktree, err)
	}
	if len(trailers) > 0 {
		sha, ok, err := FindCommit(ctx, worktree, trailers)
		if err != nil {
			return "", fmt.Errorf("committing in %s: %w", worktree, err)
		}
		if ok {
			return sha, nil
		}
	}
	id, err := identity(ctx, worktree)
	if err != nil {
		return "", fmt.Errorf("committing in %s: %w", worktree, err)
	}
	if err := clearingStaleLock(ctx, worktree, func() error {
		_, err := git(ctx, worktree, "add", "--all")
		return err
	}); err != nil {
		return "", fmt.Errorf("committing in %s: staging: %w", worktree, err)
	}
	msg := strings.TrimRight(message, "\n\t ")
	if msg == "" {
		msg = "apserver commit"
	}
	if len(trailers) > 0 {
		msg += "\n"
		for i, t := range trailers {
			if i == 0 {
				msg += "\n"
			}
			msg += t.String() + "\n"
		}
	}
	err = clearingStaleLock(ctx, worktree, func() error {
		_, err := run(ctx, call{
			dir:    worktree,
			args:   []string{"commit", "--quiet", "--allow-empty", "--no-verify", "--cleanup=whitespace", "--file=-"},
			stdin:  []byte(msg),
			config: id,
		})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("committing in %s: %w", worktree, err)
	}
	sha, err := resolve(ctx, worktree, "HEAD")
	if err != nil {
		return "", fmt.Errorf("committing in %s: %w", worktree, err)
	}
	return sha, nil
}

// FindCommit looks among the FindDepth newest commits reachable from
// worktree's HEAD for the newest one whose trailers include all of
// trailers, and returns its SHA.
func FindCommit(ctx context.Context, worktree string, trailers []Trailer) (string, bool, error) {
	return findCommit(ctx, worktree, "HEAD", trailers)
}

func findCommit(ctx context.Context, dir, rev string, trailers []Trailer) (string, bool, error) {
	if len(trailers) == 0 {
		return "", false, errors.New("finding a commit: no trailers to look for")
	}
	if err := checkTrailers(trailers); err != nil {
		return "", false, fmt.Errorf("finding a commit: %w", err)
	}
	out, err := run(ctx, call{dir: dir, args: []string{
		"log", "-z", fmt.Sprintf("--max-count=%d", FindDepth),
		"--format=%H%n%(trailers:only,unfold)", rev, "--",
	}})
	if err != nil {
		if _, rerr := resolve(ctx, dir, rev); errors.Is(rerr, ErrUnknownRef) {
			return "", false, nil // no commit yet
		}
		return "", false, fmt.Errorf("finding a commit in %s: %w", dir, err)
	}
	for _, rec := range strings.Split(string(out), "\x00") {
		sha, block, _ := strings.Cut(rec, "\n")
		if sha != "" && hasTrailers(block, trailers) {
			return sha, true, nil
		}
	}
	return "", false, nil
}

func hasTrailers(block string, want []Trailer) bool {
	lines := strings.Split(block, "\n")
	for _, w := range want {
		found := false
		for _, line := range lines {
			key, val, ok := strings.Cut(line, ":")
			if ok && strings.EqualFold(strings.TrimSpace(key), w.Key) && strings.TrimSpace(val) == w.Value {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Diff is the unified diff from fromRef to worktree's files as they are,
// untracked files included (ignored ones not). It reads the work tree
// through a temporary index and leaves the worktree's own index alone.
func Diff(ctx context.Context, worktree, fromRef string) (string, error) {
	from, err := resolve(ctx, worktree, fromRef)
	if err != nil {
		return "", fmt.Errorf("diff in %s: %w", worktree, err)
	}
	indexPath, err := git(ctx, worktree, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return "", fmt.Errorf("diff in %s: %w", worktree, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(indexPath), "apserver-diff-index-*")
	if err != nil {
		return "", fmt.Errorf("diff in %s: %w", worktree, err)
	}
	tmpPath := tmp.Name()
	defer os.Remove(tmpPath)
	// Starting from a copy of the index keeps its stat cache: unchanged
	// files are not hashed again.
	if data, err := os.ReadFile(indexPath); err == nil {
		_, err = tmp.Write(data)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", fmt.Errorf("diff in %s: %w", worktree, err)
		}
	} else {
		tmp.Close()
		os.Remove(tmpPath) // git wants no file rather than an empty one
	}
	env := []string{"GIT_INDEX_FILE=" + tmpPath}
	if _, err := run(ctx, call{dir: worktree, env: env, args: []string{"add", "--all"}}); err != nil {
		return "", fmt.Errorf("diff in %s: %w", worktree, err)
	}
	out, err := run(ctx, call{dir: worktree, env: env, args: []string{
		"diff", "--cached", "--no-color", "--no-ext-diff", "--no-textconv", "--find-renames", from, "--",
	}})
	if err != nil {
		return "", fmt.Errorf("diff in %s: %w", worktree, err)
	}
	return string(out), nil
}

// clearingStaleLock runs fn, a git command in worktree, and if it failed
// because the worktree's own index.lock stayed taken all the while run
// retried and no process has it open (git keeps its lock file open until
// it is done, so a git killed with apserver left it behind), removes the
// lock and runs fn once more. Locks in the shared repository are never
// removed.
func clearingStaleLock(ctx context.Context, worktree string, fn func() error) error {
	err := fn()
	var ge *GitError
	if err == nil || !errors.As(err, &ge) || !lockContention(ge.Stderr) {
		return err
	}
	gitDir, gerr := git(ctx, worktree, "rev-parse", "--absolute-git-dir")
	if gerr != nil {
		return err
	}
	lock := filepath.Join(gitDir, "index.lock")
	info, serr := os.Stat(lock)
	if serr != nil || time.Since(info.ModTime()) < lockRetry || !strings.Contains(ge.Stderr, "index.lock") || fileInUse(lock) {
		return err
	}
	if rerr := os.Remove(lock); rerr != nil {
		return err
	}
	return fn()
}

// fileInUse reports whether a process has path open, as far as /proc
// shows; without /proc it says yes.
func fileInUse(path string) bool {
	if _, err := os.Readlink("/proc/self/fd/0"); err != nil {
		return true
	}
	want := canonical(path)
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, p := range procs {
		if p.Name()[0] < '0' || p.Name()[0] > '9' {
			continue
		}
		fdDir := filepath.Join("/proc", p.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue // gone, or not ours to look at
		}
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil && (target == path || target == want) {
				return true
			}
		}
	}
	return false
}
