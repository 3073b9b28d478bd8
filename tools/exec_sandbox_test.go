package tools

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apserver/apserver/internal/proctest"
	"github.com/apserver/apserver/tools/sandbox"
)

// These tests run sandboxed commands through Exec, so they also check
// that the sandbox helper (sandbox's init) works inside this package's
// test binary.

func skipUnlessEnforceable(t *testing.T, p *sandbox.Policy) {
	t.Helper()
	if err := sandbox.Probe().Enforceable(*p); err != nil {
		t.Skip(err)
	}
}

func TestExecSandboxWorkspaceWrite(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	p := &sandbox.Policy{Mode: sandbox.WorkspaceWrite, WritableRoots: []string{ws}}
	skipUnlessEnforceable(t, p)
	var streamed bytes.Buffer
	res, err := Exec(context.Background(), ExecRequest{
		Command: `echo in > inside && cat inside; { echo out > "$OUT/f"; } 2>/dev/null || echo denied; exit 3`,
		Dir:     ws,
		Env:     append(os.Environ(), "OUT="+outside),
		Sandbox: p,
	}, func(b []byte) { streamed.Write(b) })
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || res.Output != "in\ndenied\n" || streamed.String() != res.Output {
		t.Fatalf("result %+v, streamed %q", res, streamed.String())
	}
	if _, err := os.Stat(filepath.Join(ws, "inside")); err != nil {
		t.Errorf("write inside the workspace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); err == nil {
		t.Error("wrote outside the workspace")
	}
	// The empty .apserver that stood in for the missing one is gone.
	if _, err := os.Lstat(filepath.Join(ws, ".apserver")); err == nil {
		t.Error("the command left a .apserver behind")
	}
}

func TestExecSandboxReadOnly(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "f"), []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &sandbox.Policy{Mode: sandbox.ReadOnly}
	skipUnlessEnforceable(t, p)
	res := run(t, ExecRequest{Command: "cat f; { touch new; } 2>/dev/null || echo denied", Dir: ws, Sandbox: p})
	if res.ExitCode != 0 || res.Output != "data\ndenied\n" {
		t.Fatalf("result %+v", res)
	}
	if _, err := os.Stat(filepath.Join(ws, "new")); err == nil {
		t.Error("wrote in read-only mode")
	}
}

func TestExecSandboxFullAccess(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	p := &sandbox.Policy{Mode: sandbox.FullAccess}
	res := run(t, ExecRequest{Command: `touch "$OUT/f"`, Dir: ws, Env: append(os.Environ(), "OUT="+outside), Sandbox: p})
	if res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); err != nil {
		t.Errorf("danger-full-access could not write outside: %v", err)
	}
}

// TestExecSandboxRefuses checks that a policy that cannot be enforced is
// an error and nothing runs.
func TestExecSandboxRefuses(t *testing.T) {
	ws := t.TempDir()
	for _, p := range []*sandbox.Policy{
		{Mode: "bogus"},
		{Mode: sandbox.WorkspaceWrite, WritableRoots: []string{"relative"}},
	} {
		res, err := Exec(context.Background(), ExecRequest{Command: "touch ran", Dir: ws, Sandbox: p}, nil)
		if err == nil || !strings.HasPrefix(err.Error(), "tools: sandbox: ") {
			t.Errorf("Exec with %+v = %+v, %v; want a sandbox error", p, res, err)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Fatal("command ran")
	}
}

// treeScript starts two background processes whose command lines hold
// mark, one of them in a session of its own (setsid), waits until both
// run, prints "started" and sleeps. A sandboxed command's pids are those
// of its pid namespace, so the test finds them by mark (see assertNoMarked).
func treeScript(mark string) string {
	return `bash -c 'touch a; exec -a ` + mark + ` sleep 100' & setsid bash -c 'touch b; exec -a ` + mark + ` sleep 100' & ` +
		`until [ -e a ] && [ -e b ]; do sleep 0.01; done; echo started; sleep 100`
}

// assertNoMarked checks that no process whose command line holds mark
// runs (zombies count as gone).
func assertNoMarked(t *testing.T, mark string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		alive := proctest.Marked(mark)
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range alive {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("still running: %v", alive)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestExecSandboxTimeoutKillsProcessGroup checks that a timeout kills all
// that a sandboxed command started, including what left its process group.
func TestExecSandboxTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	p := &sandbox.Policy{Mode: sandbox.WorkspaceWrite, WritableRoots: []string{dir}}
	skipUnlessEnforceable(t, p)
	mark := "apserver-tree" + strings.ReplaceAll(dir, "/", "-")
	res, _ := runToTimeout(t, ExecRequest{
		Command: treeScript(mark),
		Dir:     dir,
		Timeout: 300 * time.Millisecond,
		Sandbox: p,
	})
	if !res.TimedOut || res.Canceled || res.ExitCode != -1 || res.Output != "started\n" {
		t.Fatalf("result %+v", res)
	}
	assertNoMarked(t, mark)
}

// TestExecSandboxCancelKillsProcessGroup is the same for an interrupt.
func TestExecSandboxCancelKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	p := &sandbox.Policy{Mode: sandbox.WorkspaceWrite, WritableRoots: []string{dir}}
	skipUnlessEnforceable(t, p)
	mark := "apserver-tree" + strings.ReplaceAll(dir, "/", "-")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := Exec(ctx, ExecRequest{
		Command: treeScript(mark),
		Dir:     dir,
		Sandbox: p,
	}, func(b []byte) {
		if bytes.Contains(b, []byte("started")) {
			cancel()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Canceled || res.TimedOut || res.ExitCode != -1 {
		t.Fatalf("result %+v", res)
	}
	assertNoMarked(t, mark)
}

// BenchmarkExec measures what confining a command costs: `true` run plain,
// in the sandbox with its network namespace (the default), and in the
// sandbox with network allowed (no network namespace). `make bench` runs it.
func BenchmarkExec(b *testing.B) {
	ws := b.TempDir()
	for _, bc := range []struct {
		name string
		p    *sandbox.Policy
	}{
		{"plain", nil},
		{"sandboxed", &sandbox.Policy{Mode: sandbox.WorkspaceWrite, WritableRoots: []string{ws}}},
		{"sandboxed-network", &sandbox.Policy{Mode: sandbox.WorkspaceWrite, WritableRoots: []string{ws}, Network: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.p != nil {
				if err := sandbox.Probe().Enforceable(*bc.p); err != nil {
					b.Skip(err)
				}
			}
			for b.Loop() {
				res, err := Exec(context.Background(), ExecRequest{Command: "true", Dir: ws, Sandbox: bc.p}, nil)
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("exit %d, %v", res.ExitCode, err)
				}
			}
		})
	}
}
