package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// docBlock returns the first fenced block after marker in a doc of the
// repository.
func docBlock(t *testing.T, doc, marker string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", doc))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), marker)
	if !ok {
		t.Fatalf("%s has no %q", doc, marker)
	}
	_, rest, _ = strings.Cut(rest, "```")
	_, rest, _ = strings.Cut(rest, "\n") // the fence's language
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("%s: the block after %q does not end", doc, marker)
	}
	return block
}

// The script and the commands of docs/runs.md "Scripting a run", run as
// written: the script loads, and the shell lines carry the run through
// to its merge with apserver on PATH.
func TestRunScriptFromTheDocs(t *testing.T) {
	t.Parallel()
	script := docBlock(t, "runs.md", "<!-- run-script -->")
	if _, err := scripted.LoadScript(strings.NewReader(script)); err != nil {
		t.Fatalf("the script of docs/runs.md does not load: %v", err)
	}
	lines := docBlock(t, "runs.md", "<!-- example: tested by TestRunScriptFromTheDocs -->")
	repo := t.TempDir()
	gitRepo(t, repo, map[string]string{"greet.sh": "echo \"Hello, $1\"\n", "run.json": script})
	git(t, repo, "config", "user.name", "Test User")
	git(t, repo, "config", "user.email", "test@example.com")
	cmd := exec.Command("bash", "-e", "-c", lines)
	cmd.Dir = repo
	home := t.TempDir()
	cmd.Env = []string{"HOME=" + home, "OPENAI_API_KEY=test", "PATH=" + filepath.Dir(binPath) + ":" + os.Getenv("PATH")}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the commands of docs/runs.md: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "merged into main") {
		t.Errorf("the run did not merge:\n%s", out.String())
	}
	if got := gitOut(t, repo, "show", "main:greet.sh"); !strings.Contains(got, "tr a-z A-Z") {
		t.Errorf("main:greet.sh = %q", got)
	}
}
