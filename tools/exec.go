package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/apserver/apserver/tools/sandbox"
)

const (
	// DefaultTimeout applies when ExecRequest.Timeout is zero.
	DefaultTimeout = 10 * time.Minute
	// DefaultMaxOutputBytes applies when ExecRequest.MaxOutputBytes is zero.
	DefaultMaxOutputBytes = 1 << 20

	// termGrace is how long a timed-out group gets between SIGTERM and SIGKILL.
	termGrace = 200 * time.Millisecond
	// pipeGrace is how long Exec keeps reading after the shell has exited
	// while something it started still holds the output pipe open. What
	// the pipe already holds when it ends is read all the same.
	pipeGrace = 100 * time.Millisecond
	// maxFinalDrain bounds the last non-blocking read of the pipe, in case
	// a process that escaped the group keeps writing into it: the largest
	// pipe buffer an unprivileged process can ask for (pipe-max-size) and
	// some.
	maxFinalDrain = 2 << 20

	shellPath = "/bin/bash"
	readSize  = 32 << 10
)

// ExecRequest describes one shell command to run.
type ExecRequest struct {
	// Command is run as: /bin/bash -c Command (not a login shell).
	Command string
	// Dir is the working directory. It must be an absolute path to an
	// existing directory.
	Dir string
	// Env is the environment; nil means the current process's environment
	// without apserver's secrets (sandbox.Environ).
	Env []string
	// Timeout bounds the run; zero means DefaultTimeout. On expiry the whole
	// process group gets SIGTERM and, shortly after, SIGKILL.
	Timeout time.Duration
	// MaxOutputBytes caps the output kept; zero or less means
	// DefaultMaxOutputBytes. Beyond the cap the first and last halves are
	// kept with a marker between them, and Truncated is set.
	MaxOutputBytes int
	// Sandbox, if not nil, confines the command (see sandbox.Command; the
	// HOME, TMPDIR and PATH of Env shape the policy). If the kernel cannot
	// enforce it, Exec returns an error and runs nothing.
	Sandbox *sandbox.Policy
}

// ExecResult is the outcome of a command that started.
type ExecResult struct {
	// ExitCode is the shell's exit status, or -1 if it was killed by a
	// signal, timed out or was canceled. (A sandboxed shell that a signal
	// n from inside the sandbox killed reports 128+n, as its helper, the
	// pid namespace's init, exits with that status.)
	ExitCode int
	// Signal is the signal that terminated the shell, or 0.
	Signal syscall.Signal
	// Output is stdout and stderr interleaved as produced, capped as
	// described on ExecRequest.MaxOutputBytes.
	Output   string
	Duration time.Duration
	TimedOut bool
	// Canceled reports that the context was canceled (an interrupt).
	Canceled  bool
	Truncated bool
}

