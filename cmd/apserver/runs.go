package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/apserver/apserver/blueprints"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runner"
	"github.com/apserver/apserver/session"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/tools/gitwork"
)

// `apserver runs`: the runs stored in the data dir, listed, shown and
// steered from a terminal (docs/runs.md). Each command works as
// `apserver run` does, with a session and a runner of its own over the
// store; a command that lets a run go on (approve, reject, edit, answer,
// resume) carries it to its next stop, as `apserver run --resume` would,
// with the same output and exit codes.

// runEnv is a session and a runner over the data dir, with the run client
// that prints run notifications.
type runEnv struct {
	f       *serveFlags
	cfg     config.Config
	dataDir string
	log     *slog.Logger
	mgr     *session.Manager
	rn      *runner.Runner
	bs      *blueprints.Service // a run from a blueprint records its evidence there
	rc      *runClient
	closers []func()
}

// openRunEnv opens the data dir f names (or the user's) for the
// repository at cwd.
func openRunEnv(f *serveFlags, cwd string, jsonOut bool) (*runEnv, error) {
	e := &runEnv{f: f}
	if f.logFile == "" {
		f.logLevel = "warn"
	}
	log, closeLog, err := newLogger(f)
	if err != nil {
		return nil, err
	}
	if f.logFile == "" {
		log = slog.New(shownInView{log.Handler()})
	}
	e.log = log
	e.closers = append(e.closers, closeLog)
	cfg, err := config.Load(config.LoadOptions{UserFile: f.configFile, Workspace: cwd, Getenv: execGetenv, Overrides: f.overrides()})
	if err != nil {
		e.Close()
		return nil, err
	}
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	e.cfg = cfg
	if e.dataDir, err = resolveDataDir(cfg); err != nil {
		e.Close()
		return nil, err
	}
	sync := "NORMAL"
	if strings.EqualFold(cfg.Durability, "full") {
		sync = "FULL"
	}
	e.rc = newRunClient(os.Stdout, os.Stderr, jsonOut, newExecClient(io.Discard, os.Stderr, execHuman, cwd))
	dataDir := e.dataDir
	e.mgr = session.NewManager(session.Options{
		OpenStore: func() (*store.Store, error) {
			return store.Open(filepath.Join(dataDir, store.FileName), store.Options{Synchronous: sync})
		},
		Config: cfg, Client: e.rc, Logger: log, Version: version, CoalesceDeltas: true, DataDir: dataDir,
	})
	e.rn = newRunner(cfg, dataDir, e.mgr, log)
	// Every headless runner has the blueprints service: a run from a
	// blueprint taken up by apserver runs records its evidence too.
	e.bs = newBlueprints(cfg, e.mgr, nil, log)
	e.rn.SetBlueprints(e.bs)
	e.closers = append(e.closers, func() { e.mgr.Close() }, e.bs.Close, e.rn.Close)
	e.rn.Tidy() // worktrees that finished runs left behind
	return e, nil
}

// Close stops the runner and the session (runner first), then the log.
func (e *runEnv) Close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
	e.closers = nil
}

// read is the run as stored.
func (e *runEnv) read(id string) (protocol.Run, error) {
	return e.rn.Read(protocol.RunParams{RunID: id}).Do(context.Background())
}

// errInterrupted ends a command whose run was interrupted (exit 130).
var errInterrupted = errors.New("interrupted")

// wait waits for the run's next stop (rc armed for id) and reads it.
func (e *runEnv) wait(ctx context.Context, id string) (protocol.Run, error) {
	var end protocol.Run
	select {
	case end = <-e.rc.ended:
	case <-ctx.Done():
		return protocol.Run{}, errInterrupted
	}
	if full, err := e.read(end.ID); err == nil {
		// The stored run is the whole of it (plan, clarifications); the
		// notification only what changed.
		if end.Status.Final() || full.Status == end.Status {
			return full, nil
		}
	}
	return end, nil
}

