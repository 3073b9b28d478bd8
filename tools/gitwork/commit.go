package gitwork

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
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
// looks for a commit carrying the trailers. A replay looks for a recent
// commit, usually HEAD itself; every Commit pays for the walk (about 6 ms
// for 200 commits, 22 ms for 1,000, on a loaded 2-core machine).
const FindDepth = 200

// identities caches identity per directory for the life of the process:
// a run's worktree asks git once, not once per task.
var identities sync.Map // string → []string

// identity returns the -c settings that give git an identity when the
// user's configuration has none.
func identity(ctx context.Context, dir string) ([]string, error) {
	if id, ok := identities.Load(dir); ok {
		return id.([]string), nil
	}
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
	identities.Store(dir, config)
	return config, nil
}

// Commit stages everything in worktree (what .gitignore ignores, and what
// Setup copied, stays out)
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
	for round := 0; ; round++ {
		sha, err := commitOnce(ctx, worktree, msg, trailers)
		// HEAD moved under the commit: a git that a killed apserver left
		// running committed meanwhile, maybe this very commit; look again.
		if err != nil && round < 2 && refMoved(err) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("committing in %s: %w", worktree, err)
		}
		return sha, nil
	}
}

func commitOnce(ctx context.Context, worktree, msg string, trailers []Trailer) (string, error) {
	if err := settleWorktree(ctx, worktree); err != nil {
		return "", err
	}
	if len(trailers) > 0 {
		sha, ok, err := FindCommit(ctx, worktree, trailers)
		if err != nil || ok {
			return sha, err
		}
	}
	id, err := identity(ctx, worktree)
	if err != nil {
		return "", err
	}
	add, err := addAllArgs(ctx, worktree)
	if err != nil {
		return "", err
	}
	owned := worktreeLock(ctx, worktree)
	if err := clearingStaleLock(ctx, owned, func() error {
		_, err := git(ctx, worktree, add...)
		return err
	}); err != nil {
		return "", fmt.Errorf("staging: %w", err)
	}
	err = clearingStaleLock(ctx, owned, func() error {
		_, err := run(ctx, call{
			dir:    worktree,
			args:   []string{"commit", "--quiet", "--allow-empty", "--no-verify", "--cleanup=whitespace", "--file=-"},
			stdin:  []byte(msg),
			config: id,
		})
		return err
	})
	if err != nil {
		return "", err
	}
	if sha := readHead(ctx, worktree); sha != "" {
		return sha, nil
	}
	return resolve(ctx, worktree, "HEAD")
}

// settleWorktree waits, once per worktree and process, for the gits that
// a killed apserver left running in worktree, then removes the locks they
// left that belong to the worktree alone and that no process holds.
func settleWorktree(ctx context.Context, worktree string) error {
	key := "worktree " + canonical(worktree)
	if _, ok := settled.Load(key); ok {
		return nil
	}
	if err := settle(ctx, key, func() bool { return gitInDir(worktree) }); err != nil {
		return err
	}
	gitDir, err := gitDirOf(ctx, worktree)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(gitDir, "commondir")); err != nil {
		return nil // the main work tree: the user's locks are not ours
	}
	locks, _ := filepath.Glob(filepath.Join(gitDir, "*.lock"))
	if ref, common := headRef(gitDir); ref != "" {
		locks = append(locks, filepath.Join(common, filepath.FromSlash(ref))+".lock")
	}
	for _, lock := range locks {
		if _, err := os.Lstat(lock); err == nil && !fileInUse(lock) {
			os.Remove(lock)
		}
	}
	return nil
}

// refMoved reports whether err is git refusing a ref update because the ref
// changed since the command read it.
func refMoved(err error) bool {
	var ge *GitError
	return errors.As(err, &ge) && strings.Contains(ge.Stderr, "but expected")
}

// readHead reads the SHA of worktree's HEAD from the files a commit just
// wrote (HEAD, and the branch's loose ref in the common directory), which
// saves starting git once per task; "" when the layout is not the one
// expected (a packed ref, another ref storage), and the caller asks git.
func readHead(ctx context.Context, worktree string) string {
	gitDir, err := gitDirOf(ctx, worktree)
	if err != nil {
		return ""
	}
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return ""
	}
	content := strings.TrimSpace(string(head))
	if strings.HasPrefix(content, "ref: ") {
		ref, common := headRef(gitDir)
		if ref == "" {
			return ""
		}
		data, err := os.ReadFile(filepath.Join(common, filepath.FromSlash(ref)))
		if err != nil {
			return ""
		}
		content = strings.TrimSpace(string(data))
	}
	if (len(content) != 40 && len(content) != 64) || strings.Trim(content, "0123456789abcdef") != "" {
		return ""
	}
	return content
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
// untracked files included (ignored ones, and what Setup copied, not). It reads the work tree
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
	add, err := addAllArgs(ctx, worktree)
	if err != nil {
		return "", fmt.Errorf("diff in %s: %w", worktree, err)
	}
	env := []string{"GIT_INDEX_FILE=" + tmpPath}
	if _, err := run(ctx, call{dir: worktree, env: env, args: add}); err != nil {
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

// lockPathRE finds the lock file in git's "File exists" message.
var lockPathRE = regexp.MustCompile(`Unable to create '([^']+\.lock)': File exists`)

// clearingStaleLock runs fn, a git command, and if it failed because a lock
// that owned says belongs to the run alone stayed taken all the while run
// retried, is older than that and no process has it open (git keeps a
// lock file open until it is almost done, so a git killed together with
// apserver left it behind), removes the lock and runs fn again. Other
// locks of the shared repository are never removed.
func clearingStaleLock(ctx context.Context, owned func(lock string) bool, fn func() error) error {
	for cleared := 0; ; cleared++ {
		err := fn()
		var ge *GitError
		if err == nil || cleared == 2 || !errors.As(err, &ge) || !lockContention(ge.Stderr) {
			return err
		}
		m := lockPathRE.FindStringSubmatch(ge.Stderr)
		if m == nil || !owned(m[1]) {
			return err
		}
		info, serr := os.Stat(m[1])
		if serr != nil || time.Since(info.ModTime()) < lockRetry || fileInUse(m[1]) {
			return err
		}
		if rerr := os.Remove(m[1]); rerr != nil {
			return err
		}
	}
}

// worktreeLock reports whether lock belongs to worktree alone: a lock in
// its private git directory (index.lock, HEAD.lock), or that of the branch
// checked out in it.
func worktreeLock(ctx context.Context, worktree string) func(lock string) bool {
	return func(lock string) bool {
		gitDir, err := gitDirOf(ctx, worktree)
		if err != nil {
			return false
		}
		if _, err := os.Stat(filepath.Join(gitDir, "commondir")); err != nil {
			return false // the main work tree: the user's, not a run's
		}
		lock = canonical(lock)
		if filepath.Dir(lock) == canonical(gitDir) {
			return true
		}
		ref, common := headRef(gitDir)
		return ref != "" && lock == canonical(filepath.Join(common, filepath.FromSlash(ref))+".lock")
	}
}

// headRef is the branch ref (refs/heads/…) that gitDir's HEAD names, or ""
// when HEAD is detached or unreadable, and the repository's common git
// directory, where branch refs live.
func headRef(gitDir string) (ref, common string) {
	common = gitDir
	if data, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		common = strings.TrimSpace(string(data))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitDir, common)
		}
	}
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", common
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: ")
	if !ok || !strings.HasPrefix(ref, "refs/heads/") || !filepath.IsLocal(filepath.FromSlash(ref)) {
		return "", common
	}
	return ref, common
}