// Exec runs req.Command in its own process group with stdin from /dev/null
// and stdout and stderr sharing one pipe, and waits for it.
//
// onOutput, if not nil, is called on Exec's goroutine with each chunk of
// output as it is read; the slice is the callee's to keep.
//
// Canceling ctx kills the whole group with SIGKILL and Exec returns promptly
// with Canceled set. When the shell exits, Exec returns once the pipe reaches
// EOF or, if background processes keep it open, after a short grace; either
// way whatever is left of the process group is then killed, so nothing the
// command started outlives it. Output written before the shell exited is
// never dropped, however late the reader runs: what the pipe holds is read
// to its end. When the grace cut processes off, the output ends with a
// line saying so. A sandboxed command runs in a pid namespace
// of its own, which dies with it, so that holds even for processes that
// left the group (setsid); an unsandboxed one's are out of reach.
//
// With Env nil the command gets apserver's environment without its
// secrets (sandbox.Environ), in every mode.
//
// Nothing outlives apserver either: the command gets SIGKILL when apserver
// dies (sandbox.Start), and the sandbox's watchdog kills the group
// (sandbox.Watch).
//
// A failure to start (for example a bad Dir) is returned as an error. A
// non-zero exit status is not an error.
func Exec(ctx context.Context, req ExecRequest, onOutput func([]byte)) (ExecResult, error) {
	if req.Dir == "" || !filepath.IsAbs(req.Dir) {
		return ExecResult{}, fmt.Errorf("tools: working directory %q is not an absolute path", req.Dir)
	}
	if fi, err := os.Stat(req.Dir); err != nil {
		return ExecResult{}, fmt.Errorf("tools: working directory: %w", err)
	} else if !fi.IsDir() {
		return ExecResult{}, fmt.Errorf("tools: working directory %q is not a directory", req.Dir)
	}
	if ctx.Err() != nil {
		return ExecResult{ExitCode: -1, Canceled: true}, nil
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	limit := req.MaxOutputBytes
	if limit <= 0 {
		limit = DefaultMaxOutputBytes
	}

	// The Cmd leads a process group of its own. Exec kills the group
	// itself, so the Cmd must not also act on ctx.
	policy := sandbox.Policy{Mode: sandbox.FullAccess}
	if req.Sandbox != nil {
		policy = *req.Sandbox
	}
	cmd, err := sandbox.Command(context.WithoutCancel(ctx), policy, req.Dir, req.Env, shellPath, req.Command)
	if err != nil {
		return ExecResult{}, fmt.Errorf("tools: %w", err)
	}

	// The empty .apserver the sandbox protects where a root has none is
	// removed again once the command is over.
	releaseConfig := sandbox.HoldConfigDirs(policy, req.Dir)
	defer releaseConfig() // after cmd.Wait below: the helper is gone

	pr, pw, err := os.Pipe()
	if err != nil {
		return ExecResult{}, fmt.Errorf("tools: output pipe: %w", err)
	}
	// An *os.File: the child gets it directly, no copying goroutine.
	cmd.Stdout, cmd.Stderr = pw, pw
	start := time.Now()
	// sandbox.Start, for the Pdeathsig that sandbox.Command sets: the
	// command dies with apserver.
	if err := sandbox.Start(cmd); err != nil {
		pr.Close()
		pw.Close()
		return ExecResult{}, fmt.Errorf("tools: start command: %w", err)
	}
	pw.Close() // only the child holds the write end now
	pgid := cmd.Process.Pid
	// If apserver dies before the command ends, the watchdog kills the
	// group, grandchildren included.
	unwatch := sandbox.Watch(pgid)
	killGroup := func(sig syscall.Signal) { _ = syscall.Kill(-pgid, sig) }

	chunks := make(chan []byte, 16)
	var readEOF bool // set by readPipe before it closes chunks
	var holdReader chan struct{}
	if testHookHoldReader != nil && testHookHoldReader(req) {
		holdReader = make(chan struct{})
	}
	go readPipe(pr, chunks, &readEOF, holdReader)
	exited := make(chan struct{})
	go func() {
		_ = waitExited(pgid)
		close(exited)
	}()

	var res ExecResult
	out := newHeadTail(limit)
	emit := func(b []byte) {
		out.Write(b)
		if onOutput != nil {
			onOutput(b)
		}
	}

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var (
		chunksC   = (<-chan []byte)(chunks)
		exitedC   = (<-chan struct{})(exited)
		doneC     = ctx.Done()
		timeoutC  = timer.C
		killC     <-chan time.Time // SIGTERM sent; SIGKILL when this fires
		graceC    <-chan time.Time // shell exited; stop waiting for EOF when this fires
		eof       bool
		shellGone bool
		graceOver bool
	)
	for !(shellGone && (eof || graceOver)) {
		select {
		case b, ok := <-chunksC:
			if !ok {
				eof, chunksC = true, nil
				continue
			}
			emit(b)
		case <-exitedC:
			// The command is over: a late interrupt or deadline changes
			// nothing, and the final group kill below replaces SIGKILL.
			shellGone, exitedC = true, nil
			doneC, timeoutC, killC = nil, nil, nil
			if !eof {
				graceC = time.After(pipeGrace)
			}
		case <-graceC:
			graceOver = true
		case <-doneC:
			res.Canceled = !res.TimedOut
			killGroup(syscall.SIGKILL)
			doneC, timeoutC, killC = nil, nil, nil
		case <-timeoutC:
			res.TimedOut = true
			killGroup(syscall.SIGTERM)
			timeoutC = nil
			killC = time.After(termGrace)
		case <-killC:
			killGroup(syscall.SIGKILL)
			killC = nil
		}
	}
	// Stop the reader even if an escaped process still holds the pipe, and
	// keep what it had already read.
	_ = pr.SetReadDeadline(time.Now())
	if holdReader != nil {
		close(holdReader)
	}
	for b := range chunks {
		emit(b)
	}
	// The deadline may have stopped the reader before it read what the
	// pipe held (a slow reader under load): what the command wrote before
	// its shell exited is still there, and is never dropped.
	if !readEOF {
		_ = pr.SetReadDeadline(time.Time{})
		readEOF = DrainPipe(pr, emit)
	}
	// The shell has exited but is not reaped yet, so the group id is still
	// ours: kill whatever is left in it.
	killGroup(syscall.SIGKILL)
	unwatch()
	if !readEOF {
		// Only the grace ends the wait short of EOF: processes the
		// command left behind hold the pipe open, and now are killed.
		emit([]byte(heldOpenMarker))
	}
	pr.Close()

	waitErr := cmd.Wait()
	res.Duration = time.Since(start)
	res.Output, res.Truncated = out.String()

	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case !ok:
		res.ExitCode = cmd.ProcessState.ExitCode()
	case ws.Signaled():
		res.ExitCode, res.Signal = -1, ws.Signal()
	default:
		res.ExitCode = ws.ExitStatus()
	}
	if res.TimedOut || res.Canceled {
		res.ExitCode = -1
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		return res, fmt.Errorf("tools: wait for command: %w", waitErr)
	}
	return res, nil
}

