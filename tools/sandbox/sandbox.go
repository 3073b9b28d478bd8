package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// Mode is how far a command is confined. The values are the wire names of
// the thread-level sandbox modes.
type Mode string

const (
	// ReadOnly lets a command read the system, the workspace and the
	// configured roots, and write nowhere.
	ReadOnly Mode = "read-only"
	// WorkspaceWrite is ReadOnly plus writing under Policy.WritableRoots
	// (and /tmp and $TMPDIR with Policy.AllowTmp).
	WorkspaceWrite Mode = "workspace-write"
	// FullAccess runs the command unconfined.
	FullAccess Mode = "danger-full-access"
)

// Policy is what a sandboxed command may do.
type Policy struct {
	Mode Mode
	// WritableRoots are the directories a workspace-write command may
	// write under: the thread's cwd plus extra roots. In read-only mode
	// they are only readable. Paths must be absolute; missing ones are
	// skipped.
	WritableRoots []string
	// ReadableRoots are readable directories on top of the defaults (see
	// the package documentation).
	ReadableRoots []string
	// Network lets the command use the network. Without it the command
	// runs in a network namespace of its own that has only a loopback
	// interface, which is down.
	Network bool
	// AllowTmp makes /tmp and the command's $TMPDIR writable in
	// workspace-write mode, as Codex does. It is ignored in read-only mode.
	// The /tmp a command sees is then a directory private to this user's
	// sandboxed commands (see PrivateTmp), not the host's /tmp, whose
	// unix sockets (ssh-agent, X11) would be an escape.
	AllowTmp bool
	// WritableGit leaves .git in the writable roots writable. Without it a
	// workspace-write command cannot change .git (hooks, config), which
	// the user's own git would run outside any sandbox. apserver itself
	// commits with git outside the sandbox, so it never sets this; it is
	// for callers that want sandboxed commands to commit.
	WritableGit bool
}

// Support is what the running kernel offers for sandboxing.
type Support struct {
	// LandlockABI is the kernel's Landlock ABI version, 0 if Landlock is
	// unavailable (too old a kernel, or not enabled at boot).
	LandlockABI int
	// UserNS reports that this process can start a child in new user,
	// mount and network namespaces, as sandboxed commands are.
	UserNS bool
	// Err says why UserNS is false; nil when it is true.
	Err error
}

// minLandlockABI is the oldest Landlock ABI the sandbox accepts: ABI 3
// (Linux 6.2) is the first to stop truncate(2) outside the writable
// roots, and ABI 6 (Linux 6.12) the first that keeps signals and abstract
// unix sockets inside the sandbox.
const minLandlockABI = 6

var probeOnce = sync.OnceValue(probe)

// Probe reports what the kernel offers. It checks once, by asking the
// kernel for the Landlock ABI and by starting this executable in the
// namespaces a sandboxed command gets, and caches the result. It never
// panics.
func Probe() Support { return probeOnce() }

func probe() Support {
	err := probeNamespaces()
	return Support{LandlockABI: landlockABI(), UserNS: err == nil, Err: err}
}

// probeNamespaces runs the helper with no command: it sets up the
// namespaces and the read-only mount tree and exits.
func probeNamespaces() error {
	arg, err := json.Marshal(plan{})
	if err != nil {
		return err
	}
	cmd := helperCmd(context.Background(), arg, nil, true)
	cmd.Dir = "/"
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(out.String()); msg != "" {
			return fmt.Errorf("starting a process in new user, mount and network namespaces: %w (%s)", err, msg)
		}
		return fmt.Errorf("starting a process in new user, mount and network namespaces: %w", err)
	}
	return nil
}

// Enforceable returns nil if p can be enforced with s, else an error that
// says what is missing. FullAccess is always enforceable.
func (s Support) Enforceable(p Policy) error {
	switch p.Mode {
	case FullAccess:
		return nil
	case ReadOnly, WorkspaceWrite:
	default:
		return fmt.Errorf("sandbox: unknown mode %q", p.Mode)
	}
	switch {
	case s.LandlockABI == 0:
		return errors.New("sandbox: Landlock is not available (kernel too old or disabled)")
	case s.LandlockABI < minLandlockABI:
		return fmt.Errorf("sandbox: Landlock ABI %d is too old: ABI %d (Linux 6.12) is needed to keep signals and abstract unix sockets inside the sandbox", s.LandlockABI, minLandlockABI)
	case !s.UserNS:
		return fmt.Errorf("sandbox: unprivileged user namespaces are not available: %v", s.Err)
	}
	return nil
}

