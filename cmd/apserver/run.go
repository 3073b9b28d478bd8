package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runner"
	"github.com/apserver/apserver/tools/gitwork"
)

// Exit codes of `apserver run` (docs/runs.md) beyond exec's.
const (
	exitRunWaiting   = 5 // the run waits for a human (plan approval, a high-risk task, a clarification, a repair, paused)
	exitRunFailed    = 6 // the run failed
	exitRunCancelled = 7 // the run was cancelled
	// exitRunLeftForReview: the run completed but nothing landed on the
	// base branch (implementation trust manual, or the merge was refused:
	// a conflict, a failing check after the catch-up, a dirty checkout).
	exitRunLeftForReview = 8
)

// runRun is `apserver run`: one request carried through a run, headless,
// in the current repository. It ends when the run completes, fails or
// waits for a human; a waiting run stays stored, and an editor (or
// apserver serving the same data dir) takes it up.
func runRun(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: apserver run [flags] "request"
       apserver run [flags] --resume RUN_ID

Carries the request through a run in the git repository of the current
directory (or --cd): planner, plan approval, implementer and validator, task
by task, each a commit on a branch of its own in a worktree (docs/runs.md).
Progress goes to stderr; at the end stdout gets the run's id, status, branch
and merge commit (--json: every run notification as a JSON line instead).
It stops when the run completes, fails, or waits for a human: with planning
trust manual (the default) that is the plan approval, which an editor then
gives (run/plan/approve) on the same data dir, or "apserver runs approve ID";
every stop prints the exact command that continues the run. On a terminal
it asks instead at each human step: the plan (y/e/n: e opens $EDITOR), a
question, the high-risk gate, a repair (--no-input: never ask). Before the
run it says what the run will do to the base branch. Requests for a human
inside tasks are declined. Exit codes: 0 completed and merged (or plan
only), 1 error (also an unknown run id), 2 usage, 5 waits for a human, 6
failed, 7 cancelled, 8 completed but left for review (nothing landed),
130 interrupted (the run stays stored).

Examples:
  apserver run "add a shout function"
  apserver run --trust-planning auto --no-input "add a shout function"
  apserver run --resume 3f2a9c1b7d4e

`)
		printFlags(fs.Output(), fs)
	}
	var f serveFlags
	f.register(fs)
	cd := fs.String("cd", "", "the repository to work in (default: the current directory)")
	base := fs.String("base", "", "the base branch (default: the checked-out branch)")
	trustPlanning := fs.String("trust-planning", "", "auto or manual: does the plan need an approval")
	trustImpl := fs.String("trust-implementation", "", "auto or manual: does each task need an approval; auto merges the branch at the end")
	trustFixes := fs.String("trust-fixes", "", "auto or manual: does each fix attempt need an approval")
	autonomy := fs.String("autonomy", "", "off, suggest, semi_auto or full_auto")
	merge := fs.String("merge", "", "ff or squash")
	var maxClar *int
	fs.Func("max-clarifications", "questions a run may ask before it escalates, 0 or more (default: [runs] max_clarifications, 3)", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("must be a whole number, 0 or more, got %q", v)
		}
		maxClar = &n
		return nil
	})
	noInput := fs.Bool("no-input", false, "never ask at the terminal: stop with exit 5 where the run waits for a human, as when stdin is not a terminal")
	input := fs.Bool("input", false, "ask on stdin at each human step even when it is not a terminal (answers piped in)")
	resume := fs.String("resume", "", "take up the stored run with this id instead of starting one (a paused or failed run is resumed)")
	jsonOut := fs.Bool("json", false, "print every run notification as a JSON line ({method, params}) on stdout")
	node := fs.String("node", "", "start from this node of a blueprint instead of a request (apserver blueprint build)")
	bpID := fs.String("blueprint", "", "with --node: the blueprint (default: the newest of the directory)")
	fs.SetOutput(io.Discard) // a bad flag gets one line, not the whole usage
	words, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			fs.Usage()
			return nil
		}
		fmt.Fprintf(os.Stderr, "apserver run: %s (apserver run --help lists the flags)\n", flagError(err))
		return errUsage
	}
	usage := func(err error) error {
		fmt.Fprintln(os.Stderr, "apserver run:", err)
		return errUsage
	}
	request := strings.TrimSpace(strings.Join(words, " "))
	if *resume != "" && request != "" {
		return usage(errors.New("--resume takes no request"))
	}
	if request == "" && *resume == "" && *node == "" {
		return usage(errors.New(`no request: say what the run should do, as in apserver run "add a shout function" (or --resume RUN_ID, or --node NODE)`))
	}
	cwd := *cd
	if cwd == "" {
		var err error
		if cwd, err = os.Getwd(); err != nil {
			return err
		}
	}
	cwd, _ = filepath.Abs(cwd)
	p := protocol.RunStartParams{Cwd: cwd, Request: request}
	if *base != "" {
		p.BaseBranch = base
	}
	tp := &protocol.RunTrustParams{}
	for _, o := range []struct {
		v   string
		dst **protocol.Trust
	}{{*trustPlanning, &tp.Planning}, {*trustImpl, &tp.Implementation}, {*trustFixes, &tp.Fixes}} {
		if o.v != "" {
			t := protocol.Trust(o.v)
			*o.dst = &t
		}
	}
	p.Trust = tp
	if *autonomy != "" {
		a := protocol.Autonomy(*autonomy)
		p.Autonomy = &a
	}
	if *merge != "" {
		m := protocol.MergeMode(*merge)
		p.Merge = &m
	}
	if maxClar != nil {
		p.MaxClarifications = maxClar
	}
	if err := p.Validate(); err != nil && *resume == "" && *node == "" {
		return usage(errors.New(plainError(err)))
	}

	env, err := openRunEnv(&f, cwd, *jsonOut)
	if err != nil {
		return err
	}
	defer env.Close()
	rn, rc := env.rn, env.rc
	ask := interactive(*input, *noInput, *jsonOut)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *node != "" && *resume == "" {
		if err := linkBlueprints(ctx, env.bs, &p, cwd, *bpID, *node); err != nil {
			return err
		}
	}
	var (
		res               string
		end               protocol.Run
		over              bool // end is known without waiting
		baseTip, repoRoot string
		lines             *lineReader // stdin, once a prompt reads it
	)
	if *resume != "" {
		res = *resume
		rc.setRun(res)
		end, over, err = takeUp(ctx, rn, res)
		if err != nil {
			return env.errorOf(res, err)
		}
	} else {
		pre, tip, root, err := preflight(ctx, cwd, p, env.cfg)
		baseTip, repoRoot = tip, root
		if err != nil {
			return &exitError{code: 1, msg: err.Error()}
		}
		if !*jsonOut {
			fmt.Fprintln(os.Stderr, pre)
		}
		started, err := rn.Start(p).Do(ctx)
		if err != nil {
			return &exitError{code: 1, msg: plainError(err)}
		}
		res = started.ID
		rc.setRun(res)
	}
	for {
		if !over {
			end, err = env.wait(ctx, res)
			if errors.Is(err, errInterrupted) {
				fmt.Fprintf(os.Stderr, "apserver run: interrupted; run %s stays stored: apserver run --resume %s%s takes it up (or apserver serving this data dir)\n", res, res, env.hintFlags())
				return &exitError{code: exitInterrupted}
			}
		} else if full, err := env.read(res); err == nil {
			end = full
		}
		over = false
		if !ask || end.Status.Final() {
			break
		}
		if lines == nil {
			lines = newLineReader(os.Stdin)
		}
		pr := &prompter{ctx: ctx, in: lines, out: os.Stderr, echo: !stdinIsTerminal()}
		call, goesOn, err := pr.step(env, end)
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			fmt.Fprintf(os.Stderr, "apserver run: interrupted; run %s stays stored: apserver run --resume %s%s takes it up\n", res, res, env.hintFlags())
			printNext(os.Stdout, end, env.hintFlags())
			return &exitError{code: exitInterrupted}
		}
		if call == nil {
			break // the user left: the run waits, as without a terminal
		}
		if goesOn {
			rc.arm(res)
		}
		nr, err := call.Do(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, plainError(err))
			over = true
			continue
		}
		if !goesOn {
			end, over = nr, true
		}
	}
	if !*jsonOut {
		printOutcome(os.Stdout, end, env.hintFlags())
		if end.MergeCommit != nil && baseTip != "" {
			if files := landedFiles(ctx, repoRoot, baseTip, *end.MergeCommit); len(files) > 0 {
				fmt.Fprintf(os.Stdout, "changed on %s: %s\n", end.BaseBranch, describeFiles(files))
			}
		}
	}
	return runExit(end)
}

// runExit is the exit code for how the run stood when apserver run ended.
// takeUp takes up the stored run id (runner.TakeUp). A run that is over,
// or waits on a human for anything but a resume, is returned as it stands
// (over); a paused (waiting for run/resume) or failed run is resumed, as
// the user asked by naming it; a running one goes on.
func takeUp(ctx context.Context, rn *runner.Runner, id string) (protocol.Run, bool, error) {
	r, err := rn.TakeUp(id).Do(ctx)
	if err != nil {
		return protocol.Run{}, false, err
	}
	resumable := r.Status == protocol.RunFailed || (r.Status == protocol.RunPaused && r.WaitingFor != nil && *r.WaitingFor == protocol.WaitResume)
	switch {
	case r.Status == protocol.RunRunning, r.Status == protocol.RunPausing, r.Status == protocol.RunQueued:
		// In flight: it goes on (a pausing run to its pause, a queued one
		// to its slot).
		return r, false, nil
	case resumable:
		_, err := rn.Resume(protocol.RunParams{RunID: id}).Do(ctx)
		return r, false, err
	}
	return r, true, nil
}

// chanIf is a closed channel when b, else nil (a select case that never
// fires).
func chanIf(b bool) <-chan struct{} {
	if !b {
		return nil
	}
	ch := make(chan struct{})
	close(ch)
	return ch
}

func runExit(r protocol.Run) error {
	switch r.Status {
	case protocol.RunCompleted:
		if r.MergeCommit == nil && r.Autonomy != protocol.AutonomyOff {
			return &exitError{code: exitRunLeftForReview}
		}
		return nil
	case protocol.RunFailed:
		return &exitError{code: exitRunFailed}
	case protocol.RunCancelled:
		return &exitError{code: exitRunCancelled}
	}
	return &exitError{code: exitRunWaiting}
}

// runClient is the session's client for apserver run: run notifications
// go to the terminal, server requests are declined (execClient's Call),
// and the run's end, or its first wait on a human, ends the command.
type runClient struct {
	*execClient
	out, errw io.Writer
	json      bool
	ended     chan protocol.Run

	mu      sync.Mutex
	id      string
	pending []protocol.Run // ends seen before setRun
	done    bool
	taskOf  map[string]string // thread id → task id
	// lastTask is the line last printed for each task.
	lastTask map[string]string
}

// command prints a command a run's thread runs, as it starts and ends
// (not with --json, whose lines are the run's notifications only).
func (c *runClient) command(method string, params any) {
	if c.json {
		return
	}
	b, err := json.Marshal(params)
	if err != nil {
		return
	}
	var p struct {
		ThreadID string `json:"threadId"`
		Item     struct {
			Type     string   `json:"type"`
			Command  string   `json:"command"`
			Status   string   `json:"status"`
			ExitCode *float64 `json:"exitCode"`
		} `json:"item"`
	}
	if json.Unmarshal(b, &p) != nil || p.Item.Type != "commandExecution" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	who := c.taskOf[p.ThreadID]
	if who == "" {
		who = "  "
	}
	if method == protocol.NotifyItemStarted {
		fmt.Fprintf(c.errw, "    %s $ %s\n", who, firstLine(displayCommand(p.Item.Command), 160))
		return
	}
	code := ""
	if p.Item.ExitCode != nil {
		code = fmt.Sprintf(", exit %d", int(*p.Item.ExitCode))
	}
	fmt.Fprintf(c.errw, "    %s   → %s%s\n", who, p.Item.Status, code)
}

func newRunClient(out, errw io.Writer, jsonOut bool, ec *execClient) *runClient {
	return &runClient{execClient: ec, out: out, errw: errw, json: jsonOut, ended: make(chan protocol.Run, 1)}
}

func (c *runClient) setRun(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.id = id
	for _, r := range c.pending {
		c.endLocked(r)
	}
	c.pending = nil
}

func (c *runClient) endLocked(r protocol.Run) {
	if c.done || r.ID != c.id {
		return
	}
	c.done = true
	c.ended <- r
}

// Notify prints run notifications, and the commands the run's threads
// run, and watches for the end.
func (c *runClient) Notify(method string, params any) {
	if method == protocol.NotifyItemStarted || method == protocol.NotifyItemCompleted {
		c.command(method, params)
		return
	}
	if !strings.HasPrefix(method, "run/") {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := params.(protocol.RunTaskUpdatedNotification); ok && p.Task.ThreadID != nil {
		if c.taskOf == nil {
			c.taskOf = map[string]string{}
		}
		c.taskOf[*p.Task.ThreadID] = p.Task.ID
	}
	if c.json {
		b, _ := json.Marshal(map[string]any{"method": method, "params": params})
		fmt.Fprintf(c.out, "%s\n", b)
	}
	var stop *protocol.Run
	switch p := params.(type) {
	case protocol.RunUpdatedNotification:
		line := fmt.Sprintf("run %s: %s, %s", p.RunID, p.Status, p.Stage)
		if p.CurrentTaskID != nil {
			line += ", task " + *p.CurrentTaskID
		}
		if p.Reason != nil {
			line += ": " + *p.Reason
		}
		fmt.Fprintln(c.errw, line)
		// A task thread waiting on an approval or question goes on: the
		// exec client declines them.
		threadAsks := p.Status == protocol.RunWaiting && p.WaitingFor != nil && *p.WaitingFor == protocol.WaitTaskThread
		if (p.Status == protocol.RunWaiting || p.Status == protocol.RunPaused) && !threadAsks {
			stop = &protocol.Run{ID: p.RunID, Status: p.Status, Stage: p.Stage, Reason: p.Reason, WaitingFor: p.WaitingFor}
		}
	case protocol.RunTaskUpdatedNotification:
		// A task's update that changes neither its status nor its title
		// (its thread's id arriving) says nothing new on a terminal.
		line := fmt.Sprintf("  task %s %s: %s\n", p.Task.ID, p.Task.Status, p.Task.Title)
		if c.lastTask == nil {
			c.lastTask = map[string]string{}
		}
		if c.lastTask[p.Task.ID] != line {
			c.lastTask[p.Task.ID] = line
			fmt.Fprint(c.errw, line)
		}
	case protocol.RunClarificationRequestedNotification:
		fmt.Fprintf(c.errw, "  question %s: %s\n", p.Clarification.ID, p.Clarification.Question)
	case protocol.RunCompletedNotification:
		r := p.Run
		stop = &r
	}
	if stop == nil {
		return
	}
	if c.id == "" {
		c.pending = append(c.pending, *stop)
		return
	}
	c.endLocked(*stop)
}

// arm makes the next stop of run id end the wait again (after an answer
// lets the run go on); stops seen before are dropped.
func (c *runClient) arm(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.id = id
	c.done = false
	c.pending = nil
	select {
	case <-c.ended:
	default:
	}
}

// preflight checks, before a run starts, what run/start would refuse, in
// the terminal's words with what to do, and says what the run will do to
// the base branch.
func preflight(ctx context.Context, cwd string, p protocol.RunStartParams, cfg config.Config) (promise, baseTip, root string, err error) {
	promise, baseTip, root, err = preflightErr(ctx, cwd, p, cfg)
	return
}

func preflightErr(ctx context.Context, cwd string, p protocol.RunStartParams, cfg config.Config) (string, string, string, error) {
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return "", "", "", fmt.Errorf("%s is not a directory: pass --cd a directory in a git repository", cwd)
	}
	repo, err := gitwork.Open(ctx, cwd)
	if err != nil {
		return "", "", "", fmt.Errorf("%s is not in a git repository: run it in one (git init, then a first commit), or pass --cd", cwd)
	}
	if ok, err := repo.HasCommit(ctx); err == nil && !ok {
		return "", "", "", errors.New("the repository has no commit yet: make a first commit, then run again")
	}
	base := ""
	if p.BaseBranch != nil {
		base = *p.BaseBranch
	} else if base, err = repo.CurrentBranch(ctx); err != nil || base == "" {
		return "", "", "", errors.New("no branch is checked out (a detached HEAD): pass --base BRANCH, the branch the run starts from and merges into")
	}
	tip, err := repo.HeadSHA(ctx, "refs/heads/"+base)
	if err != nil {
		return "", "", "", fmt.Errorf("--base %q is not a branch of %s: git branch lists them", base, repo.Root())
	}
	trust := protocol.Trust(cfg.Runs.TrustImplementation)
	if p.Trust != nil && p.Trust.Implementation != nil {
		trust = *p.Trust.Implementation
	}
	autonomy := protocol.Autonomy(cfg.Runs.Autonomy)
	if p.Autonomy != nil {
		autonomy = *p.Autonomy
	}
	merge := protocol.MergeMode(cfg.Runs.Merge)
	if p.Merge != nil {
		merge = *p.Merge
	}
	return checkoutPromise(base, checkedOutAt(ctx, repo.Root(), base), trust, autonomy, merge), tip, repo.Root(), nil
}

// checkoutPromise says what a run will do to its base branch, checked out
// at dir ("" when nowhere).
func checkoutPromise(base, dir string, trust protocol.Trust, autonomy protocol.Autonomy, merge protocol.MergeMode) string {
	switch {
	case autonomy == protocol.AutonomyOff:
		return fmt.Sprintf("the run plans only (autonomy off): %s and your checkout stay as they are", base)
	case trust == protocol.TrustManual:
		return fmt.Sprintf("the run works on a branch of its own in a worktree of its own; %s and your checkout stay as they are: the branch is left for review (implementation trust manual)", base)
	}
	how := "fast-forwards " + base + " to the run's branch"
	if merge == protocol.MergeSquash {
		how = "adds one squash commit to " + base
	}
	where := base + " is checked out nowhere, so only its ref moves; no working tree changes"
	if dir != "" {
		where = fmt.Sprintf("%s is checked out in %s, so git merge --ff-only updates the files the run changed there, and the index (if tracked files there have uncommitted changes, nothing is touched and the branch is left for review)", base, dir)
	}
	return fmt.Sprintf("when its tasks pass, the run %s: %s", how, where)
}

// checkedOutAt is the worktree of repo where branch is checked out, or "".
func checkedOutAt(ctx context.Context, root, branch string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "worktree", "list", "--porcelain").Output()
	if err != nil {
		return ""
	}
	dir := ""
	for _, line := range strings.Split(string(out), "\n") {
		if d, ok := strings.CutPrefix(line, "worktree "); ok {
			dir = d
		}
		if line == "branch refs/heads/"+branch {
			return dir
		}
	}
	return ""
}

// landedFiles are the files a merge changed on the base branch, from its
// tip before the run (from) to the merge (to).
func landedFiles(ctx context.Context, root, from, to string) []string {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "diff", "--name-only", from, to).Output()
	if err != nil {
		return nil
	}
	return strings.Fields(string(out))
}

// displayCommand is a command as the user would type it: the shell
// wrapper apserver runs it in (/bin/bash -c '…') taken off.
func displayCommand(s string) string {
	for _, pre := range []string{"/bin/bash -c ", "/bin/bash -lc ", "bash -lc ", "/bin/sh -c ", "sh -c "} {
		rest, ok := strings.CutPrefix(s, pre)
		if !ok {
			continue
		}
		if len(rest) >= 2 && rest[0] == '\'' && rest[len(rest)-1] == '\'' {
			inner := strings.ReplaceAll(rest[1:len(rest)-1], `'\''`, `'`)
			if !strings.Contains(strings.ReplaceAll(rest[1:len(rest)-1], `'\''`, ""), "'") {
				return inner
			}
		}
		return s
	}
	return s
}

// describeFiles lists the files a run landed, the run's own records under
// .apserver/ counted rather than named.
func describeFiles(files []string) string {
	var mine []string
	ours := 0
	for _, f := range files {
		if strings.HasPrefix(f, ".apserver/") {
			ours++
			continue
		}
		mine = append(mine, f)
	}
	s := strings.Join(mine, " ")
	if ours > 0 {
		if s != "" {
			s += " "
		}
		s += fmt.Sprintf("(and %d of the run's records under .apserver/)", ours)
	}
	return s
}
