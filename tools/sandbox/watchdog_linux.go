package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Processes that outlive apserver
//
// A command's processes must die with apserver, kill -9 included, when
// apserver can no longer kill them itself. Three things see to it:
//
//   - Pdeathsig (SIGKILL) on the process apserver starts. The kernel sends
//     it when the *thread* that forked the process exits, not the
//     process; Go threads come and go, so Start forks from a goroutine
//     that stays locked to its thread for the life of the program.
//   - A sandboxed command's helper is the init of a new pid namespace:
//     when it dies, the kernel kills everything in the namespace, even
//     processes that left the process group (setsid, daemons).
//   - The watchdog, one small process per apserver (this binary again),
//     reads the process groups of running commands from a pipe. When the
//     pipe reaches EOF, which happens however apserver ends, it kills
//     every group still listed. This is what reaches the grandchildren of
//     an unsandboxed command; ones that left its process group are out of
//     reach there.

// watchdogArg is argv[1] of the watchdog process.
const watchdogArg = "-apserver-sandbox-watchdog"

var (
	startOnce sync.Once
	startReqs chan startReq
)

type startReq struct {
	cmd  *exec.Cmd
	done chan error
}

// Start starts cmd from an OS thread that never exits, so that a
// Pdeathsig set on cmd fires when apserver dies and at no other time.
func Start(cmd *exec.Cmd) error {
	startOnce.Do(func() {
		startReqs = make(chan startReq)
		go func() {
			runtime.LockOSThread() // and never unlock: the thread must live
			for r := range startReqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	startReqs <- startReq{cmd, done}
	return <-done
}

// watchdog is apserver's end of the watchdog process.
var watchdog struct {
	mu     sync.Mutex
	w      io.WriteCloser // nil until started, or after a write failed
	groups map[int]bool
}

// Watch lists the process group pgid with the watchdog, starting it if
// need be, until the returned function is called. Call that before the
// group's leader is reaped, while the group id cannot be reused. If the
// watchdog cannot run, the command still runs, covered by Pdeathsig and
// its pid namespace only.
func Watch(pgid int) (release func()) {
	watchdog.mu.Lock()
	defer watchdog.mu.Unlock()
	if watchdog.groups == nil {
		watchdog.groups = map[int]bool{}
	}
	watchdog.groups[pgid] = true
	sendWatchdog(fmt.Sprintf("+%d\n", pgid))
	return func() {
		watchdog.mu.Lock()
		defer watchdog.mu.Unlock()
		delete(watchdog.groups, pgid)
		sendWatchdog(fmt.Sprintf("-%d\n", pgid))
	}
}

// sendWatchdog writes line to the watchdog, (re)starting it with the
// current list if it is not running. The caller holds watchdog.mu.
func sendWatchdog(line string) {
	if watchdog.w != nil {
		if _, err := io.WriteString(watchdog.w, line); err == nil {
			return
		}
		watchdog.w.Close()
		watchdog.w = nil
	}
	cmd := exec.Command("/proc/self/exe", watchdogArg)
	cmd.Args[0] = os.Args[0]
	// Its own process group: signals for apserver's group (a terminal's
	// ^C) must not take it down first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	w, err := cmd.StdinPipe() // close-on-exec on apserver's side
	if err != nil {
		return
	}
	if err := cmd.Start(); err != nil {
		w.Close()
		return
	}
	go func() { _ = cmd.Wait() }() // reaps it if it ever exits
	var b strings.Builder
	for g := range watchdog.groups {
		fmt.Fprintf(&b, "+%d\n", g)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		w.Close()
		return
	}
	watchdog.w = w
}

// runWatchdog is the watchdog process: it keeps the list of groups from
// stdin and kills them all at EOF.
func runWatchdog() {
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGPIPE)
	groups := map[int]bool{}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 2 {
			continue
		}
		pgid, err := strconv.Atoi(line[1:])
		if err != nil || pgid <= 1 {
			continue
		}
		groups[pgid] = line[0] == '+'
	}
	for pgid, live := range groups {
		if live {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
}
