package checkpoint

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// gitConfig is passed with -c to every git command, so that the store behaves
// the same whatever its config file says.
var gitConfig = []string{
	"core.autocrlf=false",
	"core.fileMode=true",
	"core.symlinks=true",
	"core.ignoreCase=false",
	"core.excludesFile=/dev/null",
	"core.attributesFile=/dev/null",
	"core.hooksPath=/dev/null",
	"core.fsmonitor=false",
	"core.logAllRefUpdates=false",
	"commit.gpgSign=false",
	"gc.auto=0",
}

// gitEnv is the environment of every git command but GIT_DIR, GIT_WORK_TREE
// and GIT_INDEX_FILE: the process environment without any GIT_* or locale
// variable, plus fixed settings.
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_NO_REPLACE_OBJECTS=1",
		"LC_ALL=C",
		"GIT_AUTHOR_NAME=apserver",
		"GIT_AUTHOR_EMAIL=apserver@localhost",
		"GIT_COMMITTER_NAME=apserver",
		"GIT_COMMITTER_EMAIL=apserver@localhost",
	)
}

// gitCall describes one git command run against the store.
type gitCall struct {
	// workTree is GIT_WORK_TREE and the command's directory; empty means no
	// work tree and the store's parent directory.
	workTree string
	// index is GIT_INDEX_FILE; empty means the index file in gitDir.
	index string
	stdin []byte
	// gitDir is GIT_DIR; empty means the store.
	gitDir string
}

// run runs git with args as described by c and returns its standard output.
// A cancelled ctx stops git with SIGTERM, which lets it remove its lock files.
func (s *Store) run(ctx context.Context, c gitCall, args ...string) ([]byte, error) {
	full := make([]string, 0, 2*len(gitConfig)+len(args))
	for _, kv := range gitConfig {
		full = append(full, "-c", kv)
	}
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, s.gitPath, full...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = append([]string(nil), s.env...)
	gitDir, index := c.gitDir, c.index
	if gitDir == "" {
		gitDir = s.dir
	}
	if index == "" {
		index = filepath.Join(gitDir, "index")
	}
	cmd.Env = append(cmd.Env, "GIT_DIR="+gitDir, "GIT_INDEX_FILE="+index)
	if c.workTree != "" {
		cmd.Env = append(cmd.Env, "GIT_WORK_TREE="+c.workTree)
		cmd.Dir = c.workTree
	} else {
		cmd.Dir = s.root
	}
	if c.stdin != nil {
		cmd.Stdin = bytes.NewReader(c.stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("git %s: %w", args[0], ctx.Err())
		}
		return nil, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// inStore runs git on the store with the workspace as work tree.
func (s *Store) inStore(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	return s.run(ctx, gitCall{workTree: s.workspace, stdin: stdin}, args...)
}

// splitZ splits NUL-terminated git output.
func splitZ(out []byte) []string {
	if len(out) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// joinZ is the NUL-terminated form of paths, for git's -z --stdin.
func joinZ(paths []string) []byte {
	var b bytes.Buffer
	for _, p := range paths {
		b.WriteString(p)
		b.WriteByte(0)
	}
	return b.Bytes()
}
