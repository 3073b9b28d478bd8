package tools

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// holdReaders makes the output reader of every command that slow says
// is slow wait until Exec stops it: the shell has exited and its output
// sits unread in the pipe, as when a loaded machine does not schedule the
// reader within the grace.
func holdReaders(t *testing.T, slow func(cmd string) bool) {
	t.Helper()
	testHookHoldReader = func(req ExecRequest) bool { return slow(req.Command) }
	t.Cleanup(func() { testHookHoldReader = nil })
}

// TestExecKeepsOutputOfSlowReader: output written before the shell
// exited is never dropped, however late the reader gets to it, and no
// marker claims that something held the pipe open.
func TestExecKeepsOutputOfSlowReader(t *testing.T) {
	holdReaders(t, func(string) bool { return true })
	res := run(t, ExecRequest{Command: "echo hello"})
	if res.ExitCode != 0 || res.Output != "hello\n" {
		t.Fatalf("exit %d, output %q; want 0 and %q", res.ExitCode, res.Output, "hello\n")
	}
	// More than one read's worth, up to a full pipe buffer.
	res = run(t, ExecRequest{Command: "head -c 65536 /dev/zero | tr '\\0' x"})
	if res.Output != strings.Repeat("x", 65536) {
		t.Fatalf("got %d bytes, want 65536 x", len(res.Output))
	}
}

// TestExecOutputUnderLoad runs many commands at once on one P with busy
// goroutines competing for it, a third of them with a reader that comes
// late, and checks every command's output byte for byte, not only that
// each one ended.
func TestExecOutputUnderLoad(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const commands, parallel = 150, 30
	holdReaders(t, func(cmd string) bool {
		var i int
		_, err := fmt.Sscanf(cmd, "printf 'out-%d", &i)
		return err == nil && i%3 == 0
	})
	stop := make(chan struct{})
	var burners sync.WaitGroup
	for range 4 {
		burners.Add(1)
		go func() {
			defer burners.Done()
			for {
				select {
				case <-stop:
					return
				default:
					runtime.Gosched()
				}
			}
		}()
	}
	defer func() { close(stop); burners.Wait() }()

	dir := t.TempDir()
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	errs := make(chan string, commands)
	for i := range commands {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			// Some output on stdout and stderr, of varied length.
			want := fmt.Sprintf("out-%d\n%s\nerr-%d\n", i, strings.Repeat("y", i*37), i)
			cmd := fmt.Sprintf("printf 'out-%d\\n'; head -c %d /dev/zero | tr '\\0' y; echo; echo err-%d >&2", i, i*37, i)
			res, err := Exec(context.Background(), ExecRequest{Command: cmd, Dir: dir}, nil)
			switch {
			case err != nil:
				errs <- fmt.Sprintf("command %d: %v", i, err)
			case res.ExitCode != 0 || res.Output != want:
				errs <- fmt.Sprintf("command %d: exit %d, output %q; want 0 and %q", i, res.ExitCode, res.Output, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
