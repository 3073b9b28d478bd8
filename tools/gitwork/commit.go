package gitwork

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
// Setup copied, stays out) and commits it with message followed by a
// paragraph of the trailers, and returns the commit's SHA. A commit with no
// change is still made, so that every task has its commit.
//
// The trailers identify the commit: if a commit among the FindDepth newest
// reachable from HEAD already carries all of them (a replay after a crash
// that committed but did not record it), Commit returns its SHA and
// changes nothing, the work tree included. A task that commits more than
// once must therefore add a trailer that tells its commits apart.
//
// Hooks do not run, signing is off, and when the user's configuration has
// no user.name or user.email, "apserver <apserver@localhost>" fills in.
// The first Commit of a process in a worktree waits for gits that a killed
// apserver left running there, and removes the worktree's own locks they
// left behind.
func Commit(ctx context.Context, worktree, message string, trailers []Trailer) (string, error) {
	if err := checkTrailers(trailers); err != nil {
		return "", fmt.Errorf("committing in %s: %w", worktree, err)
	}
	msg := strings.TrimRight(message, "\n\t ")
	if msg == "" {
		msg = "apserver commit"
	}
	if len(trailers) > 0 {
		msg += "\n" // the trailers are the last paragraph
		for _, t := range trailers {
			msg += "\n" + t.String()
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
// untracked files included (ignored ones, and what Setup copied, not). It
// reads the work tree through a temporary index and leaves the worktree's
// own index alone.
func Diff(ctx context.Context, worktree, fromRef string) (string, error) {
	from, err := resolve(ctx, worktree, fromRef)
	if err != nil {
		return "", fmt.Errorf("diff in %s: %w", worktree, err)
	}
	gitDir, err := gitDirOf(ctx, worktree)
	if err != nil {
		return "", fmt.Errorf("diff in %s: %w", worktree, err)
	}
	indexPath := filepath.Join(gitDir, "index")
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
