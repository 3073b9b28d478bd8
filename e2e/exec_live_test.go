package e2e

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apserver/apserver/model/scripted"
)

// exec's live view streams the message as it arrives: the first words are
// on stderr while the model still holds the rest back; Ctrl-C then says
// why the turn ended.
func TestExecStreamsAndSaysWhyInterrupted(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "stream please", Steps: []scripted.Step{
		{Text: "alpha beta gamma delta", StallAfter: 2},
	}})
	home := t.TempDir()
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, "exec", "--config", cfg, "--data-dir", t.TempDir(), "--model", "scripted-model",
		"--base-url", model.URL(), "--skip-git-repo-check", "stream please")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"HOME=" + home, "OPENAI_API_KEY=test", "PATH=" + os.Getenv("PATH")}
	errp, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// Read stderr until the streamed words show; the model has stalled,
	// so only streaming can have put them there.
	seen := make(chan struct{})
	var got strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := bufio.NewReader(errp)
		buf := make([]byte, 256)
		signalled := false
		for {
			n, err := r.Read(buf)
			got.Write(buf[:n])
			if !signalled && strings.Contains(got.String(), "│ alpha beta") {
				signalled = true
				close(seen)
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Log(err)
				}
				return
			}
		}
	}()
	select {
	case <-seen:
	case <-time.After(waitTimeout):
		t.Fatalf("the first words were not streamed; stderr so far:\n%s", got.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-done
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exec after SIGINT = %v, want exit 130", err)
	}
	out := got.String()
	if strings.Contains(out, "gamma") {
		t.Errorf("words the model never sent were shown:\n%s", out)
	}
	for _, want := range []string{"turn interrupted: interrupted by Ctrl-C", "apserver exec resume "} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr lacks %q:\n%s", want, out)
		}
	}
}

// A failed turn is said once on the terminal, in the live view's words,
// not again as a log line; a negative budget is a usage error.
func TestExecFailureSaidOnce(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "fail please", Steps: []scripted.Step{{HTTPError: 400, ErrorMessage: "bad request"}}})
	r := runExec(t, model, "--skip-git-repo-check", "fail please")
	if r.code == 0 || !strings.Contains(r.stderr, "turn failed: ") || strings.Contains(r.stderr, `msg="turn failed"`) {
		t.Errorf("exec of a failing turn = exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	for _, flag := range []string{"--budget-turns", "--budget-tokens", "--budget-cost", "--budget-time"} {
		v := "-5"
		if flag == "--budget-time" {
			v = "-5m"
		}
		r := runExec(t, model, "--full-auto", flag, v, "x")
		if r.code != 2 || !strings.Contains(r.stderr, flag+" must be 0 (no limit) or more") {
			t.Errorf("exec %s %s = exit %d: %s", flag, v, r.code, r.stderr)
		}
	}
}
