package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The docs are part of the suite: every shell example of README.md and
// docs/*.md (a fenced block marked sh, bash or shell) runs as written, with
// the apserver under test on PATH (and as bin/apserver), in an empty
// directory, with a HOME of its own and no model key: bash -e, so the first
// failing command fails the example. An example that cannot run here says
// so in an HTML comment on one of the three lines before its fence, which
// this test reads, counts and lists:
//
//	<!-- example: needs a real model -->       a provider's key and network
//	<!-- example: needs codex -->              OpenAI's Codex CLI
//	<!-- example: skip: REASON -->             anything else (say why)
//	<!-- example: tested by TestName -->       run by that test of e2e/
//
// Nothing else is accepted: an unmarked example that fails fails the test.

// docExample is one shell block of a doc.
type docExample struct {
	file   string // relative to the module root
	line   int    // of the opening fence
	code   string
	marker string // the example: comment's text, "" when none
}

var (
	fenceOpen     = regexp.MustCompile("^```(sh|bash|shell)\\s*$")
	exampleMarker = regexp.MustCompile(`<!--\s*example:\s*(.*?)\s*-->`)
)

// docExamples reads the shell examples of README.md and docs/*.md.
func docExamples(t *testing.T, root string) []docExample {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var out []docExample
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		lines := strings.Split(string(b), "\n")
		for i := 0; i < len(lines); i++ {
			if !fenceOpen.MatchString(lines[i]) {
				continue
			}
			ex := docExample{file: rel, line: i + 1}
			for j := max(0, i-3); j < i; j++ {
				if m := exampleMarker.FindStringSubmatch(lines[j]); m != nil {
					ex.marker = m[1]
				}
			}
			var code []string
			for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
				code = append(code, lines[i])
			}
			ex.code = strings.Join(code, "\n") + "\n"
			out = append(out, ex)
		}
	}
	return out
}

func TestDocsExamples(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]bool{}
	srcs, _ := filepath.Glob("*_test.go")
	for _, f := range srcs {
		b, _ := os.ReadFile(f)
		for _, m := range regexp.MustCompile(`(?m)^func (Test\w+)\(`).FindAllStringSubmatch(string(b), -1) {
			tests[m[1]] = true
		}
	}
	examples := docExamples(t, root)
	if len(examples) == 0 {
		t.Fatal("no shell example found in README.md and docs/")
	}
	var notRun []string
	ran := 0
	for _, ex := range examples {
		where := ex.file + ":" + strconv.Itoa(ex.line)
		switch m := ex.marker; {
		case m == "":
		case m == "needs a real model", m == "needs codex", strings.HasPrefix(m, "skip: ") && len(m) > len("skip: "):
			notRun = append(notRun, where+" ("+m+")")
			continue
		case strings.HasPrefix(m, "tested by "):
			if name := strings.TrimPrefix(m, "tested by "); !tests[name] {
				t.Errorf("%s: says it is tested by %s, which e2e/ does not have", where, name)
			}
			notRun = append(notRun, where+" ("+m+")")
			continue
		default:
			t.Errorf("%s: unknown example marker %q", where, m)
			continue
		}
		ran++
		t.Run(strings.NewReplacer("/", "_", ".", "_", ":", "_").Replace(where), func(t *testing.T) {
			t.Parallel()
			runDocExample(t, ex)
		})
	}
	sort.Strings(notRun)
	t.Logf("%d shell examples run; %d not run here:\n  %s", ran, len(notRun), strings.Join(notRun, "\n  "))
}

// runDocExample runs one example with bash -e in an empty directory.
func runDocExample(t *testing.T, ex docExample) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(binPath, filepath.Join(dir, "bin", "apserver")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", ex.code)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + filepath.Dir(binPath) + ":" + os.Getenv("PATH")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Background jobs an example leaves (a model server) end with it.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		t.Errorf("%s:%d does not run as written: %v\n--- example\n%s--- output\n%s", ex.file, ex.line, err, ex.code, out.String())
	}
}
