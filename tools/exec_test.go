package tools

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func run(t *testing.T, req ExecRequest) ExecResult {
	t.Helper()
	if req.Dir == "" {
		req.Dir = t.TempDir()
	}
	res, err := Exec(context.Background(), req, nil)
	if err != nil {
		t.Fatalf("Exec(%q): %v", req.Command, err)
	}
	return res
}

func TestExecExitCodes(t *testing.T) {
	tests := []struct {
		cmd    string
		code   int
		signal syscall.Signal
	}{
		{"true", 0, 0},
		{"false", 1, 0},
		{"exit 3", 3, 0},
		{"no-such-command-xyz", 127, 0},
		{"kill -9 $$", -1, syscall.SIGKILL},
	}
	for _, tt := range tests {
		res := run(t, ExecRequest{Command: tt.cmd})
		if res.ExitCode != tt.code || res.Signal != tt.signal {
			t.Errorf("%q: exit %d signal %v, want %d %v", tt.cmd, res.ExitCode, res.Signal, tt.code, tt.signal)
		}
		if res.TimedOut || res.Canceled || res.Truncated {
			t.Errorf("%q: unexpected flags %+v", tt.cmd, res)
		}
	}
}

func TestExecInterleavesStdoutAndStderr(t *testing.T) {
	res := run(t, ExecRequest{Command: "echo 1; echo 2 >&2; echo 3; echo 4 >&2"})
	if res.Output != "1\n2\n3\n4\n" {
		t.Fatalf("output %q", res.Output)
	}
}

func TestExecDirAndEnv(t *testing.T) {
	dir := t.TempDir()
	res := run(t, ExecRequest{Command: `pwd -P; echo "$FOO"; test -t 0 || read x || echo stdin-eof`, Dir: dir, Env: []string{"FOO=bar"}})
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := real + "\nbar\nstdin-eof\n"; res.Output != want {
		t.Fatalf("output %q, want %q", res.Output, want)
	}
}

func TestExecBadDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"", "relative/dir", "/no/such/dir/for/apserver", file} {
		if _, err := Exec(context.Background(), ExecRequest{Command: "true", Dir: dir}, nil); err == nil {
			t.Errorf("Dir %q: no error", dir)
		}
	}
}

// TestExecStreams checks the first chunk reaches onOutput while the command
// is still running: the command blocks on a fifo the test opens only after
// receiving that chunk.
func TestExecStreams(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	chunks := make(chan string, 100)
	type outcome struct {
		res ExecResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := Exec(context.Background(), ExecRequest{Command: "echo a; cat gate >/dev/null; echo b", Dir: dir},
			func(b []byte) { chunks <- string(b) })
		done <- outcome{res, err}
	}()

	select {
	case c := <-chunks:
		if c != "a\n" {
			t.Fatalf("first chunk %q", c)
		}
	case o := <-done:
		t.Fatalf("Exec returned before the first chunk was delivered: %+v %v", o.res, o.err)
	case <-time.After(5 * time.Second):
		t.Fatal("no first chunk")
	}
	select {
	case o := <-done:
		t.Fatalf("Exec returned while the command was blocked: %+v", o.res)
	default:
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()

	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.res.Output != "a\nb\n" || o.res.ExitCode != 0 {
		t.Fatalf("result %+v", o.res)
	}
	close(chunks)
	var all strings.Builder
	all.WriteString("a\n")
	for c := range chunks {
		all.WriteString(c)
	}
	if all.String() != o.res.Output {
		t.Fatalf("chunks %q, output %q", all.String(), o.res.Output)
	}
}

func TestExecTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	res, timeout := runToTimeout(t, ExecRequest{
		Command: "echo $$ > pg; sleep 100 & echo $! > bg; echo started; sleep 100",
		Dir:     dir,
		Timeout: 300 * time.Millisecond,
	})
	if !res.TimedOut || res.Canceled || res.ExitCode != -1 {
		t.Fatalf("result %+v", res)
	}
	if res.Output != "started\n" {
		t.Fatalf("output %q", res.Output)
	}
	if res.Duration > timeout+5*time.Second {
		t.Fatalf("took %v with a %v timeout", res.Duration, timeout)
	}
	assertGone(t, dir)
}