// Command returns a Cmd that runs `shell -c script` in dir with env (nil
// means apserver's environment without its secrets: Environ) under p. The Cmd leads a process group
// of its own (Setpgid), and canceling ctx kills that group. The caller
// sets Stdin, Stdout and Stderr; dir and shell must be absolute.
//
// For FullAccess the Cmd runs the shell directly. Otherwise it re-executes
// this binary as a helper that confines itself, starts the shell and stays
// as the init of the command's pid namespace; the Cmd's pid is the
// helper's, and the shell is in its process group. Either way the Cmd has
// Pdeathsig set to SIGKILL: start it with Start, so that it fires when
// apserver dies and only then. The policy follows env: its
// HOME decides the per-user toolchain directories, its TMPDIR what
// AllowTmp opens, and its PATH where GOROOT is. If the kernel cannot
// enforce p (see Support.Enforceable), Command returns that error; it
// never falls back to running unconfined.
func Command(ctx context.Context, p Policy, dir string, env []string, shell, script string) (*exec.Cmd, error) {
	if !filepath.IsAbs(shell) {
		return nil, fmt.Errorf("sandbox: shell %q is not an absolute path", shell)
	}
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("sandbox: working directory %q is not an absolute path", dir)
	}
	if p.Mode == FullAccess {
		cmd := exec.CommandContext(ctx, shell, "-c", script)
		cmd.Args[0] = filepath.Base(shell)
		if env == nil {
			env = Environ()
		}
		// The mark lets the watchdog find what left the command's process
		// group (setsid, daemons) once apserver is gone.
		cmd.Dir, cmd.Env = dir, append(slices.Clip(env), markEnv())
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		cmd.Cancel = killGroup(cmd)
		return cmd, nil
	}
	if err := Probe().Enforceable(p); err != nil {
		return nil, err
	}
	if env == nil {
		env = Environ()
	}
	pl, err := newPlan(p, dir, env)
	if err != nil {
		return nil, err
	}
	pl.EnvFD = true
	arg, err := json.Marshal(pl)
	if err != nil {
		return nil, fmt.Errorf("sandbox: encoding policy: %w", err)
	}
	// The helper stays as the command's pid 1, in its view: it keeps no
	// environment, and gets the command's through a memfd rather than its
	// argv, which every user of the host can read.
	ef, err := envFile(env)
	if err != nil {
		return nil, err
	}
	cmd := helperCmd(ctx, arg, []string{shell, "-c", script}, !p.Network)
	cmd.Dir = dir
	cmd.ExtraFiles = []*os.File{ef}
	return cmd, nil
}

// helperArg is the helper's argv[1]: `<this binary> helperArg <plan JSON>
// -- <path> <args>...` confines itself to the plan and execs path with
// args (argv[0] is path's base name). With nothing after "--" it exits 0
// once confined; Probe uses that.
const helperArg = "-apserver-sandbox-exec"

// helperCmd returns the Cmd that re-executes this binary as the helper in
// new user, mount and pid namespaces, and a new network namespace if
// noNet. The helper is the pid namespace's init: when it dies, the kernel
// kills every process the command started, wherever it went. It gets
// SIGKILL when apserver dies (Pdeathsig; see Start for why that needs a
// thread that never exits).
func helperCmd(ctx context.Context, planJSON []byte, argv []string, noNet bool) *exec.Cmd {
	args := append([]string{helperArg, string(planJSON), "--"}, argv...)
	// /proc/self/exe rather than os.Executable: it is this very binary
	// even if the file on disk has been replaced since it started.
	cmd := exec.CommandContext(ctx, "/proc/self/exe", args...)
	cmd.Args[0] = os.Args[0]
	cmd.Env = []string{} // not nil: nothing of apserver's
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID)
	if noNet {
		flags |= syscall.CLONE_NEWNET
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:     true,
		Pdeathsig:   syscall.SIGKILL,
		Cloneflags:  flags,
		UidMappings: idMap(os.Getuid()),
		GidMappings: idMap(os.Getgid()),
	}
	cmd.Cancel = killGroup(cmd)
	return cmd
}

