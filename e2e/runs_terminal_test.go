package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// Runs steered from a terminal (docs/runs.md "apserver runs"): apserver
// run asking at each human step, apserver runs … from a second shell, the
// commands every stop prints, and the base branch's outcome in the exit
// code.

// term is a shell's view of one data dir, configuration and model: it
// runs apserver commands as a user types them.
type term struct {
	t                     *testing.T
	model                 *scripted.Server
	home, cfg, data, repo string
	env                   []string
}

func newTerm(t *testing.T, model *scripted.Server, repo string) *term {
	t.Helper()
	home := t.TempDir()
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return &term{t: t, model: model, home: home, cfg: cfg, data: t.TempDir(), repo: repo,
		env: []string{"HOME=" + home, "OPENAI_API_KEY=test", "PATH=" + os.Getenv("PATH")}}
}

// flags are the global flags every command of the test gives, in the order
// the continue hints print them.
func (s *term) flags() []string {
	return []string{"--data-dir", s.data, "--config", s.cfg, "--model", "scripted-model", "--base-url", s.model.URL()}
}

// editor makes $EDITOR a script that runs sed on the file it is given.
func (s *term) editor(sedExpr string) {
	s.t.Helper()
	p := filepath.Join(s.home, "editor.sh")
	script := "#!/bin/sh\nsed -i '" + sedExpr + "' \"$1\"\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		s.t.Fatal(err)
	}
	s.env = append(s.env, "EDITOR="+p)
}

// run runs apserver with args (then the global flags) in the repository,
// stdin given.
func (s *term) run(stdin string, args ...string) execResult {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, append(args, s.flags()...)...)
	cmd.Dir = s.repo
	cmd.Env = s.env
	if stdin != devNull {
		cmd.Stdin = strings.NewReader(stdin)
	} // else /dev/null: a character device, not a terminal
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := execResult{cwd: s.repo, dataDir: s.data, stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		s.t.Fatalf("apserver %v: %v\n%s", args, err, errb.String())
	}
	return r
}

// devNull as the stdin of term.run leaves the command's stdin /dev/null.
const devNull = "\x00/dev/null"

// hint is the command after "to continue:" that starts with prefix, as
// printed.
func hint(t *testing.T, r execResult, prefix string) string {
	t.Helper()
	for _, line := range strings.Split(r.stdout, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, prefix) {
			if i := strings.Index(line, "    #"); i > 0 {
				line = line[:i]
			}
			return line
		}
	}
	t.Fatalf("no %q among the commands to continue:\n%s", prefix, r.stdout)
	return ""
}

