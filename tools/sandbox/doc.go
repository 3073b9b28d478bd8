// Package sandbox confines the shell commands a turn runs: it owns the
// sandbox policy (what a command may read, write and reach), checking what
// the kernel offers, and building the exec.Cmd that enforces a policy. It
// uses the standard library, golang.org/x/sys and Go-Landlock; it must
// not import other apserver packages.
//
// # How
//
// A sandboxed command is started as `<this binary> <helper arg> <policy>
// -- <shell> -c <script>` in new user, mount and pid namespaces, plus a
// new network namespace unless the policy allows the network. The user
// namespace maps the caller's uid and gid to themselves (root maps every
// id to itself). This package's init function spots the helper argument
// before main (or the testing framework) runs and confines the process.
// The helper starts with an empty environment (the command's comes on fd
// 3, a memfd) and first makes itself undumpable (PR_SET_DUMPABLE 0): it
// stays as the command's pid 1 and parent, and nothing of it may be read
// through /proc (see env.go for what apserver keeps to itself). Then:
//
//  1. Build the mount tree: a fresh /proc for the pid namespace; an empty
//     tmpfs over /run, /tmp, /var/tmp, /dev/shm, $XDG_RUNTIME_DIR and $HOME,
//     with what the policy grants beneath them mounted back (a workspace
//     under /var/tmp, the target of a symlinked /etc/resolv.conf) and,
//     with AllowTmp, the private /tmp (PrivateTmp); in workspace-write, a
//     read-only overlayfs over each readable root and home toolchain
//     directory.
//  2. Make every mount read-only except bind mounts of the writable
//     roots. This catches what Landlock cannot: chmod, chown, utimes
//     and extended attributes on files outside the writable roots. Then
//     bind-mount .git (a directory, or a gitdir file and the directory
//     it names inside a writable root) and .apserver of each writable
//     root read-only over themselves; where the root holding the working
//     directory has no .apserver (or, unless WritableGit, no .git), an
//     empty one is made first (HoldConfigDirs, which removes it after the
//     command). The directories Conceal named (apserver's data dir) are
//     covered by an empty tmpfs, with the roots beneath them mounted back.
//  3. Drop CAP_SYS_ADMIN from the bounding set, so the command, root in
//     its user namespace, cannot undo that with mount_setattr(2), and
//     CAP_SYS_PTRACE, which would go past the helper's being undumpable.
//  4. Apply a Landlock ruleset with Go-Landlock, which also sets
//     no_new_privs: read and execute only where granted, write only
//     under the writable roots, no device nodes, no TCP bind or connect
//     without network, and signals and abstract unix sockets scoped to
//     the sandbox. Landlock also keeps the command from ptracing
//     processes outside, which closes their /proc/<pid>/environ, mem,
//     fd, cwd and root.
//  5. In read-only mode, install a seccomp filter that refuses
//     socket(AF_UNIX) (and io_uring, socketcall and foreign ABIs, which
//     could go round it).
//  6. Mark inherited descriptors close-on-exec, start the shell and stay
//     as the pid namespace's init: reap orphans, and exit with the
//     shell's status (128+n if signal n killed it, since init cannot die
//     of its own signal) once it ends, which makes the kernel kill what
//     is left in the namespace. If any step fails the helper exits 126
//     with a message; it never runs the command unconfined.
//
// Why this and not a setuid helper such as bubblewrap: every piece is
// enforced by the kernel for an unprivileged process, no extra package
// has to be installed, and nothing runs with more privilege than
// apserver. Landlock is inherited by everything the command starts,
// nested namespaces included, and the user namespace takes away root's
// host-wide capabilities. The price is a recent kernel: Landlock ABI 6
// (Linux 6.12), unprivileged user namespaces and overlayfs mounts in
// them (Linux 5.11). A new network namespace also costs the kernel some
// milliseconds per command, occasionally more.
//
// # Pathname unix sockets
//
// Landlock before the ABI that controls pathname unix sockets does not
// see connect(2) on them, and seccomp cannot read connect's address (it
// is behind a pointer; SECCOMP_RET_USER_NOTIF could, but only with a
// supervisor that redoes the connect itself, to avoid a time-of-check
// race). So the sandbox removes the sockets from view instead: the
// socket directories are hidden, the user's readable roots are seen
// through overlayfs (connecting to a socket found through an overlay
// fails with ECONNREFUSED: its inode is the overlay's, which no socket
// is bound to), and /proc shows only the namespace's processes, so
// /proc/<pid>/root leads nowhere else. Read-only commands can create no
// socket file, so every pathname socket is someone else's: there
// socket(AF_UNIX) fails outright. In workspace-write, sockets inside the
// writable roots work (test servers use them); socketpair(2) works in
// both modes.
//
// # Processes that outlive apserver
//
// See Start and Watch: the helper gets SIGKILL when apserver dies, and
// with it the pid namespace; a danger-full-access command gets SIGKILL
// too, and the watchdog kills its process group.
//
// # What a command may do
//
// Read and execute: /usr /bin /sbin /lib /lib32 /lib64 /libx32 /etc /opt
// /srv /nix, /var except /var/tmp, /proc, /sys, the working directory,
// the writable roots, Policy.ReadableRoots, GOROOT (found from the
// command's PATH) and, under the command's $HOME, go .cache .cargo
// .rustup .npm .local .nvm .pyenv. Not $HOME itself (~/.ssh, ~/.aws,
// ~/.config, shell history), not the host's /tmp, /var/tmp or /run
// (hidden), and of /dev only the listing plus null, zero, full, random,
// urandom, tty, ptmx and pts (read/write); raw disks and /dev/shm stay
// closed.
//
// Write: nothing in read-only mode; in workspace-write mode, anything
// under the writable roots but their .git and .apserver, plus the
// private /tmp and $TMPDIR with Policy.AllowTmp.
//
// Network: without Policy.Network the command sees only a loopback
// interface that is down (it may bring it up; nothing else is there), and
// Landlock denies TCP bind and connect as well.
//
// # What is not covered
//
//   - Pathname unix sockets in workspace-write mode that lie in a system
//     directory other than the hidden ones (say /var/lib/mysql or /etc),
//     or in a readable root whose path holds a comma, colon or
//     backslash (no overlay is made there): connecting is allowed.
//   - .git and .apserver are protected at the top of each writable root
//     only, not in nested repositories (a missing one is held only in the
//     root holding the working directory); a .git that is a symlink is
//     protected at its target, but the link itself can be replaced.
//   - Hard links that already exist inside a writable root are writable
//     whatever other names the file has.
//   - Resource use: CPU, memory, disk space within the writable roots.
//   - Files in the readable directories are readable, for root all of
//     them (such as /etc/shadow). A $HOME under a readable directory
//     (say /var/lib/svc) is readable.
//   - A danger-full-access command's processes that left its process
//     group (setsid) and re-exec'd with a scrubbed environment survive
//     apserver's death (the watchdog finds the others by their mark); so
//     do any of its processes if the watchdog itself is killed first.
//
// Side effects: /proc is read-only and shows only the command's own
// processes, so tools that map ids in a nested user namespace (unshare
// -r, rootless containers) fail; POSIX shared memory (/dev/shm) is
// unavailable; sandboxed commands see pids of their own namespace; a
// workspace without .apserver or .git has an empty one while a command
// runs (git init at its top fails); commands started with apserver's
// environment get it without secrets (Environ); in
// workspace-write, mounts beneath a readable root are not seen through
// its overlay (the directories under them are); and
// background processes of a sandboxed command die as soon as its shell
// exits (an unsandboxed one's get a short grace to flush output).
//
// # Fallback
//
// Support.Enforceable says whether a policy can be enforced and, if not,
// what is missing; Command returns the same error rather than degrading.
// The caller (session) then warns once and asks the user before running
// commands it would otherwise have sandboxed.
//
// The package is Linux only.
package sandbox