// hintFlags are the flags a command to continue needs to reach the same
// data dir, configuration and model, shell-quoted.
func (e *runEnv) hintFlags() string {
	var b strings.Builder
	for _, o := range []struct{ name, v string }{{"data-dir", e.f.dataDir}, {"config", e.f.configFile},
		{"model", e.f.model}, {"provider", e.f.provider}, {"base-url", e.f.baseURL}, {"wire", e.f.wire}} {
		if o.v != "" {
			fmt.Fprintf(&b, " --%s %s", o.name, shellQuote(o.v))
		}
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@,+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// nextSteps are the exact commands that continue a run that stopped
// waiting on a human, one per line; empty for a run that is over.
func nextSteps(r protocol.Run, flags string) []string {
	cmd := func(verb, rest string) string {
		s := "apserver runs " + verb + " " + r.ID
		if rest != "" {
			s += " " + rest
		}
		return s + flags
	}
	show := cmd("show", "") + "    # the plan, tasks and what the run waits for"
	if r.Status == protocol.RunFailed {
		return []string{cmd("resume", "") + "    # try the failed step again", show, cmd("cancel", "")}
	}
	if r.Status.Final() {
		return nil
	}
	w := protocol.RunWaitingFor("")
	if r.WaitingFor != nil {
		w = *r.WaitingFor
	}
	switch w {
	case protocol.WaitPlanApproval:
		return []string{show, cmd("approve", ""), cmd("edit", "") + "    # the plan in $EDITOR", cmd("reject", `--feedback "what to change"`)}
	case protocol.WaitTaskApproval:
		return []string{show, cmd("approve", "") + "    # run the high-risk task" + taskSuffix(r.CurrentTaskID), cmd("answer", "--reject") + "    # skip it"}
	case protocol.WaitClarification:
		return []string{show, cmd("answer", `--text "your answer"`)}
	case protocol.WaitRepair:
		return []string{show, cmd("approve", "") + "    # insert the proposed fix task", cmd("cancel", "")}
	case protocol.WaitTaskThread:
		return []string{show, "apserver run --resume " + r.ID + flags + "    # once the task's thread is answered (an editor on this data dir)"}
	}
	switch r.Status {
	case protocol.RunPaused:
		return []string{show, cmd("resume", "")}
	case protocol.RunRunning, protocol.RunPausing, protocol.RunQueued:
		return []string{"apserver run --resume " + r.ID + flags + "    # carry it on here"}
	}
	return []string{show}
}

func taskSuffix(id *string) string {
	if id == nil {
		return ""
	}
	return " " + *id
}

// printNext prints the commands that continue r, if any, to w.
func printNext(w io.Writer, r protocol.Run, flags string) {
	steps := nextSteps(r, flags)
	if len(steps) == 0 {
		return
	}
	fmt.Fprintln(w, "to continue:")
	for _, s := range steps {
		fmt.Fprintln(w, "  "+s)
	}
}

// printOutcome prints how the run stands on stdout: id and status, branch,
// whether anything landed on the base branch, what it waits for, and the
// commands that continue it.
func printOutcome(w io.Writer, r protocol.Run, flags string) {
	fmt.Fprintf(w, "run %s %s\nbranch %s\n", r.ID, r.Status, r.Branch)
	if pr := r.PullRequest; pr != nil {
		fmt.Fprintf(w, "pull request #%d %s (%s)\n", pr.Number, pr.URL, pr.State)
	}
	if r.MergeCommit != nil {
		fmt.Fprintf(w, "merged into %s as %s\n", r.BaseBranch, *r.MergeCommit)
	} else if r.Status == protocol.RunCompleted && r.Autonomy != protocol.AutonomyOff {
		fmt.Fprintf(w, "not merged: left for review; %s is unchanged (git merge %s lands it)\n", r.BaseBranch, r.Branch)
	}
	if r.WaitingFor != nil {
		fmt.Fprintf(w, "waiting for %s\n", *r.WaitingFor)
	}
	if r.Reason != nil {
		fmt.Fprintf(w, "reason: %s\n", *r.Reason)
	}
	printNext(w, r, flags)
}

// planTable writes the run's plan as a table: task, risk, dependencies,
// status, then each task's checks.
func planTable(w io.Writer, r protocol.Run) {
	p := r.Plan
	state := "not approved"
	if p.Approved {
		state = "approved"
	}
	fmt.Fprintf(w, "plan v%d (%s): %s\n", p.Version, state, strings.TrimSpace(p.Summary))
	if len(p.Tasks) == 0 {
		fmt.Fprintln(w, "  (no plan yet)")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  TASK\tTITLE\tRISK\tDEPENDS ON\tSTATUS")
	for _, t := range p.Tasks {
		deps := strings.Join(t.Dependencies, ",")
		if deps == "" {
			deps = "-"
		}
		st := string(t.Status)
		if t.RetryCount > 0 {
			st += fmt.Sprintf(" (retry %d)", t.RetryCount)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", t.ID, oneLine(t.Title), t.Risk, deps, st)
	}
	tw.Flush()
	for _, t := range p.Tasks {
		for _, c := range t.Acceptance.Checks {
			fmt.Fprintf(w, "  %s check: %s\n", t.ID, c)
		}
	}
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// showRun writes what `apserver runs show` prints: the run, its plan, what
// it waits for.
func showRun(w io.Writer, r protocol.Run) {
	fmt.Fprintf(w, "run %s: %s, %s\n", r.ID, r.Status, r.Stage)
	fmt.Fprintf(w, "request: %s\n", r.Request)
	fmt.Fprintf(w, "repository %s, base %s, branch %s\n", r.Cwd, r.BaseBranch, r.Branch)
	fmt.Fprintf(w, "trust: planning %s, implementation %s, fixes %s; autonomy %s; merge %s\n",
		r.Trust.Planning, r.Trust.Implementation, r.Trust.Fixes, r.Autonomy, r.Merge)
	if r.Worktree != "" {
		if _, err := os.Stat(r.Worktree); err == nil {
			fmt.Fprintf(w, "worktree %s (plan: %s)\n", r.Worktree, filepath.Join(r.Worktree, ".apserver", "runs", r.ID, "plan.md"))
		}
	}
	planTable(w, r)
	if q := openQuestion(r); q != nil {
		fmt.Fprintf(w, "question %s: %s\n", q.ID, q.Question)
		if q.Context != "" {
			fmt.Fprintf(w, "  context: %s\n", q.Context)
		}
		for i, o := range q.Options {
			fmt.Fprintf(w, "  %d. %s\n", i+1, o)
		}
	}
	if rp := r.RepairProposal; rp != nil {
		fmt.Fprintf(w, "task %s is blocked: %s\n  proposed fix: %s %s\n", rp.TaskID, oneLine(rp.Failure), rp.ProposedTask.ID, rp.ProposedTask.Title)
	}
	if r.WaitingFor != nil && *r.WaitingFor == protocol.WaitTaskApproval && r.CurrentTaskID != nil {
		fmt.Fprintf(w, "task %s is high-risk and waits for approval\n", *r.CurrentTaskID)
	}
	if r.MergeCommit != nil {
		fmt.Fprintf(w, "merged into %s as %s\n", r.BaseBranch, *r.MergeCommit)
	}
	if r.Reason != nil {
		fmt.Fprintf(w, "reason: %s\n", *r.Reason)
	}
}

// openQuestion is the run's unanswered clarification, if any.
func openQuestion(r protocol.Run) *protocol.RunClarification {
	for i := len(r.Clarifications) - 1; i >= 0; i-- {
		if r.Clarifications[i].Answer == nil {
			return &r.Clarifications[i]
		}
	}
	return nil
}

// editablePlan is the plan as the user edits it in $EDITOR (TOML).
type editablePlan struct {
	Tasks []editableTask `toml:"tasks"`
}

type editableTask struct {
	ID           string   `toml:"id"`
	Title        string   `toml:"title"`
	Description  string   `toml:"description"`
	Kind         string   `toml:"kind"`
	Risk         string   `toml:"risk"`
	Dependencies []string `toml:"dependencies"`
	Estimate     string   `toml:"estimate"`
	Criteria     []string `toml:"criteria"`
	Checks       []string `toml:"checks"`
	Files        []string `toml:"files"`
}

const editHeader = `# The plan of run %s. Edit, delete, add or reorder [[tasks]], save and
# quit; the whole list replaces the plan (run/plan/update). risk is low,
# medium or high; dependencies name other tasks' ids; checks are shell
# commands that must exit 0. An empty file leaves the plan as it was.

`

// planText is the plan in the form the editor gets.
func planText(r protocol.Run) (string, error) {
	var ep editablePlan
	for _, t := range r.Plan.Tasks {
		ep.Tasks = append(ep.Tasks, editableTask{ID: t.ID, Title: t.Title, Description: t.Description, Kind: t.Kind,
			Risk: string(t.Risk), Dependencies: nonNil(t.Dependencies), Estimate: t.Estimate,
			Criteria: nonNil(t.Acceptance.Criteria), Checks: nonNil(t.Acceptance.Checks), Files: nonNil(t.Acceptance.Files)})
	}
	var b strings.Builder
	fmt.Fprintf(&b, editHeader, r.ID)
	if err := toml.NewEncoder(&b).Encode(ep); err != nil {
		return "", err
	}
	return b.String(), nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// parsePlanText reads the edited plan back; nil tasks means "unchanged".
func parsePlanText(text string) ([]protocol.PlanTask, error) {
	var ep editablePlan
	md, err := toml.Decode(text, &ep)
	if err != nil {
		return nil, fmt.Errorf("the edited plan is not valid TOML: %w", err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("the edited plan has a key apserver does not know: %s", und[0])
	}
	if len(ep.Tasks) == 0 {
		return nil, nil
	}
	out := make([]protocol.PlanTask, 0, len(ep.Tasks))
	for _, t := range ep.Tasks {
		kind := t.Kind
		if kind == "" {
			kind = protocol.TaskKindFileEdit
		}
		out = append(out, protocol.PlanTask{ID: t.ID, Title: t.Title, Description: t.Description, Kind: kind,
			Dependencies: nonNil(t.Dependencies), Risk: protocol.TaskRisk(t.Risk), Estimate: t.Estimate,
			Acceptance: protocol.TaskAcceptance{Criteria: nonNil(t.Criteria), Checks: nonNil(t.Checks), Files: nonNil(t.Files)}})
	}
	if err := protocol.ValidateTasks("tasks", out); err != nil {
		return nil, errors.New(plainError(err))
	}
	return out, nil
}

// editPlan opens the plan in $EDITOR (VISUAL, then EDITOR, then vi) and
// returns the edited tasks; nil when the plan was left unchanged.
func editPlan(r protocol.Run, in io.Reader, out io.Writer) ([]protocol.PlanTask, error) {
	text, err := planText(r)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp("", "apserver-plan-*.toml")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return nil, err
	}
	f.Close()
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	if editor == "" {
		editor = "vi"
	}
	cmd := exec.Command("sh", "-c", editor+` "$1"`, "editor", f.Name())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, out, os.Stderr
	if tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil && in == os.Stdin {
		// An editor wants the terminal even when stdin was redirected.
		defer tty.Close()
		cmd.Stdin, cmd.Stdout = tty, tty
	}
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("the editor (%s) failed: %w; the plan is unchanged", editor, err)
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		return nil, err
	}
	if string(b) == text {
		return nil, nil
	}
	return parsePlanText(string(b))
}

// plainError is err in the terminal's words: no JSON-RPC prefix.
func plainError(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "Invalid params: ")
	s = strings.TrimPrefix(s, "Invalid request: ")
	return s
}

// runNotFound reports whether err says that no run has the id.
func runNotFound(err error) bool {
	return err != nil && strings.Contains(err.Error(), "run not found: ")
}

// errorOf turns a runner error into the command's: an unknown id exits 1
// (as an unknown thread id does in exec) with a hint, anything else the
// runner refused exits 1 in plain words.
func (e *runEnv) errorOf(id string, err error) error {
	if runNotFound(err) {
		return &exitError{code: 1, msg: fmt.Sprintf("no run %s in %s: apserver runs list%s shows the runs stored there", id, e.dataDir, e.hintFlags())}
	}
	return &exitError{code: 1, msg: plainError(err)}
}

// runsUsage is `apserver runs --help`.
const runsUsage = `Usage: apserver runs COMMAND [flags] [RUN_ID]

The runs stored in the data dir, steered from a terminal (docs/runs.md).

Commands:
  list                          every run, newest first (--cwd DIR: of one repository)
  show ID                       the run, its plan as a table, what it waits for
  approve ID                    approve what the run waits for: the plan, the
                                high-risk task, the repair proposal
  reject ID --feedback TEXT     send the plan back to the planner
  edit ID                       edit the plan in $EDITOR (TOML), then ask to approve it
  answer ID --text TEXT         answer the run's question (a clarification)
  answer ID --approve|--reject  answer the high-risk gate (reject skips the task)
                                or the repair proposal (approve inserts the fix)
  pause ID | resume ID | cancel ID
  prune [--older-than 30d] [--force]
                                remove the worktrees and merged branches of runs
                                over for longer than that (--force: unmerged too)
  import [--repo DIR]           rebuild the runs recorded in a repository's branches
                                into this data dir (a lost data dir, a second machine)

approve, reject, edit, answer and resume carry the run on to its next stop,
as "apserver run --resume ID" does, with the same output and exit codes
(0 merged, 5 waits for a human, 6 failed, 7 cancelled, 8 completed but left
for review); --no-wait only records the answer. An unknown run id exits 1.

Examples:
  apserver runs list
  apserver runs show 3f2a9c1b7d4e
  apserver runs approve 3f2a9c1b7d4e
  apserver runs reject 3f2a9c1b7d4e --feedback "one task per file"
  apserver runs answer 3f2a9c1b7d4e --text "use POSIX sh"
  apserver runs prune --older-than 30d

`

// runRuns is `apserver runs`.
func runRuns(args []string) error {
	verb := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		verb, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("runs "+verb, flag.ContinueOnError)
	var f serveFlags
	f.register(fs)
	cwdFlag := fs.String("cwd", "", "list: only the runs of the repository at DIR")
	feedback := fs.String("feedback", "", "reject: what the planner should change")
	text := fs.String("text", "", "answer: the answer to the run's question")
	approve := fs.Bool("approve", false, "answer: approve the gate or the repair proposal")
	reject := fs.Bool("reject", false, "answer: skip the high-risk task")
	noWait := fs.Bool("no-wait", false, "record the answer and return; do not carry the run on")
	jsonOut := fs.Bool("json", false, "print every run notification as a JSON line while the run goes on")
	olderThan := fs.String("older-than", "30d", "prune: runs over for longer than this (30d, 12h, 90m)")
	force := fs.Bool("force", false, "prune: remove branches that were not merged too")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), runsUsage)
		printFlags(fs.Output(), fs)
	}
	if verb == "import" {
		return runRunsImport(args) // runs_import.go: its own flags
	}
	if verb == "help" {
		fs.SetOutput(os.Stdout)
		fs.Usage()
		return nil
	}
	fs.SetOutput(io.Discard) // a bad flag gets one line, not the whole usage
	words, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			fs.Usage()
			return nil
		}
		fmt.Fprintf(os.Stderr, "apserver runs %s: %s (apserver runs --help lists the flags)\n", verb, flagError(err))
		return errUsage
	}
	usage := func(format string, a ...any) error {
		fmt.Fprintf(os.Stderr, "apserver runs %s: %s\n", verb, fmt.Sprintf(format, a...))
		return errUsage
	}
	needID := func() (string, error) {
		if len(words) != 1 {
			return "", usage("give one run id (apserver runs list shows them)")
		}
		return words[0], nil
	}
	switch verb {
	case "list", "prune":
		if len(words) != 0 {
			return usage("takes no run id")
		}
	case "show", "approve", "reject", "edit", "answer", "pause", "resume", "cancel":
		if _, err := needID(); err != nil {
			return err
		}
	case "":
		fmt.Fprint(os.Stderr, "apserver runs: which command? (list, show, approve, …)\n\n"+runsUsage)
		return errUsage
	default:
		fmt.Fprintf(os.Stderr, "apserver runs: unknown command %q\n\n%s", verb, runsUsage)
		return errUsage
	}
	if verb == "reject" && strings.TrimSpace(*feedback) == "" {
		return usage(`--feedback TEXT is required: say what the planner should change`)
	}
	if verb == "answer" {
		n := 0
		for _, b := range []bool{*approve, *reject, *text != ""} {
			if b {
				n++
			}
		}
		if n != 1 {
			return usage("give exactly one of --text TEXT, --approve or --reject")
		}
	}
	var age time.Duration
	if verb == "prune" {
		if age, err = parseAge(*olderThan); err != nil {
			return usage("--older-than: %v", err)
		}
	}
	cwd, _ := os.Getwd()
	e, err := openRunEnv(&f, cwd, *jsonOut)
	if err != nil {
		return err
	}
	defer e.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	switch verb {
	case "list":
		return e.list(*cwdFlag)
	case "prune":
		return e.prune(ctx, age, *force)
	}
	id := words[0]
	r, err := e.read(id)
	if err != nil {
		return e.errorOf(id, err)
	}
	switch verb {
	case "show":
		showRun(os.Stdout, r)
		printNext(os.Stdout, r, e.hintFlags())
		return nil
	case "pause":
		return e.act(ctx, id, false, e.rn.Pause(protocol.RunParams{RunID: id}))
	case "cancel":
		return e.act(ctx, id, false, e.rn.Cancel(protocol.RunParams{RunID: id}))
	case "resume":
		return e.act(ctx, id, !*noWait, e.rn.Resume(protocol.RunParams{RunID: id}))
	case "reject":
		return e.act(ctx, id, !*noWait, e.rn.PlanReject(protocol.RunPlanRejectParams{RunID: id, Feedback: *feedback}))
	case "edit":
		if r.WaitingFor == nil || *r.WaitingFor != protocol.WaitPlanApproval {
			return &exitError{code: 1, msg: fmt.Sprintf("run %s is %s, not waiting for its plan's approval: its plan can no longer be edited", id, describeWait(r))}
		}
		tasks, err := editPlan(r, os.Stdin, os.Stdout)
		if err != nil {
			return &exitError{code: 1, msg: err.Error()}
		}
		if tasks == nil {
			fmt.Fprintln(os.Stderr, "the plan is unchanged")
			printNext(os.Stdout, r, e.hintFlags())
			return &exitError{code: exitRunWaiting}
		}
		nr, err := e.rn.PlanUpdate(protocol.RunPlanUpdateParams{RunID: id, Tasks: tasks}).Do(ctx)
		if err != nil {
			return e.errorOf(id, err)
		}
		planTable(os.Stdout, nr)
		printNext(os.Stdout, nr, e.hintFlags())
		return &exitError{code: exitRunWaiting}
	case "approve", "answer":
		call, err := humanAnswer(e.rn, r, verb == "approve" || *approve, *reject, *text)
		if err != nil {
			return &exitError{code: 1, msg: err.Error()}
		}
		return e.act(ctx, id, !*noWait, call)
	}
	return nil
}

