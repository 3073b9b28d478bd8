package demo

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// child is the apserver app-server process the demo talks to.
type child struct {
	cmd     *exec.Cmd
	stdin   *os.File // our end of its stdin
	stdout  *os.File // our end of its stdout
	logPath string   // its stderr
	exited  chan struct{}
	waitErr error // set before exited is closed
}

// startChild runs `exe serve …` in dir with its stdio on pipes. The pipes
// are plain os.Pipe files rather than Cmd.StdoutPipe, so that waiting for
// the process (to notice it dying) never races with reading its output.
func startChild(exe, dir, configFile, dataDir, logPath, baseURL string) (*child, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := exec.Command(exe, "serve",
		"--config", configFile,
		"--data-dir", dataDir,
		"--model", "demo-model",
		"--base-url", baseURL,
		"--wire", "responses")
	cmd.Dir = dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, logf
	cmd.Env = childEnv(os.Environ())
	err = cmd.Start()
	// The child holds its own copies now.
	inR.Close()
	outW.Close()
	logf.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("starting %s serve: %w", exe, err)
	}
	c := &child{cmd: cmd, stdin: inW, stdout: outR, logPath: logPath, exited: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// childEnv keeps the caller's environment but drops anything that would
// point the server at a real provider or another configuration, and sets the
// placeholder key the scripted model accepts.
func childEnv(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if strings.HasPrefix(kv, "OPENAI_") || strings.HasPrefix(kv, "APSERVER_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "OPENAI_API_KEY=demo")
}

// finish closes the child's stdin, which tells it to exit, and waits up to
// grace for it to do so; then it kills it. It returns the exit error, or an
// error saying the child had to be killed.
func (c *child) finish(grace time.Duration) error {
	c.stdin.Close()
	select {
	case <-c.exited:
		c.stdout.Close()
		if c.waitErr != nil {
			return fmt.Errorf("apserver exited with an error after its stdin closed: %w", c.waitErr)
		}
		return nil
	case <-time.After(grace):
		c.kill()
		return fmt.Errorf("apserver did not exit within %s of its stdin closing; killed it", grace)
	}
}

// exitedOnItsOwn waits up to d for the child to exit and reports whether it
// did, with its wait error.
func (c *child) exitedOnItsOwn(d time.Duration) (bool, error) {
	select {
	case <-c.exited:
		return true, c.waitErr
	case <-time.After(d):
		return false, nil
	}
}

// kill ends the child if it is still running and waits for it.
func (c *child) kill() {
	select {
	case <-c.exited:
	default:
		c.cmd.Process.Kill()
		<-c.exited
	}
	c.stdin.Close()
	c.stdout.Close()
}

// logTail returns the last n lines of the child's stderr.
func (c *child) logTail(n int) []string {
	b, err := os.ReadFile(c.logPath)
	if err != nil {
		return []string{"(could not read the log: " + err.Error() + ")"}
	}
	lines := strings.Split(string(bytes.TrimRight(b, "\n")), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}
