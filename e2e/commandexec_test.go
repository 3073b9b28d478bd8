package e2e

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// execOutput is the decoded output of processID's outputDelta
// notifications received so far, on stream.
func execOutput(msgs []*message, processID, stream string) string {
	var b strings.Builder
	for _, m := range msgs {
		if m.Method == "command/exec/outputDelta" && m.str("processId") == processID && m.str("stream") == stream {
			d, _ := base64.StdEncoding.DecodeString(m.str("deltaBase64"))
			b.Write(d)
		}
	}
	return b.String()
}

func (c *client) waitExecOutput(processID, stream, want string) {
	c.t.Helper()
	seen := map[int]bool{}
	var got []*message
	c.waitMsg(processID+" output "+want, 0, func(m *message) bool { // called under c.mu
		if !seen[m.Seq] {
			seen[m.Seq] = true
			got = append(got, m)
		}
		return strings.Contains(execOutput(got, processID, stream), want)
	})
}

// TestCommandExec: command/exec runs an argv outside any thread, buffered
// (separate stdout and stderr, the exit code) or streamed as base64
// deltas with stdin written by command/exec/write; with tty it gets a
// terminal of the requested size that command/exec/resize changes;
// terminate and timeouts end it. Bad params are refused with the right code.
func TestCommandExec(t *testing.T) {
	t.Parallel()
	c := newClient(t, startModel(t), options{})
	cwd := t.TempDir()

	m := c.call("command/exec", map[string]any{"command": []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, "cwd": cwd})
	if m.get("exitCode") != float64(3) || m.str("stdout") != "out\n" || m.str("stderr") != "err\n" {
		t.Errorf("buffered command/exec = %s", m.Raw)
	}
	if m := c.call("command/exec", map[string]any{"command": []string{"pwd"}, "cwd": cwd}); strings.TrimSpace(m.str("stdout")) != cwd {
		t.Errorf("pwd = %s, want %s", m.Raw, cwd)
	}
	if m := c.call("command/exec", map[string]any{"command": []string{"sh", "-c", "echo $A-$HOME"}, "cwd": cwd,
		"env": map[string]any{"A": "set", "HOME": nil}}); m.str("stdout") != "set-\n" {
		t.Errorf("env overrides = %s", m.Raw)
	}
	if m := c.call("command/exec", map[string]any{"command": []string{"head", "-c", "100000", "/dev/zero"}, "cwd": cwd, "outputBytesCap": 10}); len(m.str("stdout")) != 10 {
		t.Errorf("outputBytesCap 10 kept %d bytes", len(m.str("stdout")))
	}
	if m := c.call("command/exec", map[string]any{"command": []string{"sleep", "30"}, "cwd": cwd, "timeoutMs": 200}); m.get("exitCode") != float64(124) {
		t.Errorf("timed out = %s, want exit code 124", m.Raw)
	}

	// Streamed, stdin from the client.
	id := c.send("command/exec", map[string]any{"command": []string{"cat"}, "cwd": cwd, "processId": "cat-1",
		"streamStdin": true, "streamStdoutStderr": true})
	c.call("command/exec/write", map[string]any{"processId": "cat-1", "deltaBase64": b64("hello cat\n")})
	c.waitExecOutput("cat-1", "stdout", "hello cat\n")
	c.callErr("command/exec", map[string]any{"command": []string{"true"}, "processId": "cat-1", "streamStdoutStderr": true}, -32600, "already in use")
	c.callErr("command/exec/resize", map[string]any{"processId": "cat-1", "size": map[string]any{"rows": 1, "cols": 1}}, -32600, "no terminal")
	c.call("command/exec/write", map[string]any{"processId": "cat-1", "closeStdin": true})
	if m := c.response(id); m.Error != nil || m.get("exitCode") != float64(0) || m.str("stdout") != "" {
		t.Errorf("streamed cat = %s, want exit 0 and stdout left to the deltas", m.Raw)
	}

	// A terminal: its size, a resize, then terminate.
	script := `test -t 0 && echo is-a-tty; stty size; read x; stty size; read y`
	id = c.send("command/exec", map[string]any{"command": []string{"sh", "-c", script}, "cwd": cwd, "processId": "tty-1",
		"tty": true, "size": map[string]any{"rows": 30, "cols": 100}})
	c.waitExecOutput("tty-1", "stdout", "30 100")
	c.call("command/exec/resize", map[string]any{"processId": "tty-1", "size": map[string]any{"rows": 40, "cols": 120}})
	c.call("command/exec/write", map[string]any{"processId": "tty-1", "deltaBase64": b64("\n")})
	c.waitExecOutput("tty-1", "stdout", "40 120")
	if out := execOutput(c.snapshot(), "tty-1", "stdout"); !strings.Contains(out, "is-a-tty") {
		t.Errorf("tty output = %q, want is-a-tty", out)
	}
	c.call("command/exec/terminate", map[string]any{"processId": "tty-1"})
	if m := c.response(id); m.Error != nil || m.get("exitCode") != float64(137) {
		t.Errorf("terminated = %s, want exit 137", m.Raw)
	}

	c.callErr("command/exec", map[string]any{"command": []string{}}, -32602, "command must not be empty")
	c.callErr("command/exec", map[string]any{"command": []string{"cat"}, "tty": true}, -32602, "processId is required")
	c.callErr("command/exec", map[string]any{"command": []string{"true"}, "timeoutMs": 5, "disableTimeout": true}, -32602, "timeoutMs")
	c.callErr("command/exec", map[string]any{"command": []string{"true"}, "cwd": "rel"}, -32602, "absolute")
	c.callErr("command/exec", map[string]any{"command": []string{"true"}, "sandboxPolicy": map[string]any{"type": "bogus"}}, -32602, "sandboxPolicy.type")
	c.callErr("command/exec/write", map[string]any{"processId": "gone", "deltaBase64": b64("x")}, -32600, "no running process")
	c.callErr("command/exec/terminate", map[string]any{}, -32602, "processId")
}

