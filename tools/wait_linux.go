package tools

import (
	"syscall"
	"unsafe"
)

// waitExited blocks until the process pid has terminated, without reaping it.
// The caller reaps it later (exec.Cmd.Wait). While the process is an unreaped
// zombie its pid, and therefore its process-group id, cannot be reused, so the
// group can still be signalled safely.
func waitExited(pid int) error {
	const pPID = 1      // idtype_t P_PID
	var info [16]uint64 // siginfo_t is 128 bytes
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return errno
		}
		return nil
	}
}
