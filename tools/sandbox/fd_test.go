package sandbox_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/apserver/apserver/tools"
)

// TestInheritedDescriptorsReachNoCommand: a descriptor apserver inherited
// without close-on-exec (an editor's pipe, a shell's redirection) must not
// pass on to its commands, unsandboxed ones included (the sandbox helper
// closes them itself). The test binary re-runs itself with such a
// descriptor as fd 3, and there runs an unsandboxed command that lists its
// shell's descriptors (the shell, not ls: a lone command would be exec'd).
func TestInheritedDescriptorsReachNoCommand(t *testing.T) {
	if os.Getenv("APSERVER_TEST_FD_CHILD") == "1" {
		res, err := tools.Exec(context.Background(), tools.ExecRequest{Command: `ls /proc/$$/fd; true`, Dir: t.TempDir()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(strings.Fields(res.Output), " "); got != "0 1 2" {
			t.Fatalf("the command's shell has descriptors %q, want 0 1 2", got)
		}
		return
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestInheritedDescriptorsReachNoCommand$", "-test.count=1")
	cmd.Env = append(os.Environ(), "APSERVER_TEST_FD_CHILD=1")
	cmd.ExtraFiles = []*os.File{f} // fd 3 in the child, not close-on-exec
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
}