// TestCommandExecConfined attacks through command/exec: what the rules
// forbid does not run even when the client asks for full access, and a
// read-only sandbox cannot be written through; judged by the files.
func TestCommandExecConfined(t *testing.T) {
	t.Parallel()
	c := newClient(t, startModel(t), options{})
	cwd, victim := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(victim, "keep"), []byte("x"), 0o644)
	c.callErr("command/exec", map[string]any{"command": []string{"rm", "-rf", victim}, "cwd": cwd,
		"sandboxPolicy": map[string]any{"type": "dangerFullAccess"}}, -32600, "forbidden")
	c.callErr("command/exec", map[string]any{"command": []string{"sh", "-c", "rm -rf " + victim}, "cwd": cwd,
		"sandboxPolicy": map[string]any{"type": "dangerFullAccess"}}, -32600, "forbidden")
	if _, err := os.Stat(filepath.Join(victim, "keep")); err != nil {
		t.Fatalf("a forbidden command/exec ran: %v", err)
	}
	m := c.call("command/exec", map[string]any{"command": []string{"touch", "marker"}, "cwd": cwd,
		"sandboxPolicy": map[string]any{"type": "readOnly"}})
	if m.get("exitCode") == float64(0) {
		t.Errorf("touch in a read-only sandbox = %s", m.Raw)
	}
	outside := filepath.Join(victim, "outside-marker")
	c.call("command/exec", map[string]any{"command": []string{"touch", outside}, "cwd": cwd,
		"sandboxPolicy": map[string]any{"type": "workspaceWrite"}})
	for _, p := range []string{filepath.Join(cwd, "marker"), outside} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("a sandboxed command/exec wrote %s", p)
		}
	}
	if m := c.call("command/exec", map[string]any{"command": []string{"touch", "inside"}, "cwd": cwd,
		"sandboxPolicy": map[string]any{"type": "workspaceWrite"}}); m.get("exitCode") != float64(0) {
		t.Errorf("touch inside the workspace = %s", m.Raw)
	}
}

