package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// init turns this process into the helper when it was started as one
// (see helperArg). It runs before main, and so also in the test binary of
// every package that imports sandbox. The helper never returns to the
// program: it execs the command or exits, with status 126 and a message
// on stderr if it could not confine itself.
func init() {
	if len(os.Args) >= 2 && len(os.Args) <= 3 && os.Args[1] == watchdogArg {
		runWatchdog()
		os.Exit(0)
	}
	if len(os.Args) < 2 || os.Args[1] != helperArg {
		// Descriptors this process inherited without close-on-exec (an
		// editor's pipes, a shell's redirections) would pass on to every
		// unsandboxed command; Go marks its own close-on-exec already.
		// (Linux 5.11+; an older kernel leaves them as they are.)
		_ = unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
		return
	}
	if err := runHelper(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "apserver sandbox: %v\n", err)
		os.Exit(126)
	}
	os.Exit(0)
}

// runHelper confines the process as its plan says and execs the command.
// Without a command (Probe) it stops after the namespaces and mounts and
// returns nil.
func runHelper(args []string) error {
	if len(args) < 2 || args[1] != "--" {
		return errors.New("malformed helper arguments")
	}
	var pl plan
	if err := json.Unmarshal([]byte(args[0]), &pl); err != nil {
		return fmt.Errorf("decoding policy: %w", err)
	}
	argv := args[2:]
	// The command may see this process (it is the init of the command's
	// pid namespace): nothing of it may be read through /proc, and it
	// holds no environment of apserver's (helperCmd gives it none).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("making the helper undumpable: %w", err)
	}
	var env []string
	if pl.EnvFD {
		var err error
		if env, err = readEnvFile(); err != nil {
			return err
		}
	}

	// Dropping a capability from the bounding set acts on the calling
	// thread only, so execve must run on the same one. (init already runs
	// locked to the main thread; this keeps it so.)
	runtime.LockOSThread()

	wd, err := unix.Getwd()
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	if err := isolateMounts(pl, wd); err != nil {
		return err
	}
	// The working directory still refers to the mount beneath any bind
	// mount made over it, which is now read-only: look it up again.
	if err := unix.Chdir(wd); err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	// Landlock forbids mount(2) and the like; without CAP_SYS_ADMIN in
	// its user namespace the command cannot use mount_setattr(2) either
	// to undo the read-only mounts.
	if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_ADMIN, 0, 0, 0); err != nil {
		return fmt.Errorf("dropping CAP_SYS_ADMIN: %w", err)
	}
	// A command that is root in the namespace would have CAP_SYS_PTRACE
	// there, which goes past the helper's being undumpable.
	if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_PTRACE, 0, 0, 0); err != nil {
		return fmt.Errorf("dropping CAP_SYS_PTRACE: %w", err)
	}
	if len(argv) == 0 {
		return nil
	}
	if err := restrict(pl); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if pl.NoUnixSockets {
		if err := denyUnixSockets(); err != nil {
			return fmt.Errorf("seccomp: %w", err)
		}
	}
	// Landlock checks access when a file is opened; a writable descriptor
	// inherited from the parent would bypass it.
	if err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("closing inherited files: %w", err)
	}
	if os.Getpid() != 1 {
		args0 := append([]string{filepath.Base(argv[0])}, argv[1:]...)
		if err := syscall.Exec(argv[0], args0, env); err != nil {
			return fmt.Errorf("exec %s: %w", argv[0], err)
		}
		return nil
	}
	os.Exit(initProcess(argv, env))
	return nil
}

// initProcess is the helper's life as the init of the command's pid
// namespace: it starts the command, reaps every process that ends up its
// child, and returns the command's exit status (128+n if a signal n
// killed it: init cannot die of a signal it sends itself) when the
// command ends. Its exit then makes the kernel kill whatever is left in
// the namespace, daemons and setsid included.
//
// It does not forward signals: apserver signals the whole process group,
// the command included. It catches the usual ones so that the command
// starts with default handlers and the helper does not die of them.
func initProcess(argv, env []string) int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE)
	go func() {
		for range sigs {
		}
	}()
	args0 := append([]string{filepath.Base(argv[0])}, argv[1:]...)
	pid, err := syscall.ForkExec(argv[0], args0, &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "apserver sandbox: exec %s: %v\n", argv[0], err)
		return 126
	}
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 126 // no children left: cannot happen before pid exits
		}
		if got != pid {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}