// describeWait is how the run stands, in words: "waiting for clarification".
func describeWait(r protocol.Run) string {
	if r.WaitingFor != nil {
		return fmt.Sprintf("%s for %s", r.Status, *r.WaitingFor)
	}
	return string(r.Status)
}

// humanAnswer is the runner call that answers what r waits for: approve
// (the plan, the gate, the repair), reject (the gate: skip the task) or
// text (the open question).
func humanAnswer(rn *runner.Runner, r protocol.Run, approve, reject bool, text string) (runner.Call[protocol.Run], error) {
	w := protocol.RunWaitingFor("")
	if r.WaitingFor != nil {
		w = *r.WaitingFor
	}
	id := r.ID
	switch {
	case text != "":
		q := openQuestion(r)
		if w != protocol.WaitClarification || q == nil {
			return nil, fmt.Errorf("run %s asks no question (it is %s): --text answers a clarification", id, describeWait(r))
		}
		return rn.ClarificationAnswer(protocol.RunClarificationAnswerParams{RunID: id, ClarificationID: q.ID, Answer: text}), nil
	case w == protocol.WaitPlanApproval && approve:
		return rn.PlanApprove(protocol.RunParams{RunID: id}), nil
	case w == protocol.WaitPlanApproval:
		return nil, fmt.Errorf("run %s waits for its plan's approval: apserver runs reject %s --feedback TEXT sends it back", id, id)
	case w == protocol.WaitTaskApproval && r.CurrentTaskID != nil:
		d := protocol.TaskDecisionApprove
		if reject {
			d = protocol.TaskDecisionSkip
		}
		task := *r.CurrentTaskID
		return rn.TaskApprove(protocol.RunTaskApproveParams{RunID: id, TaskID: task, Decision: &d}), nil
	case w == protocol.WaitRepair && r.RepairProposal != nil && approve:
		task := r.RepairProposal.TaskID
		return rn.RepairApprove(protocol.RunRepairApproveParams{RunID: id, TaskID: task}), nil
	case w == protocol.WaitRepair:
		return nil, fmt.Errorf("run %s is blocked: apserver runs approve %s inserts the proposed fix, apserver runs cancel %s ends the run", id, id, id)
	}
	return nil, fmt.Errorf("run %s is %s: nothing to approve or answer", id, describeWait(r))
}

