package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/model/scripted"
)

// shells is a private tmux server with one shell per session, typed into
// as a user types.
type shells struct {
	t    *testing.T
	sock string
	n    int
}

func newShells(t *testing.T) *shells {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux not found: the terminal test needs it (apt-get install tmux)")
	}
	s := &shells{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock")}
	t.Cleanup(func() { exec.Command("tmux", "-S", s.sock, "kill-server").Run() })
	return s
}

func (s *shells) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.sock}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// open starts a shell named name in dir with env and nothing else.
func (s *shells) open(name, dir string, env []string) {
	s.t.Helper()
	args := []string{"new-session", "-d", "-s", name, "-x", "200", "-y", "50", "-c", dir, "env", "-i"}
	args = append(args, env...)
	args = append(args, "PS1=$ ", "sh")
	s.tmux(args...)
}

// screen is the shell's whole output so far (scrollback too), wrapped
// lines joined.
func (s *shells) screen(name string) string {
	return s.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", name)
}

// wait polls name's screen until text shows after the from-th byte, and
// returns the screen.
func (s *shells) wait(name, text string, from int) string {
	s.t.Helper()
	deadline := time.Now().Add(2 * waitTimeout)
	for {
		sc := s.screen(name)
		if len(sc) >= from && strings.Contains(sc[from:], text) {
			return sc
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: timed out waiting for %q; screen:\n%s", name, text, sc)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// typeLine types line and Enter into name.
func (s *shells) typeLine(name, line string) {
	s.t.Helper()
	s.tmux("send-keys", "-t", name, "-l", line)
	s.tmux("send-keys", "-t", name, "Enter")
}

// command types line, then waits for it to end and returns its exit code
// and its output (the screen after the line).
func (s *shells) command(name, line string) (int, string) {
	s.t.Helper()
	s.n++
	mark := fmt.Sprintf("END%d", s.n)
	from := len(s.screen(name))
	s.typeLine(name, line+"; echo "+mark+"=$?")
	sc := s.wait(name, "\n"+mark+"=", from)
	out := sc[from:]
	i := strings.Index(out, "\n"+mark+"=")
	code, _ := strconv.Atoi(strings.Fields(out[i+len(mark)+2:])[0])
	return code, out[:i]
}

// A user at a terminal: apserver run in a repository shows the planner's
// question and takes the answer, shows the plan, e edits a task in
// $EDITOR, y approves, and the run merges. In a second shell another run
// is steered entirely with apserver runs commands, each the one the
// previous printed.
func TestRunsInATerminal(t *testing.T) {
	t.Parallel()
	rules := append(shoutRules(t)[:1],
		scripted.Rule{Match: "The user answered: --shout", Steps: []scripted.Step{{Text: planJSON(t, shoutTasks...)}}},
		scripted.Rule{Match: "Plan this request", Steps: []scripted.Step{{Text: clarificationJSON("which flag name?")}}})
	rules = append(rules, shoutRules(t)[2:]...)
	model := startModel(t, rules...)
	home := t.TempDir()
	editor := filepath.Join(home, "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nsed -i 's/S3 document --shout/S3 document the flag/' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "OPENAI_API_KEY=test", "EDITOR=" + editor, "TERM=xterm",
		"PATH=" + filepath.Dir(binPath) + ":" + os.Getenv("PATH"),
		"F=--data-dir " + t.TempDir() + " --config " + cfg + " --model scripted-model --base-url " + model.URL()}
	sh := newShells(t)

	// Shell one: apserver run, answered at its prompts.
	one := shoutRepo(t)
	sh.open("one", one, env)
	from := len(sh.screen("one"))
	sh.typeLine("one", `apserver run $F --base main "add a shout option to greet.sh"; echo RUN=$?`)
	sh.wait("one", "Your answer (a number picks an option", from)
	sh.typeLine("one", "2")
	sc := sh.wait("one", "Approve the plan?", from)
	if !regexp.MustCompile(`t3\s+S3 document --shout\s+low\s+t1,t2\s+pending`).MatchString(sc[from:]) {
		t.Errorf("the plan table is not on screen:\n%s", sc)
	}
	mark := len(sc)
	sh.typeLine("one", "e")
	sc = sh.wait("one", "Approve the plan?", mark)
	if !strings.Contains(sc[mark:], "S3 document the flag") {
		t.Errorf("the edited plan is not shown:\n%s", sc[mark:])
	}
	sh.typeLine("one", "y")
	sc = sh.wait("one", "\nRUN=", from)
	if !strings.Contains(sc, "\nRUN=0") || !strings.Contains(sc, "merged into main") || !strings.Contains(sc, "t1 $ printf") {
		t.Fatalf("apserver run at the terminal did not merge:\n%s", sc)
	}
	if n := len(strings.Fields(gitOut(t, one, "log", "main", "--format=%H", "--grep", "S3 document the flag"))); n != 1 {
		t.Errorf("%d commits of the edited task on main, want 1", n)
	}

	// Ctrl-C at a prompt ends apserver run (130), the run kept, with the
	// commands that continue it.
	from = len(sh.screen("one"))
	sh.typeLine("one", `apserver run $F --base main "add a shout option to greet.sh"; echo RUN=$?`)
	sh.wait("one", "Your answer (a number picks an option", from)
	sh.tmux("send-keys", "-t", "one", "C-c")
	sc = sh.wait("one", "\nRUN=", from)
	if !strings.Contains(sc[from:], "\nRUN=130") || !strings.Contains(sc[from:], "interrupted; run ") || !strings.Contains(sc[from:], "apserver runs answer ") {
		t.Errorf("Ctrl-C at the question:\n%s", sc[from:])
	}

	// Shell two: apserver run --no-input stops at the question; every
	// next step is the command the last one printed.
	two := shoutRepo(t)
	sh.open("two", two, env)
	code, out := sh.command("two", `apserver run $F --no-input --base main "add a shout option to greet.sh"`)
	if code != 5 {
		t.Fatalf("apserver run --no-input = exit %d:\n%s", code, out)
	}
	next := func(out, verb string) string {
		t.Helper()
		m := regexp.MustCompile(`(?m)^\s*(apserver runs ` + verb + ` \S+[^#\n]*?)\s*(#.*)?$`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no apserver runs %s among the commands printed:\n%s", verb, out)
		}
		return m[1]
	}
	answer := strings.Replace(next(out, "answer"), `"your answer"`, "--shout", 1)
	if code, out = sh.command("two", answer); code != 5 || !strings.Contains(out, "waiting for planApproval") {
		t.Fatalf("%s = exit %d:\n%s", answer, code, out)
	}
	show := next(out, "show")
	if code, out = sh.command("two", show); code != 0 || !regexp.MustCompile(`t2\s+S2 add test_greet.sh\s+low\s+t1\s+pending`).MatchString(out) {
		t.Fatalf("%s = exit %d:\n%s", show, code, out)
	}
	approve := next(out, "approve")
	if code, out = sh.command("two", approve); code != 0 || !strings.Contains(out, "merged into main") {
		t.Fatalf("%s = exit %d:\n%s", approve, code, out)
	}
	if code, out = sh.command("two", "apserver runs list $F"); code != 0 || strings.Count(out, "completed (merged)") != 2 {
		t.Errorf("apserver runs list = exit %d:\n%s", code, out)
	}
	if n := len(strings.Fields(gitOut(t, two, "log", "main", "--format=%H", "--grep", "Apserver-Task: t3"))); n != 1 {
		t.Errorf("%d commits of t3 on the second repository's main, want 1", n)
	}
}
