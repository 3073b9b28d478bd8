package cmdexec

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
	"github.com/apserver/apserver/tools"
	"github.com/apserver/apserver/tools/sandbox"
	"github.com/apserver/apserver/tools/shell"
)

// command/exec runs a standalone process for the client (an editor's
// terminal), outside any thread. It is judged as the user's own command
// (Service.Plan, session's userCommandPlan): no approval is asked, since
// the client's user is the human an approval would ask, but what the rules
// forbid is refused and the process runs in the sandbox that sandboxPolicy
// (else the configured default) names, exactly as a thread's commands
// would.

// Service answers command/exec and its write, resize and terminate. Any
// goroutine may use it.
type Service struct {
	// Defaults are the settings of a new thread (session.Manager.Defaults):
	// the cwd and sandbox of a command that names none.
	Defaults func() port.Defaults
	// Plan judges the user's own command script in cwd under sandbox mode
	// sb: the sandbox it runs in (nil: none), or why it is refused
	// (session.Manager.UserCommandPlan: the rules a thread's commands get).
	Plan func(cwd string, sb protocol.SandboxMode, script string) (*sandbox.Policy, string)
	// Notify sends command/exec/outputDelta.
	Notify func(method string, params any)
	// Log is where the service logs.
	Log *slog.Logger

	ctx   context.Context // ended by Close: every process is killed
	stop  context.CancelFunc
	execs execTable
}

// New returns a Service; its fields are set by the caller before use.
func New() *Service {
	ctx, stop := context.WithCancel(context.Background())
	return &Service{ctx: ctx, stop: stop}
}

// Close kills every process (each answers).
func (c *Service) Close() { c.stop() }

// InputInterrupted ends every process at once, as command/exec/terminate
// would (each then answers, exit code 137, which its request was waiting
// for), and refuses any command/exec still to be handled: the client
// closed its input and wants apserver gone (--on-eof interrupt).
func (c *Service) InputInterrupted() {
	if n := c.execs.closeAll(); n > 0 {
		c.Log.Info("input closed; command/exec processes terminated", "processes", n, "mode", "interrupt")
	}
}

const (
	// execDefaultTimeout bounds a command/exec without timeoutMs.
	execDefaultTimeout = 10 * time.Minute
	// execDefaultCap is the per-stream capture cap without outputBytesCap.
	execDefaultCap = 1 << 20
	// execShell runs the argv (exec'd, so the process is the command).
	execShell = "/bin/bash"
	// execPipeGrace is how long output is still read once the process
	// has exited and its group been killed.
	execPipeGrace = 500 * time.Millisecond
)

// execTable holds the running command/exec processes by process id. The
// zero value is ready to use.
type execTable struct {
	mu    sync.Mutex
	procs map[string]*execProc
	next  int64
	// closed is set by closeAll: the client's input ended under --on-eof
	// interrupt, and no process starts any more.
	closed bool
}

// execProc is one running command/exec process.
type execProc struct {
	pgid int
	tty  *os.File // the PTY's master end, or nil

	// mu guards stdin (nil once closed, or when not streamed).
	mu    sync.Mutex
	stdin io.WriteCloser

	terminated chan struct{} // closed by command/exec/terminate
	termOnce   sync.Once
}

// errExecsClosed is add's error once closeAll has run.
var errExecsClosed = errors.New("the client closed its input (apserver --on-eof interrupt): no process starts any more")

func (e *execTable) add(id string, p *execProc) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errExecsClosed
	}
	if e.procs == nil {
		e.procs = map[string]*execProc{}
	}
	if _, dup := e.procs[id]; dup {
		return fmt.Errorf("processId already in use: %s", clientProcessID(id))
	}
	e.procs[id] = p
	return nil
}

// closeAll terminates every process (as command/exec/terminate does) and
// refuses new ones; it returns how many it terminated.
func (e *execTable) closeAll() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	for _, p := range e.procs {
		p.termOnce.Do(func() { close(p.terminated) })
	}
	return len(e.procs)
}

func (e *execTable) get(id string) *execProc {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.procs[id]
}

func (e *execTable) remove(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.procs, id)
}

func (e *execTable) internalID() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.next++
	return fmt.Sprintf("\x00internal-%d", e.next) // no client can name it
}