// act sends a human's answer to run id; with carry, it then carries the
// run on to its next stop and reports it as apserver run does.
func (e *runEnv) act(ctx context.Context, id string, carry bool, call runner.Call[protocol.Run]) error {
	if carry {
		// Take the run up first (its work in flight asked for again), so
		// that the answer lands on a run this process drives.
		if _, err := e.rn.TakeUp(id).Do(ctx); err != nil {
			return e.errorOf(id, err)
		}
		e.rc.arm(id)
	}
	r, err := call.Do(ctx)
	if err != nil {
		return e.errorOf(id, err)
	}
	if !carry || r.Status.Final() {
		if r.Status.Final() {
			printOutcome(os.Stdout, r, e.hintFlags())
			return runExit(r)
		}
		fmt.Fprintf(os.Stdout, "run %s %s\n", r.ID, describeWait(r))
		if r.Status == protocol.RunPaused || r.Status == protocol.RunPausing {
			printNext(os.Stdout, r, e.hintFlags())
		} else if !r.Status.Final() {
			fmt.Fprintf(os.Stdout, "to carry it on here:\n  apserver run --resume %s%s\n", r.ID, e.hintFlags())
		}
		return nil
	}
	end, err := e.wait(ctx, id)
	if errors.Is(err, errInterrupted) {
		fmt.Fprintf(os.Stderr, "apserver runs: interrupted; run %s stays stored: apserver run --resume %s%s takes it up\n", id, id, e.hintFlags())
		return &exitError{code: exitInterrupted}
	}
	if !e.rc.json {
		printOutcome(os.Stdout, end, e.hintFlags())
	}
	return runExit(end)
}

