package demo

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildApserver builds the apserver binary into a temp dir. The test skips
// (rather than fails) when the build fails, since that means the tree is
// broken elsewhere and the build's own errors say where.
func buildApserver(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("skipping: no go command in PATH to build apserver with")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	statSources(t, root)
	exe := filepath.Join(t.TempDir(), "apserver")
	cmd := exec.Command(goBin, "build", "-o", exe, "./cmd/apserver")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("skipping: `go build ./cmd/apserver` fails, so the tree is broken outside internal/demo:\n%s", out)
	}
	return exe
}

// statSources stats every file of the module so that `go test` caching
// notices a change anywhere in it: the binary under test is built by a
// subprocess, whose inputs the test cache cannot see otherwise.
func statSources(t *testing.T, root string) {
	t.Helper()
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			os.Stat(path)
		}
		return nil
	})
}

func runDemo(t *testing.T, exe string, o Options) string {
	t.Helper()
	var out bytes.Buffer
	o.Exe, o.Out = exe, &out
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := Run(ctx, o); err != nil {
		t.Fatalf("Run: %v\noutput:\n%s", err, out.String())
	}
	return out.String()
}

func TestDemo(t *testing.T) {
	exe := buildApserver(t)

	t.Run("view", func(t *testing.T) {
		out := runDemo(t, exe, Options{})
		if strings.Contains(out, "\x1b") {
			t.Errorf("ANSI escape in the output with Color false:\n%q", out)
		}
		// Streamed prose is word-wrapped, so compare with whitespace folded.
		flat := strings.Join(strings.Fields(out), " ")
		greeting := strings.Join(strings.Fields(demoScript().Rules[1].Steps[0].Text), " ")
		for _, want := range []string{
			greeting,
			"$ " + testCommand,
			"ok greets by name",
			"all 2 tests passed",
			"✓ approved",
			"✓ exit 0",
			"✓ turn 1 completed",
			"✓ turn 2 completed",
			"[~] Add shout to greet.sh",
			"✎ update greet.sh",
			"+shout() {",
			"item/fileChange/requestApproval",
			"✓ written · 2 files",
			"turn diff: 2 files, +6 −0",
			"all 3 tests passed",
			"[x] Run the tests",
			"✓ turn 3 completed",
			"restored greet.sh, test.sh and dropped turn 3",
			"✓ greet.sh is back to its state before turn 3",
			"2 turns",
			"thread/list",
			"apserver exited cleanly",
		} {
			if !strings.Contains(flat, want) {
				t.Errorf("output lacks %q\noutput:\n%s", want, out)
			}
		}
		if t.Failed() {
			return
		}
		// The approval comes before the command's output, which comes
		// before the final answer.
		iApprove := strings.Index(out, "✓ approved")
		iOutput := strings.Index(out, "all 2 tests passed")
		iTurn2 := strings.Index(out, "✓ turn 2 completed")
		if !(iApprove < iOutput && iOutput < iTurn2) {
			t.Errorf("out of order: approved at %d, command output at %d, turn 2 end at %d\n%s", iApprove, iOutput, iTurn2, out)
		}
		// Turn 3: the change is shown, approved and written before the
		// tests run, and undone after the turn.
		iChange := strings.Index(out, "✎ update greet.sh")
		iWritten := strings.Index(out, "✓ written")
		iThree := strings.Index(out, "all 3 tests passed")
		iUndo := strings.Index(out, "✓ greet.sh is back")
		if !(iTurn2 < iChange && iChange < iWritten && iWritten < iThree && iThree < iUndo) {
			t.Errorf("turn 3 out of order: change %d, written %d, tests %d, undo %d\n%s", iChange, iWritten, iThree, iUndo, out)
		}
	})

	t.Run("json", func(t *testing.T) {
		out := runDemo(t, exe, Options{JSON: true, Keep: true})
		for _, want := range []string{
			`→ {"id":1,"method":"initialize"`,
			"← {",
			`"userAgent"`,
			`"method":"item/commandExecution/requestApproval"`,
			`"method":"item/fileChange/requestApproval"`,
			`"method":"thread/revert"`,
			`"result":{"decision":"accept"}`,
			`"method":"turn/completed"`,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("--json output lacks %q", want)
			}
		}
		// Keep leaves the temp dir behind and says where; clean it up here.
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "kept" {
				dir := f[1]
				if !strings.Contains(filepath.Base(dir), "apserver-demo-") {
					t.Fatalf("kept line names %q", dir)
				}
				if _, err := os.Stat(filepath.Join(dir, "workspace", "test.sh")); err != nil {
					t.Errorf("--keep: workspace gone: %v", err)
				}
				os.RemoveAll(dir)
				return
			}
		}
		t.Errorf("--keep: no \"kept\" line in the output")
	})
}

// A server that dies at once must make Run fail, naming what it was waiting
// for and showing the server's stderr. No build needed: /bin/sh stands in
// for apserver and fails on `sh serve …` (there is no file named serve).
func TestDemoServerDies(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	var out bytes.Buffer
	err = Run(context.Background(), Options{Exe: sh, Out: &out})
	if err == nil {
		t.Fatalf("Run succeeded with a server that cannot start:\n%s", out.String())
	}
	if !strings.Contains(err.Error(), "initialize") {
		t.Errorf("error does not name what was awaited: %v", err)
	}
	for _, want := range []string{"demo failed", "exited on its own", "serve"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// apserver demo run: a run planned, approved at the prompt, implemented,
// validated and merged, offline; the merged greet.sh shouts.
func TestRunDemo(t *testing.T) {
	exe := buildApserver(t)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := RunRun(ctx, Options{Exe: exe, Out: &out}); err != nil {
		t.Fatalf("RunRun: %v\noutput:\n%s", err, out.String())
	}
	s := out.String()
	order := []string{
		"t2    " + runTask2,
		"Approve the plan? [y]es",
		"t1 $ printf",
		"task t1 completed",
		"task t2 completed",
		"merged into main as",
		"changed on main: greet.sh test.sh",
		"t2: " + runTask2,
		"HELLO, WORLD!",
	}
	at := 0
	for _, w := range order {
		i := strings.Index(s[at:], w)
		if i < 0 {
			t.Fatalf("output lacks %q after offset %d\noutput:\n%s", w, at, s)
		}
		at += i + len(w)
	}
}