// idMap maps id to itself. Root maps every id to itself, so that it keeps
// its usual standing towards files it does not own (a workspace owned by
// another user stays writable); the sandbox's boundary is Landlock and
// the read-only mount tree, not file ownership.
func idMap(id int) []syscall.SysProcIDMap {
	if id == 0 {
		return []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
	}
	return []syscall.SysProcIDMap{{ContainerID: id, HostID: id, Size: 1}}
}

func killGroup(cmd *exec.Cmd) func() error {
	return func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// plan is the confinement the helper applies, computed by Command.
type plan struct {
	// Writable are the paths that stay writable when the helper makes the
	// rest of the mount tree read-only.
	Writable []string `json:"writable,omitempty"`
	// Rules are the Landlock filesystem rules; the ruleset also scopes
	// signals and abstract unix sockets.
	Rules []pathRule `json:"rules,omitempty"`
	// NoNetwork makes the ruleset deny TCP bind and connect.
	NoNetwork bool `json:"noNetwork,omitempty"`
	// Masks are directories hidden under an empty tmpfs, because pathname
	// unix sockets live there (see the package doc). What the rules and
	// Writable grant beneath them is mounted back.
	Masks []string `json:"masks,omitempty"`
	// Keep are files beneath Masks that stay visible (read-only), such as
	// the target of a symlinked /etc/resolv.conf.
	Keep []string `json:"keep,omitempty"`
	// Tmp is the host directory mounted writable on /tmp (AllowTmp).
	Tmp string `json:"tmp,omitempty"`
	// Overlays are readable roots shown through a read-only overlayfs:
	// the overlay's inodes are not the sockets', so no pathname socket
	// beneath them can be connected to.
	Overlays []string `json:"overlays,omitempty"`
	// Protect are the writable roots whose .git and .apserver stay
	// read-only; ProtectGit false leaves .git writable (WritableGit).
	Protect    []string `json:"protect,omitempty"`
	ProtectGit bool     `json:"protectGit,omitempty"`
	// NoUnixSockets makes a seccomp filter refuse socket(AF_UNIX, ...);
	// socketpair(2) keeps working.
	NoUnixSockets bool `json:"noUnixSockets,omitempty"`
	// Hide are directories apserver keeps to itself (Conceal), shown
	// empty; what Rules and Writable grant beneath them is mounted back.
	Hide []string `json:"hide,omitempty"`
	// EnvFD says the command's environment is on fd 3 (envFile).
	EnvFD bool `json:"envFD,omitempty"`
}

// pathRule grants Access (Landlock filesystem rights) beneath Path.
type pathRule struct {
	Path   string `json:"path"`
	Access uint64 `json:"access"`
}

// systemDirs are readable when they exist; /var is handled by varDirs.
var systemDirs = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/etc", "/opt", "/run", "/srv", "/nix", "/proc", "/sys",
}

// homeToolDirs are the per-user toolchain directories under $HOME that
// are readable when they exist. $HOME itself is not.
var homeToolDirs = []string{"go", ".cache", ".cargo", ".rustup", ".npm", ".local", ".nvm", ".pyenv"}