// list prints the stored runs, newest first.
func (e *runEnv) list(cwd string) error {
	p := protocol.RunListParams{}
	if cwd != "" {
		abs, _ := filepath.Abs(cwd)
		p.Cwd = &abs
	}
	res, err := e.rn.List(p).Do(context.Background())
	if err != nil {
		return err
	}
	if len(res) == 0 {
		fmt.Fprintf(os.Stdout, "no runs in %s\n", e.dataDir)
		return nil
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tSTAGE\tTASKS\tUPDATED\tREQUEST")
	for _, r := range res {
		st := string(r.Status)
		if r.WaitingFor != nil {
			st += " (" + string(*r.WaitingFor) + ")"
		}
		if r.Status == protocol.RunCompleted {
			if r.MergeCommit != nil {
				st += " (merged)"
			} else if r.Autonomy != protocol.AutonomyOff {
				st += " (left for review)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\n", r.ID, st, r.Stage, r.Counts.Completed, r.Counts.Total,
			time.UnixMilli(r.UpdatedAtMs).Format("2006-01-02 15:04"), oneLine(r.Request))
	}
	return tw.Flush()
}

// parseAge reads 30d, 12h, 90m (or any time.ParseDuration form).
func parseAge(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a number of days", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration such as 30d, 12h or 90m", s)
	}
	return d, nil
}