// Exec implements command/exec. The answer comes when the process
// exits, after every command/exec/outputDelta of it.
func (c *Service) Exec(ctx context.Context, p protocol.CommandExecParams, reply port.Reply) {
	s := c.Defaults()
	if p.Cwd != nil && *p.Cwd != "" {
		s.Cwd = *p.Cwd
	}
	if fi, err := os.Stat(s.Cwd); err != nil || !fi.IsDir() {
		reply(nil, protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: cwd is not a directory: %s", s.Cwd))
		return
	}
	if p.SandboxPolicy != nil {
		s.Sandbox = protocol.SandboxModeFor(*p.SandboxPolicy)
	}
	script := shell.Join(p.Command)
	sb, refuse := c.Plan(s.Cwd, s.Sandbox, script)
	if refuse != "" {
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "%s", refuse))
		return
	}
	id := c.execs.internalID()
	if p.ProcessID != nil && *p.ProcessID != "" {
		id = *p.ProcessID
	}
	proc := &execProc{terminated: make(chan struct{})}
	if err := c.execs.add(id, proc); err != nil {
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "%v", err))
		return
	}
	run, err := c.startExecProc(p, s.Cwd, sb, script, proc)
	if err != nil {
		c.execs.remove(id)
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "command/exec: %v", err))
		return
	}
	go func() {
		defer c.execs.remove(id)
		reply(run(ctx, id), nil)
	}()
}

// clientProcessID is a process id as its client named it (behind a hub
// the session sees it prefixed with the connection's tag).
func clientProcessID(id string) string {
	if _, rest, ok := strings.Cut(id, ":"); ok {
		return rest
	}
	return id
}

// execEnv is the server's environment without its secrets
// (sandbox.Environ: no API key of apserver's) with the client's overrides
// (a nil value unsets; the client may set any variable, a key included).
func execEnv(over map[string]*string) []string {
	env := sandbox.Environ()
	if len(over) == 0 {
		return env
	}
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := over[k]; !ok {
			out = append(out, kv)
		}
	}
	for k, v := range over {
		if v != nil {
			out = append(out, k+"="+*v)
		}
	}
	return out
}