// runToTimeout runs req, a command that prints "started" and then hangs
// until req.Timeout. The timeout counts from the process start, so on a
// loaded machine a short one can fire before the shell (or the sandbox
// around it) has printed anything, and there is nothing to judge; then it
// runs again with four times the timeout. It returns the first run that
// got as far as printing, with its timeout, so a test waits as long as the
// machine needs and no longer.
func runToTimeout(t *testing.T, req ExecRequest) (ExecResult, time.Duration) {
	t.Helper()
	for ; ; req.Timeout *= 4 {
		res := run(t, req)
		if res.Output != "" || !res.TimedOut || req.Timeout >= 16*time.Second {
			return res, req.Timeout
		}
		t.Logf("the %v timeout fired before the command printed; again with a longer one", req.Timeout)
		for _, f := range []string{"pg", "bg", "a", "b"} {
			os.Remove(filepath.Join(req.Dir, f))
		}
	}
}

func TestExecCancelKillsPromptly(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var canceledAt time.Time
	res, err := Exec(ctx, ExecRequest{
		Command: "echo $$ > pg; sleep 100 & echo $! > bg; echo started; sleep 100",
		Dir:     dir,
	}, func(b []byte) {
		if bytes.Contains(b, []byte("started")) && canceledAt.IsZero() {
			canceledAt = time.Now()
			cancel()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if canceledAt.IsZero() {
		t.Fatalf("never saw output; result %+v", res)
	}
	if d := time.Since(canceledAt); d > 2*time.Second {
		t.Fatalf("returned %v after cancel", d)
	}
	if !res.Canceled || res.TimedOut || res.ExitCode != -1 {
		t.Fatalf("result %+v", res)
	}
	assertGone(t, dir)
}

func TestExecCanceledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	res, err := Exec(ctx, ExecRequest{Command: "touch ran", Dir: dir}, nil)
	if err != nil || !res.Canceled || res.ExitCode != -1 {
		t.Fatalf("result %+v, err %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("command ran")
	}
}

// A background child that keeps the pipe open must not hold Exec up once the
// shell has exited, and must not outlive it.
func TestExecBackgroundChildHoldingPipe(t *testing.T) {
	dir := t.TempDir()
	res := run(t, ExecRequest{Command: "echo $$ > pg; sleep 100 & echo $! > bg; echo done", Dir: dir})
	// The output says that the grace cut something off.
	if res.ExitCode != 0 || res.Output != "done\n"+heldOpenMarker || res.TimedOut || res.Canceled {
		t.Fatalf("result %+v", res)
	}
	if res.Duration > 2*time.Second {
		t.Fatalf("took %v", res.Duration)
	}
	assertGone(t, dir)
}

// A process that left the group (setsid) and holds the pipe cannot be killed
// by Exec, but must not keep Exec from returning.
func TestExecEscapedChildHoldingPipe(t *testing.T) {
	dir := t.TempDir()
	res := run(t, ExecRequest{Command: "setsid sleep 100 & echo $! > bg; echo done", Dir: dir})
	// $! is setsid itself, which execs sleep in place.
	t.Cleanup(func() { _ = syscall.Kill(readPid(t, filepath.Join(dir, "bg")), syscall.SIGKILL) })
	if res.ExitCode != 0 || res.Output != "done\n"+heldOpenMarker {
		t.Fatalf("result %+v", res)
	}
	if res.Duration > 2*time.Second {
		t.Fatalf("took %v", res.Duration)
	}
}

func TestExecOutputCapKeepsHeadAndTail(t *testing.T) {
	res := run(t, ExecRequest{
		Command:        "printf HEAD; for i in $(seq 2000); do printf 'xxxxx'; done; printf TAIL",
		MaxOutputBytes: 100,
	})
	if !res.Truncated {
		t.Fatal("not truncated")
	}
	out := res.Output
	want := fmt.Sprintf("\n…[%d bytes elided]…\n", 4+10000+4-100)
	if !strings.HasPrefix(out, "HEAD") || !strings.HasSuffix(out, "TAIL") || !strings.Contains(out, want) {
		t.Fatalf("output %q", out)
	}
	if len(out) != 100+len(want) {
		t.Fatalf("output is %d bytes", len(out))
	}
}

func TestHeadTail(t *testing.T) {
	var src []byte
	for i := 0; i < 5000; i++ {
		src = append(src, byte('a'+i%26))
	}
	for _, limit := range []int{1, 2, 10, 101, 4999, 5000, 6000} {
		for _, chunk := range []int{1, 7, 64, 5000} {
			b := newHeadTail(limit)
			for p := src; len(p) > 0; {
				n := min(chunk, len(p))
				b.Write(p[:n])
				p = p[n:]
			}
			got, cut := b.String()
			if limit >= len(src) {
				if cut || got != string(src) {
					t.Errorf("limit %d chunk %d: cut=%v", limit, chunk, cut)
				}
				continue
			}
			h := limit / 2
			want := fmt.Sprintf("%s\n…[%d bytes elided]…\n%s", src[:h], len(src)-limit, src[len(src)-(limit-h):])
			if !cut || got != want {
				t.Errorf("limit %d chunk %d: got %q", limit, chunk, got)
			}
		}
	}
}

func TestHeadTailKeepsRunesWhole(t *testing.T) {
	got, cut := truncateMiddle(strings.Repeat("é", 100), 11) // é is two bytes
	if !cut || !strings.HasPrefix(got, "éé\n") || !strings.HasSuffix(got, "\nééé") {
		t.Fatalf("got %q", got)
	}
	if !strings.Contains(got, "[190 bytes elided]") {
		t.Fatalf("got %q", got)
	}
}

func TestFormatForModel(t *testing.T) {
	got := FormatForModel(ExecResult{ExitCode: 0, Output: "hi\n", Duration: 1500 * time.Millisecond})
	if want := "Exit code: 0\nWall time: 1.5 seconds\nOutput:\nhi\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}

	got = FormatForModel(ExecResult{ExitCode: -1, Signal: syscall.SIGKILL, TimedOut: true, Output: "x"})
	for _, want := range []string{"Exit code: -1 (signal 9: killed)", "Timed out", "Output:\nx"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in %q", want, got)
		}
	}

	big := "START" + strings.Repeat("m", 100_000) + "END\xff"
	got = FormatForModel(ExecResult{Output: big, Canceled: true})
	if !strings.Contains(got, "Interrupted") || !strings.Contains(got, "Output truncated") ||
		!strings.Contains(got, "Output:\nSTART") || !strings.HasSuffix(got, "END\uFFFD") {
		t.Errorf("got head %q tail %q", got[:200], got[len(got)-50:])
	}
	if len(got) > ModelOutputBytes+300 {
		t.Errorf("model text is %d bytes", len(got))
	}
}

// assertGone checks that the shell's process group (pid in dir/pg) and the
// background child (pid in dir/bg) no longer run. Zombies count as gone: an
// orphan is reaped by whichever process adopts it, which may take a moment
// or, in some containers, not happen at all.
func assertGone(t *testing.T, dir string) {
	t.Helper()
	pg := readPid(t, filepath.Join(dir, "pg"))
	bg := readPid(t, filepath.Join(dir, "bg"))
	deadline := time.Now().Add(2 * time.Second)
	for {
		alive := livingInGroup(pg)
		if st := procState(bg); st != "" && st != "Z" && !slices.Contains(alive, bg) {
			alive = append(alive, bg)
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still running: %v (group %d)", alive, pg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readPid(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// procStat returns the state and process group of pid, or ok=false if there
// is no such process.
func procStat(pid int) (state string, pgrp int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may contain spaces
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(s[i+1:]) // state ppid pgrp ...
	if len(f) < 3 {
		return "", 0, false
	}
	pgrp, _ = strconv.Atoi(f[2])
	return f[0], pgrp, true
}

func procState(pid int) string {
	st, _, _ := procStat(pid)
	return st
}

// livingInGroup lists the processes of group pgid that are not zombies.
func livingInGroup(pgid int) []int {
	if err := syscall.Kill(-pgid, 0); err == syscall.ESRCH {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var alive []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, pg, ok := procStat(pid); ok && pg == pgid && st != "Z" {
			alive = append(alive, pid)
		}
	}
	return alive
}