// heldOpenMarker ends the output of a command whose shell exited while
// processes it started still held the output pipe open past pipeGrace:
// they were killed, and what they would have written later is not there.
const heldOpenMarker = "\n[apserver: the shell exited but processes it started kept the output open; they were stopped]\n"

// testHookHoldReader, set by tests, makes the reader of req's output wait
// until Exec stops it before its first read: a reader that a loaded
// machine did not schedule in time.
var testHookHoldReader func(req ExecRequest) bool

// readPipe sends copies of what it reads from r until EOF or an error (such
// as an expired read deadline), then closes out; *eof says whether it
// reached EOF. With hold not nil it first waits until hold is closed.
func readPipe(r *os.File, out chan<- []byte, eof *bool, hold <-chan struct{}) {
	defer close(out)
	if hold != nil {
		<-hold
	}
	buf := make([]byte, readSize)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			out <- bytes.Clone(buf[:n])
		}
		if err != nil {
			*eof = err == io.EOF
			return
		}
	}
}

// DrainPipe reads what the pipe r holds now, without waiting for more
// writes, and passes each chunk to emit (the slice is emit's to keep); it
// reports whether it reached EOF. r is the read end of an os.Pipe whose
// read deadline, if any, has been cleared: a reader stopped by a deadline
// leaves in the pipe what was written before, which this reads. It reads
// at most 2 MiB, in case a writer that escaped keeps writing.
func DrainPipe(r *os.File, emit func([]byte)) (eof bool) {
	rc, err := r.SyscallConn()
	if err != nil {
		return false
	}
	buf := make([]byte, readSize)
	_ = rc.Read(func(fd uintptr) bool {
		for total := 0; total < maxFinalDrain; {
			n, err := syscall.Read(int(fd), buf)
			switch {
			case err == syscall.EINTR:
				continue
			case n > 0:
				emit(bytes.Clone(buf[:n]))
				total += n
				continue
			case n == 0 && err == nil:
				eof = true
			}
			return true // empty (EAGAIN), EOF or an error: done, never wait
		}
		return true
	})
	return eof
}

// headTail keeps the first and last bytes of a stream up to a limit.
type headTail struct {
	limit   int
	headCap int
	tailCap int
	head    []byte
	tail    []byte // may hold up to 2*tailCap before compaction
	total   int64
}

func newHeadTail(limit int) *headTail {
	h := limit / 2
	return &headTail{limit: limit, headCap: h, tailCap: limit - h}
}

func (b *headTail) Write(p []byte) {
	b.total += int64(len(p))
	if room := b.headCap - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return
	}
	b.tail = append(b.tail, p...)
	if len(b.tail) > 2*b.tailCap {
		b.tail = bytes.Clone(b.tail[len(b.tail)-b.tailCap:])
	}
}

// String returns the kept output and whether anything was elided. When it
// was, the head and tail are joined by a marker saying how many bytes were
// dropped, and neither side ends in a split UTF-8 sequence.
func (b *headTail) String() (string, bool) {
	tail := b.tail
	if len(tail) > b.tailCap {
		tail = tail[len(tail)-b.tailCap:]
	}
	if b.total <= int64(b.limit) {
		return string(b.head) + string(tail), false
	}
	head := b.head
	for i := len(head) - 1; i >= 0 && i >= len(head)-utf8.UTFMax; i-- {
		if utf8.RuneStart(head[i]) {
			if !utf8.FullRune(head[i:]) {
				head = head[:i]
			}
			break
		}
	}
	for k := 0; k < utf8.UTFMax-1 && len(tail) > 0 && !utf8.RuneStart(tail[0]); k++ {
		tail = tail[1:]
	}
	elided := b.total - int64(len(head)) - int64(len(tail))
	return fmt.Sprintf("%s\n…[%d bytes elided]…\n%s", head, elided, tail), true
}

// truncateMiddle caps s at about limit bytes, keeping its head and tail.
func truncateMiddle(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	b := newHeadTail(limit)
	b.Write([]byte(s))
	return b.String()
}