// A run steered entirely with apserver runs commands from a second shell:
// each stop prints the exact command, which works as printed.
func TestRunsSteeredFromTheTerminal(t *testing.T) {
	t.Parallel()
	rules := append(shoutRules(t)[:1],
		scripted.Rule{Match: "feedback: keep it POSIX", Steps: []scripted.Step{{Text: planJSON(t, shoutTasks[:2]...)}}})
	rules = append(rules, shoutRules(t)[1:]...)
	model := startModel(t, rules...)
	repo := shoutRepo(t)
	s := newTerm(t, model, repo)
	s.editor(`s/S2 add test_greet.sh/S2 add test_greet.sh, a test script/`)

	// stdin /dev/null is not a terminal: apserver run asks nothing and
	// stops at the plan's approval, as with --no-input.
	r := s.run(devNull, "run", "--base", "main", "add a shout option to greet.sh")
	if r.code != 5 || !strings.Contains(r.stdout, "waiting for planApproval") || strings.Contains(r.stderr, "Approve the plan?") {
		t.Fatalf("apserver run = exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	id := strings.Fields(r.stdout)[1]
	flags := strings.Join(s.flags(), " ")
	if want := "apserver runs approve " + id + " " + flags; hint(t, r, "apserver runs approve") != want {
		t.Errorf("the approve hint = %q, want %q", hint(t, r, "apserver runs approve"), want)
	}
	if !strings.Contains(r.stderr, "main is checked out nowhere") {
		t.Errorf("apserver run did not say what it will do to main:\n%s", r.stderr)
	}

	if l := s.run("", "runs", "list"); l.code != 0 || !regexp.MustCompile(id+`\s+waiting \(planApproval\)\s+planApproval\s+0/3`).MatchString(l.stdout) {
		t.Errorf("runs list = exit %d\n%s%s", l.code, l.stdout, l.stderr)
	}
	sh := s.run("", "runs", "show", id)
	if sh.code != 0 || !regexp.MustCompile(`t3\s+S3 document --shout\s+low\s+t1,t2\s+pending`).MatchString(sh.stdout) ||
		!strings.Contains(sh.stdout, "plan.md") {
		t.Errorf("runs show = exit %d\n%s%s", sh.code, sh.stdout, sh.stderr)
	}

	// Reject: the planner plans again with the feedback; the run stops at
	// the new plan's approval.
	rj := s.run("", "runs", "reject", id, "--feedback", "keep it POSIX")
	if rj.code != 5 || !strings.Contains(rj.stdout, "waiting for planApproval") {
		t.Fatalf("runs reject = exit %d\nstdout:\n%s\nstderr:\n%s", rj.code, rj.stdout, rj.stderr)
	}
	if sh := s.run("", "runs", "show", id); strings.Contains(sh.stdout, "S3 document") || !strings.Contains(sh.stdout, "plan v2") {
		t.Errorf("the plan after the rejection:\n%s", sh.stdout)
	}

	// Edit in $EDITOR: the task's title changes, the run still waits.
	ed := s.run("", "runs", "edit", id)
	if ed.code != 5 || !strings.Contains(ed.stdout, "S2 add test_greet.sh, a test script") {
		t.Fatalf("runs edit = exit %d\nstdout:\n%s\nstderr:\n%s", ed.code, ed.stdout, ed.stderr)
	}

	// The approve command as printed carries the run to its merge.
	line := hint(t, ed, "apserver runs approve")
	ap := s.run("", strings.Fields(strings.TrimPrefix(line, "apserver "))...)
	if ap.code != 0 || !strings.Contains(ap.stdout, "run "+id+" completed") || !strings.Contains(ap.stdout, "merged into main") {
		t.Fatalf("%s = exit %d\nstdout:\n%s\nstderr:\n%s", line, ap.code, ap.stdout, ap.stderr)
	}
	if n := len(strings.Fields(gitOut(t, repo, "log", "main", "--format=%H", "--grep", "test_greet.sh, a test script"))); n != 1 {
		t.Errorf("%d commits of the edited task on main, want 1", n)
	}
	if !strings.Contains(ap.stderr, "task t1 running") {
		t.Errorf("runs approve showed no progress:\n%s", ap.stderr)
	}

	// Errors: an unknown id exits 1 everywhere, naming what to do; a run
	// that waits for nothing has nothing to approve.
	for _, args := range [][]string{{"runs", "approve", "nosuchrun"}, {"runs", "show", "nosuchrun"}, {"run", "--resume", "nosuchrun"}} {
		if r := s.run("", args...); r.code != 1 || !strings.Contains(r.stderr, "no run nosuchrun") || !strings.Contains(r.stderr, "apserver runs list") {
			t.Errorf("apserver %v = exit %d: %s", args, r.code, r.stderr)
		}
	}
	// prune removes the merged branch of a run over (the user is on
	// another branch: merged means into the run's base).
	branch := strings.TrimPrefix(strings.Split(ap.stdout, "\n")[1], "branch ")
	if p := s.run("", "runs", "prune", "--older-than", "0d"); p.code != 0 || !strings.Contains(p.stdout, "run "+id+": removed branch "+branch) {
		t.Errorf("runs prune --older-than 0d = exit %d\n%s%s", p.code, p.stdout, p.stderr)
	}
	if r := s.run("", "runs", "approve", id); r.code != 1 || !strings.Contains(r.stderr, "nothing to approve") {
		t.Errorf("runs approve of a completed run = exit %d: %s", r.code, r.stderr)
	}
	if r := s.run("", "runs", "reject", id); r.code != 2 || !strings.Contains(r.stderr, "--feedback") {
		t.Errorf("runs reject without feedback = exit %d: %s", r.code, r.stderr)
	}
	if r := s.run("", "run", "--max-clarifications", "-5", "x"); r.code != 2 || !strings.Contains(r.stderr, "0 or more") {
		t.Errorf("run --max-clarifications -5 = exit %d: %s", r.code, r.stderr)
	}
}

// apserver run asking at each step (answers piped in with --input, as a
// terminal would type them): the question, the plan edited in $EDITOR,
// the approval; the run merges.
func TestRunAsksAtEachStep(t *testing.T) {
	t.Parallel()
	rules := append(shoutRules(t)[:1],
		scripted.Rule{Match: "The user answered: --shout", Steps: []scripted.Step{{Text: planJSON(t, shoutTasks...)}}},
		scripted.Rule{Match: "Plan this request", Steps: []scripted.Step{{Text: clarificationJSON("which flag name?")}}})
	rules = append(rules, shoutRules(t)[2:]...)
	model := startModel(t, rules...)
	repo := shoutRepo(t)
	s := newTerm(t, model, repo)
	s.editor(`s/S3 document --shout/S3 document the flag/`)

	r := s.run("2\ne\ny\n", "run", "--input", "--base", "main", "add a shout option to greet.sh")
	if r.code != 0 || !strings.Contains(r.stdout, "merged into main") {
		t.Fatalf("apserver run = exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"The planner asks: which flag name?", "2. --shout", "Approve the plan? [y]es, [e]dit",
		"S3 document the flag", "task t3 running", "t1 $ printf", "t3   → completed, exit 0"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the terminal did not show %q:\n%s", want, r.stderr)
		}
	}
	if n := len(strings.Fields(gitOut(t, repo, "log", "main", "--format=%H", "--grep", "S3 document the flag"))); n != 1 {
		t.Errorf("%d commits of the edited task on main, want 1", n)
	}
	if !strings.Contains(r.stdout, "changed on main:") || !strings.Contains(r.stdout, "greet.sh") {
		t.Errorf("apserver run did not list the files that landed:\n%s", r.stdout)
	}
	// The user leaves at a prompt: the run waits, with the command that
	// continues it.
	r = s.run("q\n", "run", "--input", "--base", "main", "add a shout option to greet.sh")
	if r.code != 5 || !strings.Contains(r.stdout, "apserver runs answer ") {
		t.Errorf("apserver run, quit at the question = exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// The checkout promise: apserver run says what it will do to the checked
// out base branch; a merge refused (tracked files changed there) is exit
// 8, not 0, and the base is untouched.
func TestRunLeftForReviewExit(t *testing.T) {
	t.Parallel()
	model := startModel(t, shoutRules(t)...)
	repo := shoutRepo(t)
	git(t, repo, "checkout", "-q", "main")
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("# greet\nmy notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := gitOut(t, repo, "rev-parse", "main")
	s := newTerm(t, model, repo)
	r := s.run("", "run", "--trust-planning", "auto", "add a shout option to greet.sh")
	if r.code != 8 || !strings.Contains(r.stdout, "not merged: left for review") {
		t.Fatalf("apserver run with a dirty checkout = exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "main is checked out in "+repo) || !strings.Contains(r.stderr, "fast-forwards main") {
		t.Errorf("apserver run did not say what it will do to the checkout:\n%s", r.stderr)
	}
	if gitOut(t, repo, "rev-parse", "main") != before {
		t.Error("main moved")
	}
	if l := s.run("", "runs", "list"); !strings.Contains(l.stdout, "completed (left for review)") {
		t.Errorf("runs list:\n%s", l.stdout)
	}
	// prune: nothing is old enough; then the branch left for review is
	// kept unless --force, which removes it.
	id := strings.Fields(r.stdout)[1]
	branch := strings.TrimPrefix(strings.Split(r.stdout, "\n")[1], "branch ")
	if p := s.run("", "runs", "prune"); p.code != 0 || !strings.Contains(p.stdout, "nothing to prune") {
		t.Errorf("runs prune = exit %d\n%s%s", p.code, p.stdout, p.stderr)
	}
	if p := s.run("", "runs", "prune", "--older-than", "0d"); p.code != 0 || !strings.Contains(p.stderr, "branch "+branch+" is not merged into main: kept") {
		t.Errorf("runs prune --older-than 0d = exit %d\n%s%s", p.code, p.stdout, p.stderr)
	}
	gitOut(t, repo, "rev-parse", "--verify", branch)
	if p := s.run("", "runs", "prune", "--older-than", "0d", "--force"); p.code != 0 || !strings.Contains(p.stdout, "run "+id+": removed branch "+branch) {
		t.Errorf("runs prune --force = exit %d\n%s%s", p.code, p.stdout, p.stderr)
	}
	if out, err := exec.Command("git", "-C", repo, "rev-parse", "--verify", "--quiet", branch).Output(); err == nil {
		t.Errorf("the branch is still there after prune --force: %s", out)
	}
}
