package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runner"
	"github.com/apserver/apserver/session"
	"github.com/apserver/apserver/store"
)

// Exit codes of `apserver run` (docs/runs.md) beyond exec's.
const (
	exitRunWaiting   = 5 // the run waits for a human (plan approval, a high-risk task, a clarification, a repair, paused)
	exitRunFailed    = 6 // the run failed
	exitRunCancelled = 7 // the run was cancelled
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
gives (run/plan/approve) on the same data dir. Requests for a human inside
tasks are declined. Exit codes: 0 completed, 1 error, 2 usage, 5 waits for
a human, 6 failed, 7 cancelled, 130 interrupted (the run stays stored).

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
	maxClar := fs.Int("max-clarifications", -1, "questions a run may ask before it escalates")
	resume := fs.String("resume", "", "take up the stored run with this id instead of starting one (a paused or failed run is resumed)")
	jsonOut := fs.Bool("json", false, "print every run notification as a JSON line ({method, params}) on stdout")
	words, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
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
	if request == "" && *resume == "" {
		fs.Usage()
		return errUsage
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
	if *maxClar >= 0 {
		p.MaxClarifications = maxClar
	}
	if err := p.Validate(); err != nil && *resume == "" {
		return usage(err)
	}

	if f.logFile == "" {
		f.logLevel = "warn"
	}
	log, closeLog, err := newLogger(&f)
	if err != nil {
		return err
	}
	defer closeLog()
	cfg, err := config.Load(config.LoadOptions{UserFile: f.configFile, Workspace: cwd, Getenv: execGetenv, Overrides: f.overrides()})
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	dataDir, err := resolveDataDir(cfg)
	if err != nil {
		return err
	}
	sync := "NORMAL"
	if strings.EqualFold(cfg.Durability, "full") {
		sync = "FULL"
	}
	rc := newRunClient(os.Stdout, os.Stderr, *jsonOut, newExecClient(io.Discard, os.Stderr, execHuman, cwd))
	mgr := session.NewManager(session.Options{
		OpenStore: func() (*store.Store, error) {
			return store.Open(filepath.Join(dataDir, store.FileName), store.Options{Synchronous: sync})
		},
		Config: cfg, Client: rc, Logger: log, Version: version, CoalesceDeltas: true, DataDir: dataDir,
	})
	defer mgr.Close()
	rn := newRunner(cfg, dataDir, mgr, log)
	defer rn.Close()
	rn.Tidy() // worktrees that finished runs left behind

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var (
		res  string
		end  protocol.Run
		over bool // end is known without waiting
	)
	if *resume != "" {
		res = *resume
		rc.setRun(res)
		end, over, err = takeUp(ctx, rn, res)
	} else {
		res, err = execCall(func(r session.Reply) { rn.Start(ctx, p, r) }, "run.id")
		rc.setRun(res)
	}
	if err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) {
			return usage(err)
		}
		return err
	}
	select {
	case <-chanIf(over):
	case end = <-rc.ended:
	case <-ctx.Done():
		fmt.Fprintf(os.Stderr, "apserver run: interrupted; run %s stays stored: apserver run --resume %s takes it up (or apserver serving this data dir)\n", res, res)
		return &exitError{code: exitInterrupted}
	}
	if end.Branch == "" { // a wait: read the whole run
		ch := make(chan protocol.Run, 1)
		rn.Read(context.Background(), protocol.RunParams{RunID: end.ID}, func(v any, err error) {
			if r, ok := v.(protocol.RunResult); ok && err == nil {
				ch <- r.Run
				return
			}
			ch <- end
		})
		end = <-ch
	}
	if !*jsonOut {
		fmt.Fprintf(os.Stdout, "run %s %s\nbranch %s\n", end.ID, end.Status, end.Branch)
		if pr := end.PullRequest; pr != nil {
			fmt.Fprintf(os.Stdout, "pull request #%d %s (%s)\n", pr.Number, pr.URL, pr.State)
		}
		if end.MergeCommit != nil {
			fmt.Fprintf(os.Stdout, "merged into %s as %s\n", end.BaseBranch, *end.MergeCommit)
		}
		if end.WaitingFor != nil {
			fmt.Fprintf(os.Stdout, "waiting for %s\n", *end.WaitingFor)
		}
		if end.Reason != nil {
			fmt.Fprintf(os.Stdout, "reason: %s\n", *end.Reason)
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
	ch := make(chan protocol.Run, 1)
	_, err := execCall(func(reply session.Reply) {
		rn.TakeUp(ctx, id, func(v any, err error) {
			if r, ok := v.(protocol.RunResult); ok {
				ch <- r.Run
			}
			reply(v, err)
		})
	}, "")
	if err != nil {
		return protocol.Run{}, false, err
	}
	r := <-ch
	resumable := r.Status == protocol.RunFailed || (r.Status == protocol.RunPaused && r.WaitingFor != nil && *r.WaitingFor == protocol.WaitResume)
	switch {
	case r.Status == protocol.RunRunning, r.Status == protocol.RunPausing, r.Status == protocol.RunQueued:
		// In flight: it goes on (a pausing run to its pause, a queued one
		// to its slot).
		return r, false, nil
	case resumable:
		_, err := execCall(func(reply session.Reply) { rn.Resume(ctx, protocol.RunParams{RunID: id}, reply) }, "")
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

// Notify prints run notifications and watches for the end.
func (c *runClient) Notify(method string, params any) {
	if !strings.HasPrefix(method, "run/") {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
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
		fmt.Fprintf(c.errw, "  task %s %s: %s\n", p.Task.ID, p.Task.Status, p.Task.Title)
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
