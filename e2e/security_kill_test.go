package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/internal/proctest"
	"github.com/apserver/apserver/model/scripted"
)

// TestKilledServerLeavesNoProcesses kills apserver with SIGKILL while a
// command runs whose background grandchild sleeps, sandboxed and not, and
// checks from /proc that nothing the command started is still alive: the
// next apserver must not find the old run's processes.
func TestKilledServerLeavesNoProcesses(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"workspace-write", "read-only", "danger-full-access"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			// A marker in the grandchild's command line finds it in /proc
			// whatever its pid is (a sandboxed command has a pid namespace
			// of its own, so $! means nothing out here).
			mark := fmt.Sprintf("apserver-e2e-orphan-%d-%s", os.Getpid(), mode)
			// And a daemon that left the process group (setsid): the
			// sandbox's pid namespace reaches it, and for an unsandboxed
			// command the watchdog finds it by the environment mark.
			script := `bash -c "exec -a ` + mark + `-bg sleep 1000" & ` +
				`setsid bash -c "exec -a ` + mark + `-sid sleep 1000" & `
			want := 2
			cmd := `sh -c '` + script + `wait'`
			model := startModel(t, scripted.Rule{Match: "orphan", Steps: []scripted.Step{
				{ToolCalls: []scripted.ToolCall{{Command: cmd}}},
				{Text: "done"},
			}})
			c := newClient(t, model, options{})
			// Not under /tmp, which the sandbox replaces with a private one.
			base := varTmpDir(t, "apserver-e2e-kill-")
			r := c.call("thread/start", map[string]any{"cwd": base, "approvalPolicy": "never", "sandbox": mode})
			threadID := r.str("thread.id")
			c.startTurn(threadID, "leave an orphan")
			t.Cleanup(func() { killMarked(mark) })

			// The sleeps run before the kill (the positive control).
			deadline := time.Now().Add(waitTimeout)
			for len(markedProcesses(mark)) < want {
				if time.Now().After(deadline) {
					t.Fatalf("the command's background processes never started; apserver stderr:\n%s", c.stderr.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			c.kill()

			deadline = time.Now().Add(exitTimeout)
			for {
				alive := markedProcesses(mark)
				if len(alive) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after kill -9 of apserver, processes %v of its %s command are still alive", alive, mode)
				}
				time.Sleep(10 * time.Millisecond)
			}

			// A restarted apserver on the same data starts clean.
			c2 := newClient(t, model, options{dataDir: c.dataDir})
			if alive := markedProcesses(mark); len(alive) != 0 {
				t.Errorf("after the restart, processes %v are alive", alive)
			}
			c2.close()
		})
	}
}

// markedProcesses returns the pids of live (not zombie) processes whose
// command line contains mark.
func markedProcesses(mark string) []int { return proctest.Marked(mark) }

// killMarked kills what a failed test left behind.
func killMarked(mark string) {
	for _, pid := range markedProcesses(mark) {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
	}
}

// markFor returns a marker unique to this test and process, for a command
// line: a sandboxed command's $$ is a pid of its own pid namespace, so
// tests find its processes by marker (exec -a) instead.
func markFor(t *testing.T) string {
	return fmt.Sprintf("apserver-e2e-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))
}

// waitMarked waits for a process whose command line holds mark, returns
// its pid, and kills what is left of them at the end of the test.
func waitMarked(t *testing.T, mark string) int {
	t.Helper()
	t.Cleanup(func() { killMarked(mark) })
	deadline := time.Now().Add(waitTimeout)
	for {
		if pids := markedProcesses(mark); len(pids) > 0 {
			return pids[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no process with %s in its command line started", mark)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
