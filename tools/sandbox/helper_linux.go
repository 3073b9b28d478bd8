package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// init turns this process into the helper when it was started as one
// (see helperArg). It runs before main, and so also in the test binary of
// every package that imports sandbox. The helper never returns to the
// program: it execs the command or exits, with status 126 and a message
// on stderr if it could not confine itself.
func init() {
	if len(os.Args) < 2 || os.Args[1] != helperArg {
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

	// Dropping a capability from the bounding set acts on the calling
	// thread only, so execve must run on the same one. (init already runs
	// locked to the main thread; this keeps it so.)
	runtime.LockOSThread()

	wd, err := unix.Getwd()
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	if err := isolateMounts(pl.Writable); err != nil {
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
	if len(argv) == 0 {
		return nil
	}
	if err := restrict(pl); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	// Landlock checks access when a file is opened; a writable descriptor
	// inherited from the parent would bypass it.
	if err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("closing inherited files: %w", err)
	}
	args0 := append([]string{filepath.Base(argv[0])}, argv[1:]...)
	if err := syscall.Exec(argv[0], args0, os.Environ()); err != nil {
		return fmt.Errorf("exec %s: %w", argv[0], err)
	}
	return nil
}

// isolateMounts makes every mount in the helper's (new) mount namespace
// read-only except bind mounts of the writable paths. This covers what
// Landlock cannot restrict: chmod, chown, utimes and xattrs.
func isolateMounts(writable []string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	for _, w := range writable {
		err := unix.Mount(w, w, "", unix.MS_BIND|unix.MS_REC, "")
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("bind-mounting %s: %w", w, err)
		}
	}
	ro := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &ro); err != nil {
		return fmt.Errorf("making mounts read-only: %w", err)
	}
	rw := unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
	for _, w := range writable {
		// This fails where w was skipped as missing, and for mounts the
		// host itself has read-only (locked in a user namespace); what
		// stays read-only then is no escape, so carry on.
		if unix.MountSetattr(unix.AT_FDCWD, w, unix.AT_RECURSIVE, &rw) != nil {
			_ = unix.MountSetattr(unix.AT_FDCWD, w, 0, &rw)
		}
	}
	return nil
}