// TestListenCommandExecPerClient: behind a socket, process ids are each
// connection's own, output goes only to the connection that started the
// process, and a connection that closes takes its processes with it.
func TestListenCommandExecPerClient(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := startListener(t, nil, dir, "ws://127.0.0.1:0", "--ws-auth", "none")
	a, b := twoClients(t, l)
	mark := markFor(t)
	start := func(w *wsClient, word string) {
		w.write(map[string]any{"id": "exec-" + word, "method": "command/exec", "params": map[string]any{
			"command": []string{"bash", "-c", "echo " + word + "; exec -a " + mark + "-" + word + " sleep 60"}, "cwd": dir, "processId": "p", "streamStdoutStderr": true}})
		w.wait(word+"'s output", 0, func(m *message) bool {
			d, _ := base64.StdEncoding.DecodeString(m.str("deltaBase64"))
			return m.Method == "command/exec/outputDelta" && m.str("processId") == "p" && strings.Contains(string(d), word)
		})
	}
	start(a, "alpha")
	start(b, "bravo")
	for _, w := range []*wsClient{a, b} {
		if w.has(func(m *message) bool {
			d, _ := base64.StdEncoding.DecodeString(m.str("deltaBase64"))
			return strings.Contains(string(d), map[*wsClient]string{a: "bravo", b: "alpha"}[w])
		}) {
			t.Errorf("a client got the other's output")
		}
	}
	b.call("command/exec/terminate", map[string]any{"processId": "p"})
	m := b.wait("B's answer", 0, func(m *message) bool { return m.isResponse() && string(m.ID) == `"exec-bravo"` })
	if m.get("exitCode") != float64(137) {
		t.Errorf("B's terminated process = %s", m.Raw)
	}
	if a.has(func(m *message) bool { return m.isResponse() && string(m.ID) == `"exec-alpha"` }) {
		t.Error("B's terminate ended A's process")
	}
	// A goes away: its sleep must not outlive it.
	if len(markedProcesses(mark+"-alpha")) == 0 {
		t.Fatal("A's process is not running before A closes")
	}
	a.c.CloseNow()
	waitGone(t, mark+"-alpha")
}

// waitGone waits until no live process carries mark in its command line.
func waitGone(t *testing.T, mark string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for len(markedProcesses(mark)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a process marked %s outlived its connection", mark)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCommandExecEndsAtStdinEOFInterrupt: under --on-eof interrupt (what
// editors pass, and then close stdin to shut apserver down), a
// command/exec still running when stdin ends is killed at once, answered
// (exit 137), and apserver exits: it does not wait up to the process's
// timeout. Judged from outside: the process, found by a marker in its
// command line, is gone.
func TestCommandExecEndsAtStdinEOFInterrupt(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{"workspaceWrite", "dangerFullAccess"} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, startModel(t), options{args: []string{"--on-eof", "interrupt"}})
			mark := markFor(t)
			id := c.send("command/exec", map[string]any{"command": []string{"bash", "-c", "exec -a " + mark + " sleep 1000"},
				"cwd": t.TempDir(), "timeoutMs": 600000, "processId": "long-1",
				"sandboxPolicy": map[string]any{"type": policy}})
			pid := waitMarked(t, mark)
			start := time.Now()
			c.close() // fails the test unless apserver exits within exitTimeout
			if alive := markedProcesses(mark); len(alive) > 0 {
				t.Errorf("the command/exec process %d is still alive after apserver exited (%v)", pid, alive)
			}
			if m := c.response(id); m.get("exitCode") != float64(137) {
				t.Errorf("command/exec answered %s, want exit code 137 (killed)", m.Raw)
			}
			t.Logf("apserver exited %v after its stdin closed", time.Since(start))
		})
	}
}