// startExecProc starts the process and returns the function that streams
// or collects its output, waits for it and builds the result.
func (c *Service) startExecProc(p protocol.CommandExecParams, dir string, sb *sandbox.Policy, script string, proc *execProc) (func(ctx context.Context, id string) protocol.CommandExecResult, error) {
	policy := sandbox.Policy{Mode: sandbox.FullAccess}
	if sb != nil {
		policy = *sb
	}
	env := execEnv(p.Env)
	cmd, err := sandbox.Command(context.Background(), policy, dir, env, execShell, "exec "+script)
	if err != nil {
		return nil, err
	}
	release := sandbox.HoldConfigDirs(policy, dir)
	type stream struct {
		name string
		r    *os.File
	}
	var streams []stream
	var closeAfterStart []*os.File
	fail := func(err error) (func(context.Context, string) protocol.CommandExecResult, error) {
		for _, f := range closeAfterStart {
			f.Close()
		}
		for _, s := range streams {
			s.r.Close()
		}
		release()
		return nil, err
	}
	if p.TTY {
		ptm, pts, err := openPTY()
		if err != nil {
			return fail(err)
		}
		if p.Size != nil {
			_ = unix.IoctlSetWinsize(int(ptm.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: p.Size.Rows, Col: p.Size.Cols})
		}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
		// A session of its own with the PTY as its terminal (setsid
		// also makes it a process group, as Setpgid would).
		cmd.SysProcAttr.Setpgid = false
		cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty, cmd.SysProcAttr.Ctty = true, true, 0
		closeAfterStart = append(closeAfterStart, pts)
		proc.tty, proc.stdin = ptm, ptm
		streams = append(streams, stream{"stdout", ptm})
	} else {
		or, ow, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		streams = append(streams, stream{"stdout", or})
		closeAfterStart = append(closeAfterStart, ow)
		er, ew, err := os.Pipe()
		if err != nil {
			ow.Close()
			return fail(err)
		}
		streams = append(streams, stream{"stderr", er})
		closeAfterStart = append(closeAfterStart, ew)
		cmd.Stdout, cmd.Stderr = ow, ew
		if p.StreamStdin {
			ir, iw, err := os.Pipe()
			if err != nil {
				return fail(err)
			}
			cmd.Stdin = ir
			closeAfterStart = append(closeAfterStart, ir)
			proc.stdin = iw
		}
	}
	if err := sandbox.Start(cmd); err != nil {
		if proc.stdin != nil && proc.tty == nil {
			proc.stdin.Close()
		}
		return fail(fmt.Errorf("start: %w", err))
	}
	for _, f := range closeAfterStart {
		f.Close()
	}
	proc.pgid = cmd.Process.Pid
	unwatch := sandbox.Watch(proc.pgid)

	timeout := execDefaultTimeout
	switch {
	case p.DisableTimeout:
		timeout = 0
	case p.TimeoutMs != nil:
		timeout = max(time.Duration(*p.TimeoutMs)*time.Millisecond, time.Nanosecond)
	}
	limit := int64(execDefaultCap)
	switch {
	case p.DisableOutputCap:
		limit = -1
	case p.OutputBytesCap != nil:
		limit = *p.OutputBytesCap
	}
	streaming := p.StreamStdoutStderr || p.TTY

	return func(ctx context.Context, id string) protocol.CommandExecResult {
		defer release()
		defer unwatch()
		var wg sync.WaitGroup
		bufs := make([]strings.Builder, len(streams))
		var hold chan struct{}
		if testHookHoldExecReaders {
			hold = make(chan struct{})
		}
		for i, s := range streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.readExecStream(id, s.name, s.r, streaming, limit, &bufs[i], hold)
			}()
		}
		exited := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(exited)
		}()
		var timer <-chan time.Time
		if timeout > 0 {
			t := time.NewTimer(timeout)
			defer t.Stop()
			timer = t.C
		}
		timedOut := false
		select {
		case <-exited:
		case <-timer:
			timedOut = true
			proc.kill()
			<-exited
		case <-proc.terminated:
			proc.kill()
			<-exited
		case <-c.ctx.Done(): // the server is closing
			proc.kill()
			<-exited
		case <-ctx.Done(): // $/cancelRequest, or the connection closed
			proc.kill()
			<-exited
		}
		proc.kill() // whatever the command left in its group
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(execPipeGrace):
			for _, s := range streams {
				_ = s.r.SetReadDeadline(time.Now())
			}
			if hold != nil {
				close(hold)
			}
			<-done
		}
		for _, s := range streams {
			s.r.Close()
		}
		proc.mu.Lock()
		if proc.stdin != nil && proc.tty == nil {
			proc.stdin.Close()
		}
		proc.stdin = nil
		proc.mu.Unlock()

		res := protocol.CommandExecResult{ExitCode: exitCodeOf(cmd.ProcessState)}
		if timedOut {
			res.ExitCode = 124 // as timeout(1) and Codex
		}
		if !streaming {
			res.Stdout, res.Stderr = bufs[0].String(), bufs[1].String()
		}
		return res
	}, nil
}

// readExecStream reads one output stream to its end: as outputDelta
// notifications when streaming, else into buf; either way at most limit
// bytes (limit < 0: no cap).
func (c *Service) readExecStream(id, name string, r *os.File, streaming bool, limit int64, buf *strings.Builder, hold <-chan struct{}) {
	var n64 int64
	capped := false
	handle := func(chunk []byte) {
		if capped || len(chunk) == 0 {
			return
		}
		if limit >= 0 && n64+int64(len(chunk)) > limit {
			chunk, capped = chunk[:limit-n64], true
		}
		n64 += int64(len(chunk))
		if streaming {
			if len(chunk) > 0 || capped {
				c.Notify(protocol.NotifyCommandExecOutputDelta, protocol.CommandExecOutputDelta{
					ProcessID: id, Stream: name, DeltaBase64: base64.StdEncoding.EncodeToString(chunk), CapReached: capped})
			}
		} else {
			buf.Write(chunk)
		}
	}
	if hold != nil {
		<-hold
	}
	b := make([]byte, 32<<10)
	for {
		n, err := r.Read(b)
		handle(b[:n])
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// The grace is over, but what the pipe holds was written
			// before: a reader the machine was slow to run keeps it.
			_ = r.SetReadDeadline(time.Time{})
			tools.DrainPipe(r, handle)
		}
		if err != nil {
			return // EOF; EIO from a PTY whose other end closed; a deadline
		}
	}
}

