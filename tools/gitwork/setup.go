package gitwork

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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
// it with a ctx deadline) and the environment env: the caller's to choose,
// without what the command must not see (apserver's secrets), and never
// more than env, whatever the process's own environment holds; the GIT_*
// variables that would point git at another repository are dropped. A
// failing command is an error with its exit status and the end of its
// output.
//
// Files already in the worktree (tracked ones, say) are never overwritten,
// .git is never copied, symbolic links are copied as links, and a pattern
// must stay inside repoRoot. A match that a symbolic link on its way takes
// out of repoRoot is an error, and no copy writes through a link out of
// worktree. A pattern matching nothing is not an error.
//
// What Setup leaves in the worktree that .gitignore does not ignore (a
// copied .env, say, or what the command made) is recorded in the
// worktree's private git directory and kept out of Commit and Diff.
//
// Setup is done once: when it succeeds it leaves a mark in the worktree's
// private git directory, and a repeated Setup with the same copy and
// command returns at once. One that was interrupted copies what is still
// missing and runs the command again, so the command should be safe to
// repeat (an install usually is); a command that a killed apserver left
// running is killed first (found by the token in its environment and its
// process group, both recorded while it runs: setupPIDFile).
func Setup(ctx context.Context, repoRoot, worktree string, copy []string, command string, env []string) error {
	for _, pattern := range copy {
		if err := checkPattern(pattern); err != nil {
			return fmt.Errorf("setting up %s: copy pattern %q: %w", worktree, pattern, err)
		}
	}
	gitDir, err := gitDirOf(ctx, worktree)
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
	if err := killOrphanSetup(ctx, gitDir, worktree); err != nil {
		return fmt.Errorf("setting up %s: %w", worktree, err)
	}
	if strings.TrimSpace(command) != "" {
		if err := runSetup(ctx, worktree, gitDir, command, env); err != nil {
			return fmt.Errorf("setting up %s: %w", worktree, err)
		}
	}
	if err := recordSetupFiles(ctx, worktree, gitDir); err != nil {
		return fmt.Errorf("setting up %s: %w", worktree, err)
	}
	if err := os.WriteFile(mark, []byte(sum+"\n"), 0o644); err != nil {
		return fmt.Errorf("setting up %s: %w", worktree, err)
	}
	return nil
}

func checkPattern(pattern string) error {
	if filepath.IsAbs(pattern) || !filepath.IsLocal(filepath.FromSlash(pattern)) {
		return errors.New("the pattern must be relative and stay inside the repository")
	}
	_, err := filepath.Match(pattern, "")
	return err
}