// newPlan computes the mounts and Landlock rules for p.
func newPlan(p Policy, dir string, env []string) (plan, error) {
	pl := plan{NoNetwork: !p.Network}
	grant := func(access uint64, paths ...string) {
		for _, path := range paths {
			pl.Rules = append(pl.Rules, pathRule{Path: path, Access: access})
		}
	}
	grant(fsRead, systemDirs...)
	grant(fsRead, varDirs()...)
	if home := envValue(env, "HOME"); filepath.IsAbs(home) {
		for _, d := range homeToolDirs {
			grant(fsRead, filepath.Join(home, d))
		}
	}
	if goroot := findGoroot(envValue(env, "PATH")); goroot != "" {
		grant(fsRead, goroot)
	}
	grant(accessDevDir, "/dev")
	grant(accessDevRW, "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
	grant(accessTTY, "/dev/tty", "/dev/ptmx")
	grant(accessTTY|accessDevDir, "/dev/pts")

	readable := append([]string{dir}, p.ReadableRoots...)
	var writable, tmpRoots []string
	if p.Mode == WorkspaceWrite {
		writable = slices.Clone(p.WritableRoots)
		if p.AllowTmp {
			tmp, err := PrivateTmp()
			if err != nil {
				return plan{}, err
			}
			pl.Tmp = tmp
			tmpRoots = append(tmpRoots, "/tmp")
			if tmp := envValue(env, "TMPDIR"); filepath.IsAbs(tmp) {
				tmpRoots = append(tmpRoots, tmp)
			}
			writable = append(writable, tmpRoots...)
		}
	} else {
		readable = append(readable, p.WritableRoots...)
		pl.NoUnixSockets = true
	}
	for _, r := range readable {
		if !filepath.IsAbs(r) {
			return plan{}, fmt.Errorf("sandbox: readable root %q is not an absolute path", r)
		}
	}
	grant(fsRead, readable...)
	for _, w := range writable {
		if !filepath.IsAbs(w) {
			return plan{}, fmt.Errorf("sandbox: writable root %q is not an absolute path", w)
		}
		real, err := filepath.EvalSymlinks(w)
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			return plan{}, fmt.Errorf("sandbox: writable root: %w", err)
		}
		pl.Writable = append(pl.Writable, real)
	}
	// Parents before children, so a nested root's bind mount lands on its
	// parent's.
	slices.SortFunc(pl.Writable, func(a, b string) int { return len(a) - len(b) })
	pl.Writable = slices.Compact(pl.Writable)
	grant(fsRead|fsWrite, pl.Writable...)

	pl.Masks = socketDirs(env)
	for _, h := range concealed() {
		// A root that is itself the concealed directory is the user's
		// choice to work there.
		if !slices.ContainsFunc(pl.Rules, func(r pathRule) bool { return r.Path == h }) && !slices.Contains(pl.Writable, h) {
			pl.Hide = append(pl.Hide, h)
		}
	}
	for _, f := range keepFiles {
		if real, err := filepath.EvalSymlinks(f); err == nil && real != f && underAny(real, pl.Masks) {
			pl.Keep = append(pl.Keep, real)
		}
	}
	if p.Mode == WorkspaceWrite {
		for _, w := range p.WritableRoots {
			if real, err := filepath.EvalSymlinks(w); err == nil && !slices.Contains(pl.Protect, real) {
				pl.Protect = append(pl.Protect, real)
			}
		}
		pl.ProtectGit = !p.WritableGit
		// In read-only mode the seccomp filter covers every pathname
		// socket; here sockets inside the writable roots must work, so
		// the readable directories that are the user's own (rather than
		// the system's) are shown through an overlay.
		over := readable
		if home := envValue(env, "HOME"); filepath.IsAbs(home) {
			for _, d := range homeToolDirs {
				over = append(over, filepath.Join(home, d))
			}
		}
		for _, r := range over {
			real, err := filepath.EvalSymlinks(r)
			if err != nil || strings.ContainsAny(real, ",:\\") || real == "/" || underAny(real, pl.Writable) {
				continue
			}
			if fi, err := os.Stat(real); err == nil && fi.IsDir() && !slices.Contains(pl.Overlays, real) {
				pl.Overlays = append(pl.Overlays, real)
			}
		}
		slices.SortFunc(pl.Overlays, func(a, b string) int { return len(a) - len(b) })
	}
	return pl, nil
}

// keepFiles are files that may be symlinks into a masked directory (most
// often /run) and that commands need to read.
var keepFiles = []string{"/etc/resolv.conf", "/etc/hosts", "/etc/hostname", "/etc/localtime", "/etc/machine-id"}

// socketDirs are the directories hidden under an empty tmpfs in the
// sandbox: where daemons and sessions put their unix sockets (Docker,
// D-Bus, systemd, ssh-agent, X11, tmux, user services) and which other
// users share, and $HOME (gpg-agent, rootless Docker, editors' IPC): Landlock
// keeps $HOME unreadable, but a socket whose path is known can be connected
// to without reading a directory. What the plan grants beneath them (the
// toolchain directories, a workspace under $HOME) is mounted back.
// Symlinks (such as /var/run to /run) are left alone: their targets are
// masked.
func socketDirs(env []string) []string {
	dirs := []string{"/run", "/var/run", "/tmp", "/var/tmp", "/dev/shm"}
	if xdg := envValue(env, "XDG_RUNTIME_DIR"); filepath.IsAbs(xdg) {
		dirs = append(dirs, filepath.Clean(xdg))
	}
	if home := envValue(env, "HOME"); filepath.IsAbs(home) && filepath.Clean(home) != "/" {
		if real, err := filepath.EvalSymlinks(home); err == nil {
			dirs = append(dirs, real)
		}
	}
	var masks []string
	for _, d := range dirs {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() && !underAny(d, masks) {
			masks = append(masks, d)
		}
	}
	return masks
}

