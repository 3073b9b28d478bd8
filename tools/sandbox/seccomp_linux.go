package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// denyUnixSockets installs a seccomp filter on every thread of the
// process (and so on what it starts) that makes socket(2) fail with
// EACCES for AF_UNIX. Read-only commands use it: they can create no
// socket file of their own, so every pathname socket they could reach
// belongs to someone else. socketpair(2) is a different system call and
// keeps working. Classic BPF cannot read connect(2)'s address (it is
// behind a pointer), so the filter acts at socket creation instead.
//
// It also refuses, with ENOSYS, io_uring_setup (io_uring can create
// sockets without the socket system call), socketcall and every system
// call of another ABI (32-bit x86, x32), which have socket numbers of
// their own.
func denyUnixSockets() error {
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		return fmt.Errorf("no filter for %s", runtime.GOARCH)
	}
	const (
		ldAbs  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jset   = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret    = unix.BPF_RET | unix.BPF_K
		offNr  = 0
		offArc = 4
		offA0  = 16 // low half of args[0] (little endian)
		x32    = 0x40000000
		allow  = unix.SECCOMP_RET_ALLOW
		enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		eacces = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
	)
	socketcall := uint32(0xffffffff) // none on amd64 and arm64
	prog := []unix.SockFilter{
		{Code: ldAbs, K: offArc},
		{Code: jeq, Jt: 1, Jf: 0, K: arch},
		{Code: ret, K: enosys},
		{Code: ldAbs, K: offNr},
		{Code: jset, Jt: 0, Jf: 1, K: x32},
		{Code: ret, K: enosys},
		{Code: jeq, Jt: 0, Jf: 1, K: unix.SYS_IO_URING_SETUP},
		{Code: ret, K: enosys},
		{Code: jeq, Jt: 0, Jf: 1, K: socketcall},
		{Code: ret, K: enosys},
		{Code: jeq, Jt: 1, Jf: 0, K: unix.SYS_SOCKET},
		{Code: ret, K: allow},
		{Code: ldAbs, K: offA0},
		{Code: jeq, Jt: 0, Jf: 1, K: unix.AF_UNIX},
		{Code: ret, K: eacces},
		{Code: ret, K: allow},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	// no_new_privs is already set (Landlock needs it too).
	tid, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return errno
	}
	if tid != 0 {
		return fmt.Errorf("thread %d could not take the filter", tid)
	}
	return nil
}
