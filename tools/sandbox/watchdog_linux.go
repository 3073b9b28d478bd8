package sandbox

import (
	"bufio"
	"bytes"
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
//     an unsandboxed command.
//   - Unsandboxed commands also carry an environment variable naming this
//     apserver process (markEnv). After the groups, the watchdog kills
//     every process whose initial environment holds that mark: what left
//     the command's process group (setsid, double forks, daemons) but
//     inherited its environment. A process that execs itself with a
//     scrubbed environment escapes this; a sandboxed one cannot escape its
//     pid namespace.

// watchdogArg is argv[1] of the watchdog process.
const watchdogArg = "-apserver-sandbox-watchdog"

// markVar is the environment variable that marks an unsandboxed command's
// processes as this apserver's; its value is apserver's pid and start
// time, so a restarted apserver's mark differs.
const markVar = "APSERVER_COMMAND_OF"

var markOnce = sync.OnceValue(func() string {
	return fmt.Sprintf("%s=%d-%d", markVar, os.Getpid(), processStart(os.Getpid()))
})

// markEnv is the KEY=VALUE that unsandboxed commands carry.
func markEnv() string { return markOnce() }

// processStart is the start time of pid in clock ticks since boot (field
// 22 of /proc/pid/stat), or 0.
func processStart(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces and parentheses: count
	// fields after its closing parenthesis.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}

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
				err := r.cmd.Start()
				// The helper has its copy of the command's environment.
				for _, f := range r.cmd.ExtraFiles {
					if f != nil && f.Name() == envFileName {
						f.Close()
					}
				}
				r.done <- err
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
	cmd := exec.Command("/proc/self/exe", watchdogArg, markEnv())
	cmd.Args[0] = os.Args[0]
	cmd.Env = []string{} // it needs none of apserver's
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
	if len(os.Args) > 2 && strings.HasPrefix(os.Args[2], markVar+"=") {
		killMarked(os.Args[2])
	}
}

// killMarked kills every process whose initial environment holds mark
// (KEY=VALUE), over a few rounds: one that forks while a round runs is
// caught by the next.
func killMarked(mark string) {
	want := []byte(mark)
	self := os.Getpid()
	for round := 0; round < 5; round++ {
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return
		}
		killed := 0
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self {
				continue
			}
			env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err != nil {
				continue
			}
			for _, kv := range bytes.Split(env, []byte{0}) {
				if bytes.Equal(kv, want) {
					if syscall.Kill(pid, syscall.SIGKILL) == nil {
						killed++
					}
					break
				}
			}
		}
		if killed == 0 {
			return
		}
	}
}
