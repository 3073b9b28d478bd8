package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
	"github.com/apserver/apserver/session/port"
	"github.com/apserver/apserver/store"
)

// Exit codes of `apserver exec` (docs/fullauto.md).
const (
	exitOK          = 0   // the objective is done (full auto: stopped "completed"; one turn: it completed)
	exitSetup       = 1   // apserver could not run (configuration, store, model setup)
	exitUsage       = 2   // bad flags or arguments
	exitBudget      = 3   // a budget ran out (tokens, turns, time, cost)
	exitStuck       = 4   // no progress: a loop, repeated errors, compaction thrash, empty replies
	exitNeedsHuman  = 5   // the run paused for a human (approval timeout, low confidence, waiting)
	exitFailed      = 6   // the turn failed and could not be retried (or retries ran out)
	exitInterrupted = 130 // SIGINT or SIGTERM: the run was stopped
)

// exitError ends the process with code after printing msg, if any.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// errUsage exits 2; the usage text has been printed.
var errUsage = &exitError{code: exitUsage}

// exitCodeFor maps how a full-auto run ended to the exit code.
func exitCodeFor(state, cond string) int {
	switch cond {
	case "completed":
		return exitOK
	case "budgetTokens", "budgetTurns", "budgetTime", "budgetCost":
		return exitBudget
	case "stuckLoop", "noProgress", "repeatedError", "compactionThrash", "emptyReplies":
		return exitStuck
	case "failedUnrecoverable", "retriesExhausted":
		return exitFailed
	case "userStop":
		return exitInterrupted
	}
	if state == string(protocol.FullAutoPaused) || cond == "approvalTimeout" || cond == "waitingOnHuman" || cond == "lowConfidence" {
		return exitNeedsHuman
	}
	return exitSetup
}