// isolateMounts builds the command's view of the file system in the
// helper's (new) mount namespace:
//
//  1. a fresh /proc for the new pid namespace;
//  2. empty tmpfs over the directories where unix sockets live (plan
//     Masks), with what the plan grants beneath them mounted back, and
//     the private /tmp (plan Tmp) on /tmp;
//  3. read-only overlays over the user's readable roots (plan Overlays);
//  4. every mount read-only except bind mounts of the writable paths,
//     which covers what Landlock cannot restrict: chmod, chown, utimes
//     and xattrs;
//  5. read-only bind mounts over .git and .apserver in the writable
//     roots (plan Protect).
func isolateMounts(pl plan, wd string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	if os.Getpid() == 1 {
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mounting /proc: %w", err)
		}
	}
	// Open what must stay visible before the masks hide it.
	keep := map[string]int{}
	var shown []string
	for _, r := range pl.Rules {
		shown = append(shown, r.Path)
	}
	shown = append(shown, pl.Keep...)
	hidden := func(p string) bool { return underAny(p, pl.Hide) && !slices.Contains(pl.Hide, p) }
	for _, p := range append(shown, pl.Writable...) {
		_, seen := keep[p]
		beneath := underAny(p, pl.Masks) && !slices.Contains(pl.Masks, p) || hidden(p)
		if seen || !beneath && !slices.Contains(pl.Writable, p) {
			continue
		}
		// Writable roots are opened wherever they are: their bind mounts
		// come after the overlays, which must not stand in for them.
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // missing: nothing to show
		}
		keep[p] = fd
	}
	tmp := -1
	if pl.Tmp != "" {
		fd, err := unix.Open(pl.Tmp, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("private /tmp: %w", err)
		}
		tmp = fd
		defer unix.Close(fd)
	}
	defer func() {
		for _, fd := range keep {
			unix.Close(fd)
		}
	}()
	var empty string
	for _, m := range pl.Masks {
		if err := unix.Mount("tmpfs", m, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=64k"); err != nil {
			return fmt.Errorf("hiding %s: %w", m, err)
		}
		if empty == "" {
			empty = filepath.Join(m, ".apserver-sandbox-empty")
			if err := os.Mkdir(empty, 0o755); err != nil {
				return fmt.Errorf("hiding %s: %w", m, err)
			}
		}
	}
	if tmp >= 0 {
		if err := bindFD(tmp, "/tmp"); err != nil {
			return err
		}
	}
	// Parents first, so that a child lands on its parent's mount.
	paths := slices.Collect(maps.Keys(keep))
	slices.SortFunc(paths, func(a, b string) int { return len(a) - len(b) })
	for _, p := range paths {
		if slices.Contains(pl.Writable, p) || hidden(p) {
			continue
		}
		if err := bindFD(keep[p], p); err != nil {
			return err
		}
	}
	for _, o := range pl.Overlays {
		if empty == "" {
			return errors.New("no empty directory for the overlays")
		}
		opts := "ro,lowerdir=" + o + ":" + empty
		if err := unix.Mount("overlay", o, "overlay", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("overlay on %s: %w", o, err)
		}
	}
	// apserver's own directories (Conceal): an empty tmpfs over each that
	// the command would see, then what is granted beneath mounted back.
	for _, h := range pl.Hide {
		if _, err := os.Stat(h); err != nil {
			continue // already out of view (under a mask)
		}
		if err := unix.Mount("tmpfs", h, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=64k"); err != nil {
			return fmt.Errorf("hiding %s: %w", h, err)
		}
	}
	for _, p := range paths {
		if hidden(p) && !slices.Contains(pl.Writable, p) {
			if err := bindFD(keep[p], p); err != nil {
				return err
			}
		}
	}
	for _, w := range pl.Writable {
		if pl.Tmp != "" && w == "/tmp" {
			continue
		}
		if fd, ok := keep[w]; ok { // else missing: skipped
			if err := bindFD(fd, w); err != nil {
				return err
			}
		}
	}
	protect, err := protectedPaths(pl, wd)
	if err != nil {
		return err
	}
	ro := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &ro); err != nil {
		return fmt.Errorf("making mounts read-only: %w", err)
	}
	rw := unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
	for _, w := range pl.Writable {
		// This fails where w was skipped as missing, and for mounts the
		// host itself has read-only (locked in a user namespace); what
		// stays read-only then is no escape, so carry on.
		if unix.MountSetattr(unix.AT_FDCWD, w, unix.AT_RECURSIVE, &rw) != nil {
			_ = unix.MountSetattr(unix.AT_FDCWD, w, 0, &rw)
		}
	}
	// A read-only bind mount over each protected path. Being a mount
	// point, it cannot be removed or renamed either (EBUSY), so rm -rf
	// .git or mv .git cannot swap in a writable one.
	for _, p := range protect {
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("protecting %s: %w", p, err)
		}
		if err := unix.MountSetattr(unix.AT_FDCWD, p, unix.AT_RECURSIVE, &ro); err != nil {
			return fmt.Errorf("protecting %s: %w", p, err)
		}
	}
	return nil
}

