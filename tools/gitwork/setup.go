package gitwork

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// setupMark is the file in a worktree's private git directory that records
// a finished Setup (a hash of what it was asked to do).
const setupMark = "apserver-setup"

// Setup prepares a fresh worktree: it copies the files of repoRoot that the
// copy patterns match (filepath.Glob patterns relative to repoRoot, such as
// ".env" or "config/*.local.yml"; a matched directory is copied whole)
// into the same place in worktree, then runs command, if any, with bash -c
// in worktree (stdin empty, the process group killed when ctx ends; bound
// it with a ctx deadline). A failing command is an error with its exit
// status and the end of its output.
//
// Files already in the worktree (tracked ones, say) are never overwritten,
// .git is never copied, symbolic links are copied as links, and a pattern
// must stay inside repoRoot. A pattern matching nothing is not an error.
//
// Setup is done once: when it succeeds it leaves a mark in the worktree's
// private git directory, and a repeated Setup with the same copy and
// command returns at once. One that was interrupted copies what is still
// missing and runs the command again, so the command should be safe to
// repeat (an install usually is).
func Setup(ctx context.Context, repoRoot, worktree string, copy []string, command string) error {
	gitDir, err := git(ctx, worktree, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return fmt.Errorf("setting up %s: %w", worktree, err)
	}
	h := sha256.New()
	for _, p := range copy {
		fmt.Fprintf(h, "copy %q\n", p)
	}
	fmt.Fprintf(h, "run %q\n", command)
	sum := hex.EncodeToString(h.Sum(nil))
	mark := filepath.Join(gitDir, setupMark)
	if data, err := os.ReadFile(mark); err == nil && strings.TrimSpace(string(data)) == sum {
		return nil
	}
	for _, pattern := range copy {
		if err := copyPattern(repoRoot, worktree, pattern); err != nil {
			return fmt.Errorf("setting up %s: copying %q: %w", worktree, pattern, err)
		}
	}
	if strings.TrimSpace(command) != "" {
		if err := runSetup(ctx, worktree, command); err != nil {
			return fmt.Errorf("setting up %s: %w", worktree, err)
		}
	}
	if err := os.WriteFile(mark, []byte(sum+"\n"), 0o644); err != nil {
		return fmt.Errorf("setting up %s: %w", worktree, err)
	}
	return nil
}

func copyPattern(root, dst, pattern string) error {
	if filepath.IsAbs(pattern) || !filepath.IsLocal(filepath.FromSlash(pattern)) {
		return errors.New("the pattern must be relative and stay inside the repository")
	}
	matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pattern)))
	if err != nil {
		return err
	}
	for _, m := range matches {
		rel, err := filepath.Rel(root, m)
		if err != nil || !filepath.IsLocal(rel) {
			continue
		}
		err = filepath.WalkDir(m, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Name() == ".git" {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			return copyEntry(p, filepath.Join(dst, rel), d)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// copyEntry copies one file, link or directory (not its contents) from src
// to dst unless dst exists. A file is written under a temporary name and
// renamed, so that an interrupted copy leaves no half file behind.
func copyEntry(src, dst string, d fs.DirEntry) error {
	if _, err := os.Lstat(dst); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	info, err := d.Info()
	if err != nil {
		return err
	}
	switch {
	case d.IsDir():
		return os.MkdirAll(dst, info.Mode().Perm()|0o700)
	case d.Type()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.Symlink(target, dst)
	case !d.Type().IsRegular():
		return nil // sockets, fifos, devices
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".apserver-copy-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(info.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// setupOutputTail is how much of a failed setup command's output its error
// carries.
const setupOutputTail = 2048

func runSetup(ctx context.Context, dir, command string) error {
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir = dir
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "GIT_") || !contains(dropEnv, name) {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	tail := out.Bytes()
	if len(tail) > setupOutputTail {
		tail = tail[len(tail)-setupOutputTail:]
	}
	return fmt.Errorf("setup command %q: %w: %s", command, err, strings.TrimSpace(string(tail)))
}