// testHookHoldExecReaders, set by tests, makes command/exec's output
// readers wait until the grace after the process's exit is over before
// their first read: readers a loaded machine did not run in time.
var testHookHoldExecReaders bool

func exitCodeOf(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// kill ends the process's whole group.
func (p *execProc) kill() { _ = syscall.Kill(-p.pgid, syscall.SIGKILL) }

// openPTY opens a pseudo-terminal: the master end (ours) and the slave
// end (the process's stdin, stdout and stderr).
func openPTY() (ptm, pts *os.File, err error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("opening a pty: %w", err)
	}
	ptm = os.NewFile(uintptr(fd), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		ptm.Close()
		return nil, nil, fmt.Errorf("unlocking the pty: %w", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		ptm.Close()
		return nil, nil, fmt.Errorf("naming the pty: %w", err)
	}
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		ptm.Close()
		return nil, nil, fmt.Errorf("opening the pty: %w", err)
	}
	return ptm, pts, nil
}

func (c *Service) execProcess(id string) (*execProc, error) {
	p := c.execs.get(id)
	if p == nil {
		return nil, protocol.Errorf(protocol.ErrInvalidRequest, "no running process with processId %s", clientProcessID(id))
	}
	return p, nil
}

// Write implements command/exec/write: bytes to the process's
// stdin (its terminal, with tty), then maybe close stdin (with tty: an
// end-of-file character).
func (c *Service) Write(_ context.Context, p protocol.CommandExecWriteParams, reply port.Reply) {
	proc, err := c.execProcess(p.ProcessID)
	if err != nil {
		reply(nil, err)
		return
	}
	var data []byte
	if p.DeltaBase64 != nil {
		if data, err = base64.StdEncoding.DecodeString(*p.DeltaBase64); err != nil {
			reply(nil, protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: deltaBase64: %v", err))
			return
		}
	}
	proc.mu.Lock()
	defer proc.mu.Unlock()
	if proc.stdin == nil {
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "stdin of process %s is not open (start it with streamStdin or tty)", clientProcessID(p.ProcessID)))
		return
	}
	if p.CloseStdin && proc.tty != nil {
		data = append(data, 4) // ^D
	}
	if len(data) > 0 {
		if _, err := proc.stdin.Write(data); err != nil {
			reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "writing to process %s: %v", clientProcessID(p.ProcessID), err))
			return
		}
	}
	if p.CloseStdin && proc.tty == nil {
		proc.stdin.Close()
		proc.stdin = nil
	}
	reply(protocol.Empty{}, nil)
}

// Resize implements command/exec/resize (tty processes only).
func (c *Service) Resize(_ context.Context, p protocol.CommandExecResizeParams, reply port.Reply) {
	proc, err := c.execProcess(p.ProcessID)
	if err != nil {
		reply(nil, err)
		return
	}
	if proc.tty == nil {
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "process %s has no terminal (start it with tty)", clientProcessID(p.ProcessID)))
		return
	}
	ws := &unix.Winsize{Row: p.Size.Rows, Col: p.Size.Cols}
	if err := unix.IoctlSetWinsize(int(proc.tty.Fd()), unix.TIOCSWINSZ, ws); err != nil && !errors.Is(err, os.ErrClosed) {
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "resizing process %s: %v", clientProcessID(p.ProcessID), err))
		return
	}
	reply(protocol.Empty{}, nil)
}

// Terminate implements command/exec/terminate: the process's
// whole group is killed; its command/exec then answers (exit code 137).
func (c *Service) Terminate(_ context.Context, p protocol.CommandExecProcessParams, reply port.Reply) {
	proc, err := c.execProcess(p.ProcessID)
	if err != nil {
		reply(nil, err)
		return
	}
	proc.termOnce.Do(func() { close(proc.terminated) })
	reply(protocol.Empty{}, nil)
}

// TerminateProcess ends a command/exec process whose client went away
// (the server calls it when a connection closes).
func (c *Service) TerminateProcess(id string) {
	if proc := c.execs.get(id); proc != nil {
		proc.termOnce.Do(func() { close(proc.terminated) })
	}
}
