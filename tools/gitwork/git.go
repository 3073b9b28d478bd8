package gitwork

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// GitError is a git command that failed: the command as typed (without the
// -c settings every command gets), the directory it ran in, and git's
// trimmed standard error.
type GitError struct {
	Args   []string
	Dir    string
	Stderr string
	Err    error
}

func (e *GitError) Error() string {
	msg := fmt.Sprintf("git %s (in %s): %v", strings.Join(e.Args, " "), e.Dir, e.Err)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return redactURLs(msg)
}

// urlCredentials matches the user info of a URL (scheme://user:secret@),
// which a remote may carry (https://x-access-token:TOKEN@github.com/…) and
// git repeats in its messages; an error that reaches a run's state, a log
// or a pull request must not carry it.
var urlCredentials = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@`)

// redactURLs replaces the user info of every URL in s.
func redactURLs(s string) string { return urlCredentials.ReplaceAllString(s, "${1}***@") }

func (e *GitError) Unwrap() error { return e.Err }

// exitCode is git's exit status, or -1 if err is not a finished git command.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// settings are passed with -c to every git command: no hooks, no signing
// prompts, no pager or colour, and no background maintenance that would
// take locks in the user's repository behind our back.
var settings = []string{
	"core.hooksPath=/dev/null",
	"core.fsmonitor=false",
	"core.pager=cat",
	"commit.gpgSign=false",
	"tag.gpgSign=false",
	"color.ui=false",
	"gc.auto=0",
	"maintenance.auto=false",
	"advice.detachedHead=false",
}

// dropEnv are variables that would point git at another repository, index
// or work tree than the one a command names (set, for example, when
// apserver is started from a git hook), and the locale.
var dropEnv = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE",
	"GIT_PREFIX", "GIT_QUARANTINE_PATH", "GIT_CEILING_DIRECTORIES",
	"GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_REFLOG_ACTION",
	"LANG", "LANGUAGE",
}

func gitEnv(extra []string) []string {
	env := make([]string, 0, len(os.Environ())+8+len(extra))
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "LC_") || contains(dropEnv, name) {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"LC_ALL=C",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_PAGER=cat",
		"PAGER=cat",
		"GIT_EDITOR=true",
		"GIT_MERGE_AUTOEDIT=no",
		// git status and diff must not refresh the user's index.
		"GIT_OPTIONAL_LOCKS=0",
	)
	return append(env, extra...)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// call is one git command.
type call struct {
	dir   string
	args  []string
	env   []string // added to the environment
	stdin []byte
	// config are extra -c settings that are not shown in errors.
	config []string
}

// lockRetry bounds how long a command that found a ref or index locked by
// another git process is retried.
var lockRetry = 3 * time.Second

// onLockRetry, when set by a test, is called each time run is about to
// retry a command that met a lock.
var onLockRetry func(stderr string)

// run runs git and returns its standard output. A command that failed
// because another git process held a lock (a ref update racing with
// another worktree's, or a git orphaned by a killed apserver still
// finishing) is retried with a short backoff for up to lockRetry: git
// takes its locks before it changes anything, so the retry is safe.
func run(ctx context.Context, c call) ([]byte, error) {
	deadline := time.Now().Add(lockRetry)
	wait := 5 * time.Millisecond
	for {
		out, stderr, err := runOnce(ctx, c)
		if err == nil {
			return out, nil
		}
		if ctx.Err() != nil || !lockContention(stderr) || time.Now().After(deadline) {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return out, &GitError{Args: c.args, Dir: c.dir, Stderr: strings.TrimSpace(stderr), Err: err}
		}
		if onLockRetry != nil {
			onLockRetry(stderr)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

func runOnce(ctx context.Context, c call) (stdout []byte, stderr string, err error) {
	args := make([]string, 0, 1+2*(len(settings)+len(c.config))+len(c.args))
	args = append(args, "--no-pager")
	for _, kv := range settings {
		args = append(args, "-c", kv)
	}
	for _, kv := range c.config {
		args = append(args, "-c", kv)
	}
	args = append(args, c.args...)
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = c.dir
	cmd.Env = gitEnv(c.env)
	// SIGTERM lets git remove its lock files.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if c.stdin != nil {
		cmd.Stdin = bytes.NewReader(c.stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.Bytes(), errb.String(), err
}

// lockContention reports whether git failed because a lock file was taken.
func lockContention(stderr string) bool {
	if strings.Contains(stderr, "but expected") {
		return false // a compare-and-swap that lost: retrying cannot help
	}
	return strings.Contains(stderr, "cannot lock ref") ||
		(strings.Contains(stderr, ".lock") && strings.Contains(stderr, "File exists"))
}

// git runs git in dir and returns its trimmed standard output.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := run(ctx, call{dir: dir, args: args})
	return strings.TrimSpace(string(out)), err
}
