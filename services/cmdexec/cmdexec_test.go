package cmdexec

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
	"github.com/apserver/apserver/tools/sandbox"
)

// TestCommandExecKeepsOutputOfSlowReader: what a command/exec process
// wrote before it exited is in its answer even when the readers of its
// pipes come after the grace that follows its exit (a loaded machine):
// the grace only stops the wait for processes still holding the pipes.
func TestCommandExecKeepsOutputOfSlowReader(t *testing.T) {
	testHookHoldExecReaders = true
	t.Cleanup(func() { testHookHoldExecReaders = false })
	dir := t.TempDir()
	m := New()
	m.Defaults = func() port.Defaults { return port.Defaults{Cwd: dir, Sandbox: protocol.SandboxWorkspaceWrite} }
	m.Plan = func(string, protocol.SandboxMode, string) (*sandbox.Policy, string) { return nil, "" } // danger-full-access
	m.Notify = func(string, any) {}
	m.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	t.Cleanup(m.Close)
	type answer struct {
		res any
		err error
	}
	got := make(chan answer, 1)
	m.Exec(context.Background(), protocol.CommandExecParams{
		Command:       []string{"sh", "-c", "echo out; echo err >&2"},
		Cwd:           &dir,
		SandboxPolicy: &protocol.SandboxPolicy{Type: "dangerFullAccess"},
	}, func(res any, err error) { got <- answer{res, err} })
	a := <-got
	if a.err != nil {
		t.Fatal(a.err)
	}
	res, ok := a.res.(protocol.CommandExecResult)
	if !ok {
		t.Fatalf("answer %#v", a.res)
	}
	if res.ExitCode != 0 || res.Stdout != "out\n" || res.Stderr != "err\n" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0, %q, %q", res.ExitCode, res.Stdout, res.Stderr, "out\n", "err\n")
	}
}
