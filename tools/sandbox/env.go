package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// What apserver keeps to itself
//
// A command, sandboxed or not, must not get apserver's secrets: the keys
// of the model providers (a prompt-injected model could put them into a
// file, a commit or a pull request), and the files of its data
// directory (the store with every transcript, the WebSocket token).
//
//   - Environment: a command started with apserver's own environment
//     (Command with env nil, and Environ for callers that add to it) gets
//     it without the variables HideEnv named and without any whose name
//     looks like a secret's (secretWords), as Codex's default shell
//     environment policy does. The user may pass some of the latter on
//     (PassEnv: a registry token that an install needs, say), never the
//     former.
//   - The helper, which stays as the init of a sandboxed command's pid
//     namespace and so is visible to it, gets no environment at all (the
//     command's comes through a memfd) and is not dumpable, so its
//     /proc/<pid>/environ, mem, fd, maps and the like are closed to the
//     command, which runs without CAP_SYS_PTRACE.
//   - Directories Conceal named (apserver's data dir) look empty in the
//     sandbox; workspaces beneath them (a run's worktree) are mounted back.

// secretWords mark a variable as a secret when its name holds one of them,
// in any case.
var secretWords = []string{"KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL"}

// private is what HideEnv, PassEnv and Conceal registered.
var private struct {
	mu   sync.Mutex
	env  map[string]bool
	pass map[string]bool
	dirs []string
}

// HideEnv names environment variables that hold apserver's secrets (each
// provider's api_key_env): commands started with apserver's environment
// do not get them. Empty names are ignored.
func HideEnv(names ...string) {
	private.mu.Lock()
	defer private.mu.Unlock()
	if private.env == nil {
		private.env = map[string]bool{}
	}
	for _, n := range names {
		if n != "" {
			private.env[n] = true
		}
	}
}

// PassEnv names variables that commands get from apserver's environment
// although their names look like secrets (the user's
// sandbox_settings.pass_env: NPM_TOKEN for a private registry, say). A
// name HideEnv registered, before or after, is never passed. Empty names
// are ignored.
func PassEnv(names ...string) {
	private.mu.Lock()
	defer private.mu.Unlock()
	if private.pass == nil {
		private.pass = map[string]bool{}
	}
	for _, n := range names {
		if n != "" {
			private.pass[n] = true
		}
	}
}

// SecretEnv reports whether the variable name is one a command does not
// get from apserver's environment: named by HideEnv, or holding one of
// KEY, SECRET, TOKEN, PASSWORD, PASSWD, CREDENTIAL in any case and not
// named by PassEnv.
func SecretEnv(name string) bool {
	private.mu.Lock()
	hidden, passed := private.env[name], private.pass[name]
	private.mu.Unlock()
	if hidden {
		return true
	}
	up := strings.ToUpper(name)
	for _, w := range secretWords {
		if strings.Contains(up, w) {
			return !passed
		}
	}
	return false
}

// Environ returns apserver's environment without its secrets (see
// SecretEnv): what a command gets when its caller passes no environment.
func Environ() []string { return ScrubEnv(os.Environ()) }

// ScrubEnv returns env without the variables SecretEnv names.
func ScrubEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !SecretEnv(k) {
			out = append(out, kv)
		}
	}
	return out
}

// Conceal names directories that are apserver's own (its data dir, with
// the store and the WebSocket token): a sandboxed command sees each as an
// empty directory, whatever its readable roots grant, except for the
// writable and readable roots beneath it (a run's worktree), which are
// mounted back. Relative and missing paths are ignored.
func Conceal(dirs ...string) {
	private.mu.Lock()
	defer private.mu.Unlock()
	for _, d := range dirs {
		if filepath.IsAbs(d) && !slices.Contains(private.dirs, filepath.Clean(d)) {
			private.dirs = append(private.dirs, filepath.Clean(d))
		}
	}
}

// concealed returns the existing directories Conceal named, symlinks
// resolved.
func concealed() []string {
	private.mu.Lock()
	dirs := slices.Clone(private.dirs)
	private.mu.Unlock()
	var out []string
	for _, d := range dirs {
		real, err := filepath.EvalSymlinks(d)
		if err != nil || real == "/" {
			continue
		}
		if fi, err := os.Stat(real); err == nil && fi.IsDir() && !slices.Contains(out, real) {
			out = append(out, real)
		}
	}
	return out
}

// envFileName names the memfd that carries a command's environment to the
// helper (its fd 3); Start closes apserver's copy once the helper runs.
const envFileName = "apserver-sandbox-env"

// envFile returns a memfd holding env, NUL-separated, read from the start.
func envFile(env []string) (*os.File, error) {
	fd, err := unix.MemfdCreate(envFileName, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("sandbox: environment for the command: %w", err)
	}
	f := os.NewFile(uintptr(fd), envFileName)
	var b bytes.Buffer
	for _, kv := range env {
		b.WriteString(kv)
		b.WriteByte(0)
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: environment for the command: %w", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: environment for the command: %w", err)
	}
	return f, nil
}

// readEnvFile reads the environment the helper got on fd 3, and closes it.
func readEnvFile() ([]string, error) {
	f := os.NewFile(3, envFileName)
	defer f.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(f); err != nil {
		return nil, fmt.Errorf("reading the command's environment: %w", err)
	}
	var env []string
	for kv := range bytes.SplitSeq(b.Bytes(), []byte{0}) {
		if len(kv) > 0 {
			env = append(env, string(kv))
		}
	}
	return env, nil
}
