// Package sandbox confines the shell commands a turn runs: it owns the
// sandbox policy (what a command may read, write and reach), checking what
// the kernel offers, and building the exec.Cmd that enforces a policy. It
// uses the standard library, golang.org/x/sys and Go-Landlock; it must
// not import other apserver packages.
//
// # How
//
// A sandboxed command is started as `<this binary> <helper arg> <policy>
// -- <shell> -c <script>` in new user and mount namespaces, plus a new
// network namespace unless the policy allows the network. The user
// namespace maps the caller's uid and gid to themselves (root maps every
// id to itself). This package's init function spots the helper argument
// before main (or the testing framework) runs, confines the process and
// execs the shell in place, so the shell keeps the helper's pid and
// process group. Confining is:
//
//  1. Make every mount read-only except bind mounts of the writable
//     roots. This catches what Landlock cannot: chmod, chown, utimes
//     and extended attributes on files outside the writable roots.
//  2. Drop CAP_SYS_ADMIN from the bounding set, so the command, root in
//     its user namespace, cannot undo that with mount_setattr(2).
//  3. Apply a Landlock ruleset with Go-Landlock, which also sets
//     no_new_privs: read and execute only where granted, write only
//     under the writable roots, no device nodes, no TCP bind or connect
//     without network, and signals and abstract unix sockets scoped to
//     the sandbox. Landlock also keeps the command from ptracing
//     processes outside, which closes their /proc/<pid>/environ, mem,
//     fd, cwd and root.
//  4. Mark inherited descriptors close-on-exec and exec the shell. If any
//     step fails the helper exits 126 with a message; it never runs the
//     command unconfined.
//
// Why this and not a setuid helper such as bubblewrap: every piece is
// enforced by the kernel for an unprivileged process, no extra package
// has to be installed, and nothing runs with more privilege than
// apserver. Landlock is inherited by everything the command starts,
// nested namespaces included, and the user namespace takes away root's
// host-wide capabilities. The price is a recent kernel: Landlock ABI 6
// (Linux 6.12) and unprivileged user namespaces. A new network namespace
// also costs the kernel some milliseconds per command, occasionally more.
//
// # What a command may do
//
// Read and execute: /usr /bin /sbin /lib /lib32 /lib64 /libx32 /etc /opt
// /run /srv /nix, /var except /var/tmp, /proc, /sys, the working
// directory, the writable roots, Policy.ReadableRoots, GOROOT (found from
// the command's PATH) and, under the command's $HOME, go .cache .cargo
// .rustup .npm .local .nvm .pyenv. Not $HOME itself (~/.ssh, ~/.aws,
// ~/.config, shell history), not /tmp or /var/tmp (unless writable), and
// of /dev only the listing plus null, zero, full, random, urandom, tty,
// ptmx and pts (read/write); raw disks and /dev/shm stay closed.
//
// Write: nothing in read-only mode; in workspace-write mode, anything
// under the writable roots, plus /tmp and $TMPDIR with Policy.AllowTmp.
//
// Network: without Policy.Network the command sees only a loopback
// interface that is down (it may bring it up; nothing else is there), and
// Landlock denies TCP bind and connect as well.
//
// # What is not covered
//
//   - Pathname unix sockets: connecting to one (for example a Docker or
//     D-Bus socket under /run) is allowed if the file is visible. Landlock
//     ABI 9 can restrict this; the sandbox uses ABI 6 rights only.
//   - .git inside a writable root is writable, hooks included: Landlock
//     cannot carve a read-only subdirectory out of a writable one. A
//     read-only bind mount could, but then git commit fails sandboxed.
//   - Hard links that already exist inside a writable root are writable
//     whatever other names the file has.
//   - Details of other processes that /proc shows everyone, such as
//     their command lines.
//   - Resource use: CPU, memory, disk space within the writable roots.
//   - Files in the readable directories are readable, for root all of
//     them (such as /etc/shadow). A $HOME under a readable directory
//     (say /var/lib/svc) is readable.
//   - With AllowTmp, /tmp is shared with every other process.
//
// Side effects: /proc is read-only, so tools that map ids in a nested
// user namespace (unshare -r, rootless containers) fail; POSIX shared
// memory (/dev/shm) is unavailable.
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
