package mcptest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Build compiles mcptestserver into dir and returns its path.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "mcptestserver")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/apserver/apserver/internal/mcptest/mcptestserver")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building mcptestserver: %v\n%s", err, out)
	}
	return bin, nil
}

// StartHTTP runs bin -http (with -token when token is not empty) for the
// test and returns its URL; the process is killed at cleanup. extraEnv is
// added to its environment.
func StartHTTP(t testing.TB, bin, token string, extraEnv ...string) string {
	t.Helper()
	args := []string{"-http"}
	if token != "" {
		args = append(args, "-token", token)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), extraEnv...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("mcptestserver -http: %v", err)
	}
	return strings.TrimSpace(line)
}