// prune removes what runs over for longer than age left: their worktrees
// (a failed run's too: it is over once nobody resumes it for that long)
// and their branches when merged into the base (--force: all).
func (e *runEnv) prune(ctx context.Context, age time.Duration, force bool) error {
	runs, err := e.rn.List(protocol.RunListParams{}).Do(ctx)
	if err != nil {
		return err
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].UpdatedAtMs < runs[j].UpdatedAtMs })
	cutoff := time.Now().Add(-age).UnixMilli()
	n := 0
	for _, r := range runs {
		if !r.Status.Final() || r.UpdatedAtMs > cutoff {
			continue
		}
		repo, err := gitwork.Open(ctx, r.Cwd)
		if err != nil {
			fmt.Fprintf(os.Stderr, "run %s: its repository %s is gone: skipped\n", r.ID, r.Cwd)
			continue
		}
		if r.Worktree != "" {
			if _, err := os.Stat(r.Worktree); err == nil {
				if err := repo.RemoveWorktree(ctx, r.Worktree); err != nil {
					fmt.Fprintf(os.Stderr, "run %s: removing its worktree: %v\n", r.ID, err)
				} else {
					fmt.Printf("run %s: removed worktree %s\n", r.ID, r.Worktree)
					n++
				}
			}
		}
		if r.Branch == "" {
			continue
		}
		if _, err := repo.HeadSHA(ctx, "refs/heads/"+r.Branch); err != nil {
			continue // already gone
		}
		// Merged means contained in the run's base branch (whatever is
		// checked out; git branch -d would ask HEAD).
		merged := exec.CommandContext(ctx, "git", "-C", repo.Root(), "merge-base", "--is-ancestor",
			"refs/heads/"+r.Branch, "refs/heads/"+r.BaseBranch).Run() == nil
		if !merged && !force {
			fmt.Fprintf(os.Stderr, "run %s: branch %s is not merged into %s: kept (--force removes it)\n", r.ID, r.Branch, r.BaseBranch)
			continue
		}
		cmd := exec.CommandContext(ctx, "git", "-C", repo.Root(), "branch", "-D", r.Branch)
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "run %s: removing branch %s: %s\n", r.ID, r.Branch, strings.TrimSpace(string(out)))
			continue
		}
		fmt.Printf("run %s: removed branch %s\n", r.ID, r.Branch)
		n++
	}
	if n == 0 {
		fmt.Printf("nothing to prune (runs over for more than %s)\n", age)
	}
	return nil
}