// copyPattern copies what pattern matches in root to dst. Everything is
// read through an os.Root of the repository, so a path that leads out of
// it through a symbolic link (a directory of the checkout that a command
// replaced with a link to ~/.ssh, say) is an error naming the path, never
// a copy of what is out there into the worktree, where the model could
// read it; links that stay inside are followed.
func copyPattern(root, dst, pattern string) error {
	repo, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer repo.Close()
	wt, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer wt.Close()
	matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pattern)))
	if err != nil {
		return err
	}
	for _, m := range matches {
		rel, err := filepath.Rel(root, m)
		if err != nil || !filepath.IsLocal(rel) || slices.Contains(strings.Split(filepath.ToSlash(rel), "/"), ".git") {
			continue
		}
		if _, err := repo.Lstat(rel); err != nil {
			if _, lerr := os.Lstat(m); lerr == nil {
				return fmt.Errorf("%s is outside the repository: a symbolic link on its way leads out (%w)", filepath.ToSlash(rel), err)
			}
			return err
		}
		err = fs.WalkDir(noFollowRoot{repo}, filepath.ToSlash(rel), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Name() == ".git" {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			return copyEntry(repo, wt, filepath.FromSlash(p), d)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// noFollowRoot is the repository as an fs.FS for fs.WalkDir whose Stat does
// not follow a symbolic link at the end of the path: a matched link is
// copied as a link, not walked. (fs.ReadDir lists a directory through
// Open, sorted.)
type noFollowRoot struct{ r *os.Root }

func (n noFollowRoot) Open(name string) (fs.File, error) { return n.r.Open(filepath.FromSlash(name)) }
func (n noFollowRoot) Stat(name string) (fs.FileInfo, error) {
	return n.r.Lstat(filepath.FromSlash(name))
}

// copiedFile lists, in a worktree's private git directory, the untracked
// paths that .gitignore does not ignore and that Setup left in the
// worktree (copied, or made by the command), NUL-terminated, directories
// whole. Commit and Diff leave them out, so that a copied .env never
// reaches a commit, or a diff shown to a model.
const copiedFile = "apserver-setup-copied"

func recordSetupFiles(ctx context.Context, worktree, gitDir string) error {
	out, err := run(ctx, call{dir: worktree, args: []string{"ls-files", "-z", "--others", "--exclude-standard", "--directory", "--", ":/"}})
	if err != nil {
		return fmt.Errorf("listing untracked files: %w", err)
	}
	var b strings.Builder
	for _, p := range strings.Split(string(out), "\x00") {
		if p = strings.TrimSuffix(p, "/"); p != "" {
			b.WriteString(p)
			b.WriteByte(0)
		}
	}
	return writeAtomic(filepath.Join(gitDir, copiedFile), []byte(b.String()))
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// gitDirOf is worktree's own git directory, read from its .git without
// running git.
func gitDirOf(ctx context.Context, worktree string) (string, error) {
	dotGit := filepath.Join(worktree, ".git")
	info, err := os.Lstat(dotGit)
	if err == nil && info.IsDir() {
		return dotGit, nil
	}
	if err == nil && info.Mode().IsRegular() {
		data, err := os.ReadFile(dotGit)
		if err == nil {
			if dir, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: "); ok {
				if !filepath.IsAbs(dir) {
					dir = filepath.Join(worktree, dir)
				}
				return dir, nil
			}
		}
	}
	return git(ctx, worktree, "rev-parse", "--absolute-git-dir")
}

// setupExcludes are the pathspecs that leave out what Setup copied into
// worktree.
func setupExcludes(ctx context.Context, worktree string) ([]string, error) {
	gitDir, err := gitDirOf(ctx, worktree)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(gitDir, copiedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var specs []string
	for _, p := range strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00") {
		if p != "" {
			specs = append(specs, ":(exclude,top,literal)"+p)
		}
	}
	return specs, nil
}

// addAllArgs is git add of everything in the worktree but what Setup
// copied.
func addAllArgs(ctx context.Context, worktree string) ([]string, error) {
	excl, err := setupExcludes(ctx, worktree)
	if err != nil {
		return nil, fmt.Errorf("reading what setup copied: %w", err)
	}
	if len(excl) == 0 {
		return []string{"add", "--all"}, nil
	}
	return append([]string{"add", "--all", "--", ":/"}, excl...), nil
}

// copyEntry copies one file, link or directory (not its contents) at rel
// from repo to the same place in wt unless it exists there. Both are
// os.Roots: a link in the worktree (a tracked one, say) cannot send the
// copy out of it either. A file is written to rel.apserver-copy and
// renamed, so that an interrupted copy leaves no half file behind.
func copyEntry(repo, wt *os.Root, rel string, d fs.DirEntry) error {
	if _, err := wt.Lstat(rel); err == nil {
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
		return wt.MkdirAll(rel, info.Mode().Perm()|0o700)
	case d.Type()&fs.ModeSymlink != 0:
		target, err := repo.Readlink(rel)
		if err != nil {
			return err
		}
		if err := wt.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
			return err
		}
		return wt.Symlink(target, rel)
	case !d.Type().IsRegular():
		return nil // sockets, fifos, devices
	}
	if err := wt.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
		return err
	}
	in, err := repo.Open(rel)
	if err != nil {
		return err
	}
	defer in.Close()
	// A fixed name: the copy that follows a kill reuses the temporary file
	// the killed one left behind, so none stays.
	tmpName := rel + ".apserver-copy"
	tmp, err := wt.OpenFile(tmpName, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer wt.Remove(tmpName)
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
	return wt.Rename(tmpName, rel)
}

// setupOutputTail is how much of a failed setup command's output its error
// carries.
const setupOutputTail = 2048

// setupPIDFile, in the worktree's private git directory, is written before
// the setup command starts and removed when it ends. It holds a token that
// the command and everything it starts carry in their environment
// (setupEnv), and, once the command has started, its process group. After
// a kill of apserver, at any moment, the next Setup finds what the killed
// one left running by either and stops it.
const setupPIDFile = "apserver-setup.pid"

// testHookSetupStarted, set by tests, runs between the setup command's
// start and the recording of its process group.
var testHookSetupStarted func()

// setupEnv names the environment variable that carries a setup command's
// token.
const setupEnv = "APSERVER_SETUP_ID"

func runSetup(ctx context.Context, dir, gitDir, command string, env []string) error {
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir = dir
	cmdEnv := make([]string, 0, len(env)+1)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "GIT_") || !contains(dropEnv, name) {
			cmdEnv = append(cmdEnv, kv)
		}
	}
	var raw [16]byte
	rand.Read(raw[:])
	token := hex.EncodeToString(raw[:])
	cmd.Env = append(cmdEnv, setupEnv+"="+token)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// The token is on disk before the command starts: a kill between the
	// start and the second write still leaves a way to find the command.
	pidFile := filepath.Join(gitDir, setupPIDFile)
	if err := writeAtomic(pidFile, []byte("token "+token+"\n")); err != nil {
		return fmt.Errorf("setup command %q: %w", command, err)
	}
	if err := cmd.Start(); err != nil {
		os.Remove(pidFile)
		return fmt.Errorf("setup command %q: %w", command, err)
	}
	if testHookSetupStarted != nil {
		testHookSetupStarted()
	}
	if err := writeAtomic(pidFile, []byte("token "+token+"\npgid "+strconv.Itoa(cmd.Process.Pid)+"\n")); err != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		os.Remove(pidFile)
		return err
	}
	err := cmd.Wait()
	os.Remove(pidFile)
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