// protectedPaths returns what isolateMounts keeps read-only in the
// writable roots: .apserver (made, empty, where the root holding the
// working directory wd lacks one, so that a command cannot create one that
// apserver would then read as the workspace's configuration; see
// HoldConfigDirs) and, with ProtectGit, .git, a directory or a
// gitdir file, plus the directory a gitdir file names if it lies in a
// writable root. A missing .git is held the same way as a missing
// .apserver (made empty, read-only), so that a command cannot make the
// workspace a repository whose hooks the user's git would run; git init
// in a subdirectory still works.
func protectedPaths(pl plan, wd string) ([]string, error) {
	var out []string
	for _, root := range pl.Protect {
		ap := filepath.Join(root, ".apserver")
		if underAny(wd, []string{root}) {
			err := os.Mkdir(ap, 0o755)
			if err != nil && !errors.Is(err, os.ErrExist) && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("protecting %s: %w", ap, err)
			}
		}
		if _, err := os.Stat(ap); err == nil {
			out = append(out, ap)
		}
		if !pl.ProtectGit {
			continue
		}
		git := filepath.Join(root, ".git")
		if underAny(wd, []string{root}) {
			// A workspace that is not a repository must not become one:
			// hooks planted in a .git the command made would run the
			// next time the user commits there. An empty .git is no
			// repository to git, which looks further up as before.
			err := os.Mkdir(git, 0o755)
			if err != nil && !errors.Is(err, os.ErrExist) && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("protecting %s: %w", git, err)
			}
		}
		fi, err := os.Stat(git)
		if err != nil {
			continue
		}
		out = append(out, git)
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(git)
			if err != nil {
				continue
			}
			dir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
			if !ok {
				continue
			}
			dir = strings.TrimSpace(dir)
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(root, dir)
			}
			if real, err := filepath.EvalSymlinks(dir); err == nil && underAny(real, pl.Writable) {
				out = append(out, real)
			}
		}
	}
	return out, nil
}

// bindFD bind-mounts the file or directory open as fd (O_PATH) on path,
// creating the mount point if it is missing (as it is in a fresh tmpfs).
func bindFD(fd int, path string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("showing %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		if err := os.MkdirAll(path, 0o755); err != nil {
			return fmt.Errorf("showing %s: %w", path, err)
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("showing %s: %w", path, err)
		}
		if f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o644); err == nil {
			f.Close()
		}
	}
	src := fmt.Sprintf("/proc/self/fd/%d", fd)
	if err := unix.Mount(src, path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("showing %s: %w", path, err)
	}
	return nil
}