// interactive reports whether apserver run asks at the terminal: stdin a
// terminal (or --input), not --no-input, not --json.
func interactive(force, noInput, jsonOut bool) bool {
	if noInput || jsonOut {
		return false
	}
	if force {
		return true
	}
	return stdinIsTerminal()
}

// prompter asks the user at each human step of a run.
type prompter struct {
	ctx context.Context // Ctrl-C ends a wait for an answer
	in  *lineReader
	out io.Writer
	// echo prints each answer read (stdin not a terminal, which echoes
	// what is typed by itself).
	echo bool
}

// lineReader reads stdin a line at a time, on demand, on a goroutine of
// its own, so that a wait for an answer can end with Ctrl-C; it never
// reads ahead (an editor started between two prompts has the terminal to
// itself).
type lineReader struct {
	req     chan struct{}
	out     chan lineResult
	pending bool // a read was asked for and not yet taken
}

type lineResult struct {
	line string
	err  error
}

func newLineReader(in io.Reader) *lineReader {
	l := &lineReader{req: make(chan struct{}), out: make(chan lineResult)}
	br := bufio.NewReader(in)
	go func() {
		for range l.req {
			line, err := br.ReadString('\n')
			l.out <- lineResult{line, err}
		}
	}()
	return l
}

// read is the next line, or ok false at the end of the input or when ctx
// is done.
func (l *lineReader) read(ctx context.Context) (string, bool) {
	if !l.pending {
		l.req <- struct{}{}
		l.pending = true
	}
	select {
	case r := <-l.out:
		l.pending = false
		if r.err != nil && r.line == "" {
			return "", false
		}
		return r.line, true
	case <-ctx.Done():
		return "", false
	}
}

func (p *prompter) ask(q string) (string, bool) {
	fmt.Fprint(p.out, q)
	line, ok := p.in.read(p.ctx)
	if !ok {
		fmt.Fprintln(p.out)
		return "", false
	}
	if p.echo {
		fmt.Fprintln(p.out, strings.TrimSpace(line))
	}
	return strings.TrimSpace(line), true
}