// underAny reports whether path is one of dirs or beneath one.
func underAny(path string, dirs []string) bool {
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

// PrivateTmp returns the directory that sandboxed commands with AllowTmp
// see as /tmp, creating it if needed: apserver-sandbox-tmp-<uid> in the
// host's temporary directory, mode 0700. It is shared by this user's
// sandboxed commands, so a file written to /tmp by one command is there
// for the next; host sockets in the real /tmp are not. It refuses a
// directory that another user made or could write.
func PrivateTmp() (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("apserver-sandbox-tmp-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("sandbox: private /tmp: %w", err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return "", fmt.Errorf("sandbox: private /tmp: %w", err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR || int(st.Uid) != os.Getuid() || st.Mode&0o077 != 0 {
		return "", fmt.Errorf("sandbox: private /tmp %s is not a directory of mode 0700 owned by uid %d", dir, os.Getuid())
	}
	return dir, nil
}

// varDirs lists what is in /var except /var/tmp: like /tmp, that is where
// other users and programs leave their files.
func varDirs() []string {
	entries, err := os.ReadDir("/var")
	if err != nil {
		return nil
	}
	var dirs []string
	for _, e := range entries {
		if e.Name() != "tmp" {
			dirs = append(dirs, filepath.Join("/var", e.Name()))
		}
	}
	return dirs
}

// findGoroot returns the GOROOT of the first `go` executable on path, or
// "" if there is none.
func findGoroot(path string) string {
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		bin, err := filepath.EvalSymlinks(filepath.Join(dir, "go"))
		if err != nil {
			continue
		}
		if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return filepath.Dir(filepath.Dir(bin))
		}
	}
	return ""
}

// envValue returns the last value of key in env, as the shell would see it.
func envValue(env []string, key string) string {
	for _, kv := range slices.Backward(env) {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// configDirs counts the running commands per .apserver or .git directory
// that HoldConfigDirs made, so that the last one to end removes it.
var configDirs struct {
	mu sync.Mutex
	// held maps a writable root's .apserver to the number of commands
	// holding it and whether it was made for them.
	held map[string]*configDir
}

type configDir struct {
	n    int
	made bool
}

// HoldConfigDirs makes the .apserver directory that the workspace lacks
// (a writable root of a workspace-write policy that holds dir, the
// command's working directory), empty, so that the helper can mount it
// read-only: a command must not create one that apserver would then read
// as the workspace's configuration. Unless p.WritableGit, it does the
// same for a missing .git: a command must not make a workspace that is not
// a repository into one, with hooks that the user's next commit would run
// (an empty .git is no repository to git, which looks in the parent
// directories as if it were missing). It returns a function to call once
// the command has ended (its helper reaped); the last such call removes
// the directories made here if they are still empty, so the workspace is
// left as it was. (The helper makes a missing one itself, and leaves it,
// for callers that skip this.) Other writable roots have their .apserver
// and .git protected only if they exist.
func HoldConfigDirs(p Policy, dir string) (release func()) {
	if p.Mode != WorkspaceWrite {
		return func() {}
	}
	names := []string{".apserver"}
	if !p.WritableGit {
		names = append(names, ".git")
	}
	var dirs []string
	configDirs.mu.Lock()
	defer configDirs.mu.Unlock()
	if configDirs.held == nil {
		configDirs.held = map[string]*configDir{}
	}
	for _, root := range p.WritableRoots {
		real, err := filepath.EvalSymlinks(root)
		if err != nil || !underAny(dir, []string{root, real}) {
			continue
		}
		for _, name := range names {
			cfg := filepath.Join(real, name)
			if slices.Contains(dirs, cfg) {
				continue
			}
			h := configDirs.held[cfg]
			if h == nil {
				h = &configDir{}
				configDirs.held[cfg] = h
				h.made = os.Mkdir(cfg, 0o755) == nil
			}
			h.n++
			dirs = append(dirs, cfg)
		}
	}
	return func() {
		configDirs.mu.Lock()
		defer configDirs.mu.Unlock()
		for _, dir := range dirs {
			h := configDirs.held[dir]
			if h.n--; h.n == 0 {
				if h.made {
					_ = os.Remove(dir) // only if still empty
				}
				delete(configDirs.held, dir)
			}
		}
	}
}