// killOrphanSetup stops a setup command that a killed apserver left
// running in worktree, with everything it started: the processes that
// carry its token (setupPIDFile) in their environment, with their process
// groups, and the recorded process group if one of its processes still
// works inside the worktree. It waits until they are gone.
func killOrphanSetup(ctx context.Context, gitDir, worktree string) error {
	pidFile := filepath.Join(gitDir, setupPIDFile)
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return nil
	}
	var token string
	pgid := 0
	for _, line := range strings.Split(string(data), "\n") {
		switch key, value, _ := strings.Cut(strings.TrimSpace(line), " "); key {
		case "token":
			token = value
		case "pgid":
			pgid, _ = strconv.Atoi(value)
		default:
			if n, err := strconv.Atoi(key); err == nil && value == "" {
				pgid = n // written by an older apserver: the group alone
			}
		}
	}
	// A process that carries the token but moved into apserver's own group
	// is killed alone, never with that group.
	own := syscall.Getpgrp()
	left := func() (groups, procs []int) {
		if token != "" {
			procs = withEnv(setupEnv + "=" + token)
			for _, pid := range procs {
				if g := processGroup(pid); g > 1 && g != own && !slices.Contains(groups, g) {
					groups = append(groups, g)
				}
			}
		}
		if pgid > 1 && pgid != own && !slices.Contains(groups, pgid) && len(groupMembers(pgid, worktree)) > 0 {
			groups = append(groups, pgid)
		}
		return groups, procs
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		groups, procs := left()
		if len(groups) == 0 && len(procs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the setup command left running by a killed apserver (process groups %v) does not end", groups)
		}
		for _, g := range groups {
			syscall.Kill(-g, syscall.SIGKILL)
		}
		for _, pid := range procs {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if err := pause(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
	return os.Remove(pidFile)
}