// step asks what to do about the stop r and returns the runner call that
// does it, and whether the run then goes on (false: ask again, the run
// still waits). A nil call means the user left: apserver run ends as
// without a terminal.
func (p *prompter) step(e *runEnv, r protocol.Run) (runner.Call[protocol.Run], bool, error) {
	w := protocol.RunWaitingFor("")
	if r.WaitingFor != nil {
		w = *r.WaitingFor
	}
	id := r.ID
	switch {
	case w == protocol.WaitPlanApproval:
		planTable(p.out, r)
		for {
			a, ok := p.ask("Approve the plan? [y]es, [e]dit in $EDITOR, [n]o (send it back), [q]uit: ")
			if !ok {
				return nil, false, nil
			}
			switch strings.ToLower(a) {
			case "y", "yes":
				return e.rn.PlanApprove(protocol.RunParams{RunID: id}), true, nil
			case "e", "edit":
				tasks, err := editPlan(r, os.Stdin, os.Stderr)
				if err != nil {
					fmt.Fprintln(p.out, err)
					continue
				}
				if tasks == nil {
					fmt.Fprintln(p.out, "the plan is unchanged")
					continue
				}
				return e.rn.PlanUpdate(protocol.RunPlanUpdateParams{RunID: id, Tasks: tasks}), false, nil
			case "n", "no":
				fb, ok := p.ask("What should the planner change? ")
				if !ok || fb == "" {
					continue
				}
				return e.rn.PlanReject(protocol.RunPlanRejectParams{RunID: id, Feedback: fb}), true, nil
			case "q", "quit":
				return nil, false, nil
			}
		}
	case w == protocol.WaitClarification:
		q := openQuestion(r)
		if q == nil {
			return nil, false, nil
		}
		fmt.Fprintf(p.out, "The planner asks: %s\n", q.Question)
		if q.Context != "" {
			fmt.Fprintf(p.out, "  (%s)\n", q.Context)
		}
		for i, o := range q.Options {
			fmt.Fprintf(p.out, "  %d. %s\n", i+1, o)
		}
		for {
			a, ok := p.ask("Your answer (a number picks an option; empty quits): ")
			if !ok || a == "" {
				return nil, false, nil
			}
			if n, err := strconv.Atoi(a); err == nil && n >= 1 && n <= len(q.Options) {
				a = q.Options[n-1]
			}
			qid := q.ID
			return e.rn.ClarificationAnswer(protocol.RunClarificationAnswerParams{RunID: id, ClarificationID: qid, Answer: a}), true, nil
		}
	case w == protocol.WaitTaskApproval && r.CurrentTaskID != nil:
		task := *r.CurrentTaskID
		for _, t := range r.Plan.Tasks {
			if t.ID == task {
				fmt.Fprintf(p.out, "Task %s is high-risk: %s\n", t.ID, t.Title)
				for _, c := range t.Acceptance.Checks {
					fmt.Fprintf(p.out, "  check: %s\n", c)
				}
			}
		}
		for {
			a, ok := p.ask("Run it? [y]es, [s]kip it, [q]uit: ")
			if !ok {
				return nil, false, nil
			}
			d := protocol.TaskDecisionApprove
			switch strings.ToLower(a) {
			case "y", "yes":
			case "s", "skip":
				d = protocol.TaskDecisionSkip
			case "q", "quit":
				return nil, false, nil
			default:
				continue
			}
			return e.rn.TaskApprove(protocol.RunTaskApproveParams{RunID: id, TaskID: task, Decision: &d}), true, nil
		}
	case w == protocol.WaitRepair && r.RepairProposal != nil:
		rp := r.RepairProposal
		fmt.Fprintf(p.out, "Task %s is blocked: %s\nProposed fix: %s %s\n", rp.TaskID, oneLine(rp.Failure), rp.ProposedTask.ID, rp.ProposedTask.Title)
		a, ok := p.ask("Insert the fix and go on? [y]es, [q]uit: ")
		if !ok || !strings.HasPrefix(strings.ToLower(a), "y") {
			return nil, false, nil
		}
		task := rp.TaskID
		return e.rn.RepairApprove(protocol.RunRepairApproveParams{RunID: id, TaskID: task}), true, nil
	case r.Status == protocol.RunPaused && w == protocol.WaitResume:
		if r.Reason != nil {
			fmt.Fprintf(p.out, "The run is paused: %s\n", *r.Reason)
		}
		a, ok := p.ask("Resume it? [y]es, [q]uit: ")
		if !ok || !strings.HasPrefix(strings.ToLower(a), "y") {
			return nil, false, nil
		}
		return e.rn.Resume(protocol.RunParams{RunID: id}), true, nil
	}
	return nil, false, nil
}

// goFlagName is a long flag as Go's flag package names it in its errors,
// with one dash.
var goFlagName = regexp.MustCompile(`(: | flag )-([a-z][a-z0-9-]+)`)

// flagError is a flag parsing error with long flags written as the docs
// and help write them (--data-dir, not -data-dir).
func flagError(err error) string {
	return goFlagName.ReplaceAllString(err.Error(), "$1--$2")
}