// runExec is `apserver exec`: one objective, headless, in the current
// directory. Flags and wiring only; the run is the session's.
func runExec(args []string) error {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: apserver exec [flags] ["objective" | -]
       apserver exec [flags] resume THREAD_ID ["prompt" | -]

Works on the objective in the current directory (or --cd) without an editor:
progress on stderr, the agent's final message on stdout. The objective may
come on stdin ("-", or no argument and stdin is not a terminal). Without
--full-auto it runs one turn; with it, turns go on until the objective is
done, a budget runs out or the run needs a human. "resume" continues a
thread. Requests for a human are declined (nobody is there to answer them).
--json prints Codex's exec event stream (as codex exec --json does), so the
Codex SDK can drive apserver; --json-apserver prints apserver's own
notifications. Exit codes: 0 done, 1 error, 2 usage, 3 budget exhausted,
4 stuck, 5 needs a human, 6 failed, 130 interrupted.

`)
		printFlags(fs.Output(), fs)
	}
	var f serveFlags
	f.register(fs)
	var cf codexExecFlags
	cf.register(fs, &f)
	fullAuto := fs.Bool("full-auto", false, "keep running turns until the objective is done, a budget runs out or a human is needed")
	budgetTokens := fs.Int64("budget-tokens", 0, "full auto: stop after this many tokens (0 = no limit)")
	budgetTurns := fs.Int("budget-turns", 0, "full auto: stop after this many turns (0 = no limit)")
	budgetTime := fs.Duration("budget-time", 0, "full auto: stop after this much time, e.g. 10m (0 = no limit)")
	budgetCost := fs.Float64("budget-cost", 0, "full auto: stop after this many US dollars, priced by [prices] (0 = no limit)")
	approvals := fs.String("approvals", string(protocol.FullAutoApprovePolicy), "full auto: never, policy or ask (what the policy does not approve is declined)")
	review := fs.Bool("review", false, "full auto: one review turn before accepting completion")
	codexJSON := fs.Bool("json", false, "print Codex's exec event stream as JSON lines on stdout (codex exec --json) instead of the final message")
	fs.BoolVar(codexJSON, "experimental-json", false, "same as --json")
	apJSON := fs.Bool("json-apserver", false, "print apserver's notifications as JSON lines ({method, params}) on stdout instead of the final message")
	outFile := fs.String("o", "", "also write the final message to this file")
	fs.StringVar(outFile, "output-last-message", "", "same as -o")
	// Flags may come after the objective, as with codex exec.
	words, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return errUsage
	}
	usage := func(err error) error {
		fmt.Fprintln(os.Stderr, "apserver exec:", err)
		return errUsage
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if *codexJSON && *apJSON {
		return usage(errors.New("--json and --json-apserver are exclusive"))
	}
	for _, b := range []struct {
		name     string
		negative bool
	}{{"budget-tokens", *budgetTokens < 0}, {"budget-turns", *budgetTurns < 0}, {"budget-time", *budgetTime < 0}, {"budget-cost", *budgetCost < 0}} {
		if b.negative {
			return usage(fmt.Errorf("--%s must be 0 (no limit) or more, got %s", b.name, fs.Lookup(b.name).Value))
		}
	}
	if err := cf.apply(&f, set); err != nil {
		return usage(err)
	}
	if cf.version {
		fmt.Println("apserver", version)
		return nil
	}
	resumeID, objective, err := execArgs(words)
	if err != nil {
		return usage(err)
	}
	if objective, err = readPrompt(objective, os.Stdin); err != nil {
		return err
	}
	if objective == "" {
		fmt.Fprintln(os.Stderr, "apserver exec: an objective is required")
		fs.Usage()
		return errUsage
	}
	if *fullAuto && (cf.outputSchema != "" || len(cf.images) > 0) {
		return usage(errors.New("--output-schema and --image need a single turn (without --full-auto)"))
	}
	schema, err := cf.schema()
	if err != nil {
		return usage(err)
	}
	input, err := cf.input(objective)
	if err != nil {
		return usage(err)
	}
	cwd, err := cf.workDir()
	if err != nil {
		return usage(err)
	}
	cf.warnIgnored(os.Stderr)
	if f.logFile == "" {
		f.logLevel = "warn" // the live view is on stderr
	}
	log, closeLog, err := newLogger(&f)
	if err != nil {
		return err
	}
	defer closeLog()
	if f.logFile == "" {
		log = slog.New(shownInView{log.Handler()})
	}
	if cf.ephemeral {
		// Nothing outlives this exec: a data dir of its own, removed at the end.
		tmp, err := os.MkdirTemp("", "apserver-ephemeral-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		f.dataDir = tmp
	}
	cfg, err := config.Load(config.LoadOptions{UserFile: f.configFile, NoUserFile: cf.ignoreUser, Workspace: cwd, Getenv: execGetenv, Overrides: f.overrides()})
	if err != nil {
		return err
	}
	if cf.strictConfig && len(cfg.Warnings) > 0 {
		return usage(fmt.Errorf("--strict-config: %s", strings.Join(cfg.Warnings, "; ")))
	}
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	sync := "NORMAL"
	if strings.EqualFold(cfg.Durability, "full") {
		sync = "FULL"
	}
	mode := execHuman
	switch {
	case *codexJSON:
		mode = execCodexJSON
	case *apJSON:
		mode = execApserverJSON
	}
	ec := newExecClient(os.Stdout, os.Stderr, mode, cwd)
	mgr := session.NewManager(session.Options{
		OpenStore: func() (*store.Store, error) {
			return store.Open(filepath.Join(cfg.DataDir, store.FileName), store.Options{Synchronous: sync})
		},
		Config:         cfg,
		Client:         ec,
		Logger:         log,
		Version:        version,
		CoalesceDeltas: true,
		DataDir:        cfg.DataDir,
	})
	defer mgr.Close()

	settings := protocol.ThreadSettings{Cwd: &cwd}
	if cf.sandbox != "" {
		mode := protocol.SandboxMode(cf.sandbox)
		settings.Sandbox = &mode
	}
	if cf.approval != "" {
		settings.ApprovalPolicy = &protocol.AskForApproval{Mode: protocol.ApprovalPolicy(cf.approval)}
	}
	if err := mgr.ValidateThreadSettings(settings); err != nil {
		return usage(err)
	}
	turn := protocol.TurnStartParams{Input: input, OutputSchema: schema}
	if cf.effort != "" {
		turn.Effort = &cf.effort
	}
	if err := mgr.ValidateTurnStart(turn); err != nil {
		return usage(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// The session's thread port drives the thread and reports how it
	// ends; the client (ec) only renders.
	threads := mgr.Threads()
	var threadID string
	if resumeID != "" {
		if f.model != "" {
			settings.Model = &f.model
		}
		threadID = resumeID
		if err = threads.Resume(ctx, resumeID, settings); err != nil {
			err = fmt.Errorf("resuming thread %s: %w", resumeID, err)
		}
	} else {
		threadID, err = threads.StartThread(ctx, port.ThreadSpec{Settings: settings})
	}
	if err != nil {
		return err
	}
	ec.watch(threadID)
	outcomes := threads.Watch(threadID)
	defer outcomes.Close()
	var turnID string
	if *fullAuto {
		p := protocol.FullAutoStartParams{ThreadID: threadID, Objective: &objective, Approvals: (*protocol.FullAutoApprovals)(approvals), Review: review,
			Budgets: &protocol.FullAutoBudgets{}}
		if *budgetTokens > 0 {
			p.Budgets.Tokens = budgetTokens
		}
		if *budgetTurns > 0 {
			p.Budgets.Turns = budgetTurns
		}
		if *budgetTime > 0 {
			p.Budgets.TimeMs = ptrTo(budgetTime.Milliseconds())
		}
		if *budgetCost > 0 {
			p.Budgets.CostUSD = budgetCost
		}
		if err := p.Validate(); err != nil {
			fmt.Fprintln(os.Stderr, "apserver exec:", err)
			return errUsage
		}
		_, err = threads.StartFullAuto(ctx, p)
	} else {
		turn.ThreadID = threadID
		var tr protocol.Turn
		tr, err = threads.StartTurn(ctx, turn)
		turnID = tr.ID
	}
	if err != nil {
		return err
	}

	code, err := execEndOf(ctx, outcomes, !*fullAuto, turnID)
	if err != nil {
		stop() // a second signal kills the process
		why := "interrupted by Ctrl-C (SIGINT) or SIGTERM"
		ec.interrupted(why)
		fmt.Fprintf(os.Stderr, "apserver exec: %s: stopping the turn; thread %s is kept (apserver exec resume %s goes on)\n", why, threadID, threadID)
		if *fullAuto {
			_, _ = threads.StopFullAuto(context.Background(), threadID)
		} else {
			_ = threads.InterruptTurn(context.Background(), threadID, turnID)
		}
		wait, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, _ = execEndOf(wait, outcomes, !*fullAuto, turnID)
		cancel()
		code = exitInterrupted
	}
	final := ec.finalMessage()
	if mode == execHuman && final != "" {
		fmt.Fprintln(os.Stdout, final)
	}
	if *outFile != "" {
		if err := os.WriteFile(*outFile, []byte(final+"\n"), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", *outFile, err)
		}
	}
	fmt.Fprintf(os.Stderr, "thread %s (apserver replay %s)\n", threadID, threadID)
	if code != exitOK {
		return &exitError{code: code}
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }

// execEndOf waits on the thread's outcomes for exec's end: the turn's end
// (one turn), or full auto stopped or paused; it returns the exit code, or
// ctx's error.
func execEndOf(ctx context.Context, outcomes port.Stream, oneTurn bool, turnID string) (int, error) {
	for {
		o, err := outcomes.Next(ctx)
		if err != nil {
			return 0, err
		}
		switch o := o.(type) {
		case port.TurnEnded:
			if oneTurn && o.TurnID == turnID {
				if o.Status != protocol.TurnCompleted {
					return exitFailed, nil
				}
				return exitOK, nil
			}
		case port.FullAutoChanged:
			if st := o.Run.State; !oneTurn && (st == protocol.FullAutoStopped || st == protocol.FullAutoPaused) {
				cond := ""
				if o.Run.StopCondition != nil {
					cond = *o.Run.StopCondition
				}
				return exitCodeFor(string(st), cond), nil
			}
		}
	}
}

// execMode is what exec prints on stdout.
type execMode int

const (
	execHuman        execMode = iota // the final message
	execCodexJSON                    // Codex's exec event stream (--json)
	execApserverJSON                 // apserver's notifications (--json-apserver)
)

// execClient is the session.Client of `apserver exec`: it renders what
// happens on stderr (and, by mode, events as JSON lines on stdout) and
// declines every request for a human, since there is none.
type execClient struct {
	out, errw io.Writer
	mode      execMode
	codex     *codexEvents
	nextID    atomic.Int64

	mu       sync.Mutex
	thread   string
	turns    int
	lastText string
	// streamed is the agent message whose text is being streamed on an
	// open line of the live view ("" when none); shown, the items whose
	// text was streamed (not printed again when they complete).
	streamed string
	shown    map[string]bool
	// interrupt is why exec interrupted the turn (the turn's own error
	// is empty then).
	interrupt string
}

// closeLine ends the line a streamed message left open.
func (c *execClient) closeLine() {
	if c.streamed != "" {
		fmt.Fprintln(c.errw)
		c.streamed = ""
	}
}

// interrupted records why exec stopped the turn, for the live view.
func (c *execClient) interrupted(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.interrupt = reason
}

func newExecClient(out, errw io.Writer, mode execMode, cwd string) *execClient {
	c := &execClient{out: out, errw: errw, mode: mode}
	if mode == execCodexJSON {
		c.codex = newCodexEvents(out, cwd)
	}
	return c
}

// watch narrows the events to the thread exec works on; Codex's stream
// starts with it.
func (c *execClient) watch(threadID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.thread = threadID
	if c.codex != nil {
		c.codex.threadStarted(threadID)
	}
}

func (c *execClient) finalMessage() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastText
}

// Notify renders one notification.
func (c *execClient) Notify(method string, params any) {
	b, err := json.Marshal(params)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mode == execApserverJSON {
		line, _ := json.Marshal(map[string]any{"method": method, "params": json.RawMessage(b)})
		fmt.Fprintf(c.out, "%s\n", line)
	}
	var p map[string]any
	_ = json.Unmarshal(b, &p)
	if tid, _ := p["threadId"].(string); c.codex != nil && c.thread != "" && (tid == "" || tid == c.thread) {
		c.codex.notify(method, b)
	}
	get := func(path string) any {
		var v any = p
		for _, k := range strings.Split(path, ".") {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		return v
	}
	str := func(path string) string { s, _ := get(path).(string); return s }
	if tid := str("threadId"); tid != "" && c.thread != "" && tid != c.thread {
		return
	}
	w := c.errw
	if method == protocol.NotifyAgentMessageDelta {
		// The message's text as it arrives, on lines that start "  │ ".
		id, delta := str("itemId"), str("delta")
		if delta == "" {
			return
		}
		if c.streamed != id {
			c.closeLine()
			fmt.Fprint(w, "  │ ")
			c.streamed = id
			if c.shown == nil {
				c.shown = map[string]bool{}
			}
			c.shown[id] = true
		}
		fmt.Fprint(w, strings.ReplaceAll(delta, "\n", "\n  │ "))
		return
	}
	if method == protocol.NotifyItemCompleted && str("item.type") == "agentMessage" && c.shown[str("item.id")] {
		c.lastText = str("item.text")
		delete(c.shown, str("item.id"))
		c.closeLine()
		return
	}
	switch method {
	case protocol.NotifyTurnStarted, protocol.NotifyItemStarted, protocol.NotifyItemCompleted, protocol.NotifyTurnCompleted,
		protocol.NotifyFullAutoDecision, protocol.NotifyFullAutoStatusChanged, protocol.NotifyError:
		c.closeLine()
	}
	switch method {
	case protocol.NotifyTurnStarted:
		c.turns++
		fmt.Fprintf(w, "── turn %d\n", c.turns)
	case protocol.NotifyItemStarted:
		if str("item.type") == "commandExecution" {
			fmt.Fprintf(w, "  $ %s\n", firstLine(displayCommand(str("item.command")), 160))
		}
	case protocol.NotifyItemCompleted:
		switch str("item.type") {
		case "agentMessage":
			c.lastText = str("item.text")
			for _, l := range strings.Split(strings.TrimSpace(c.lastText), "\n") {
				fmt.Fprintf(w, "  │ %s\n", l)
			}
		case "commandExecution":
			// A command that did not run (declined, refused) has no exit
			// code: say so, not "exit 0".
			status := str("item.status")
			if code, ok := get("item.exitCode").(float64); ok && status != "declined" {
				fmt.Fprintf(w, "    → %s, exit %d\n", status, int(code))
			} else {
				fmt.Fprintf(w, "    → %s (not run)\n", status)
			}
		case "fileChange":
			var paths []string
			chs, _ := get("item.changes").([]any)
			for _, ch := range chs {
				if m, ok := ch.(map[string]any); ok {
					paths = append(paths, fmt.Sprint(m["path"]))
				}
			}
			fmt.Fprintf(w, "  ✎ %s: %s\n", str("item.status"), strings.Join(paths, ", "))
		}
	case protocol.NotifyTurnCompleted:
		status := str("turn.status")
		if status != "completed" {
			why := str("turn.error.message")
			if why == "" && status == "interrupted" {
				why = c.interrupt
			}
			if why == "" {
				why = "it ended before the model finished"
			}
			fmt.Fprintf(w, "  turn %s: %s\n", status, why)
		}
	case protocol.NotifyFullAutoDecision:
		r := str("receipt.action") + " (" + str("receipt.rule") + ")"
		fmt.Fprintf(w, "◆ %s: %s\n", r, str("receipt.reason"))
	case protocol.NotifyFullAutoStatusChanged:
		state, cond := str("state"), str("run.stopCondition")
		switch state {
		case string(protocol.FullAutoWaiting):
			fmt.Fprintf(w, "  waiting: %s\n", str("reason"))
		case string(protocol.FullAutoStopped), string(protocol.FullAutoPaused):
			spent := fmt.Sprintf("%v turns, %v tokens, %.1fs", get("run.spent.turns"), get("run.spent.tokens"), num(get("run.spent.timeMs"))/1000)
			fmt.Fprintf(w, "■ %s (%s): %s [%s]\n", state, cond, str("reason"), spent)
		}
	case protocol.NotifyError:
		if will, _ := get("willRetry").(bool); will {
			fmt.Fprintf(w, "  retrying: %s\n", str("error.message"))
		}
	}
}

func num(v any) float64 { f, _ := v.(float64); return f }

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// Call declines every request for a human: exec has nobody to ask.
func (c *execClient) Call(method string, params any) session.ClientCall {
	id := c.nextID.Add(1) - 1
	c.mu.Lock()
	fmt.Fprintf(c.errw, "  declined (no human to ask): %s\n", method)
	c.mu.Unlock()
	if method == protocol.RequestUserInput {
		return execCallResult{id: id, err: errors.New("no human is there to answer (apserver exec)")}
	}
	return execCallResult{id: id, raw: json.RawMessage(`{"decision":"decline"}`)}
}

type execCallResult struct {
	id  int64
	raw json.RawMessage
	err error
}

func (r execCallResult) ID() int64 { return r.id }

func (r execCallResult) Wait(context.Context) (json.RawMessage, error) { return r.raw, r.err }

// shownInView drops the log records that the live view, on the same
// stderr, already shows in its own words: a failed turn is its
// "turn failed: …" line, not that line and a log line too.
type shownInView struct{ slog.Handler }

func (h shownInView) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "turn failed" {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h shownInView) WithAttrs(as []slog.Attr) slog.Handler {
	return shownInView{h.Handler.WithAttrs(as)}
}

func (h shownInView) WithGroup(name string) slog.Handler {
	return shownInView{h.Handler.WithGroup(name)}
}
