package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runs"
	"github.com/apserver/apserver/session/port"
	"github.com/apserver/apserver/tools"
	"github.com/apserver/apserver/tools/files"
	"github.com/apserver/apserver/tools/gitwork"
	"github.com/apserver/apserver/tools/rules"
	"github.com/apserver/apserver/tools/sandbox"
)

// work carries out one slow effect and posts its result.
func (x *run) work(cfg runs.Config, snap runs.Snapshot, e runs.Effect) {
	ctx := x.ctx
	defer func() {
		if r := recover(); r != nil {
			x.rn.log.Error("bug: panic in a run's step; the run fails", "run", x.id, "effect", fmt.Sprintf("%T", e),
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			if ctx.Err() == nil {
				x.result(runs.Event{Type: runs.EvFailed, Reason: fmt.Sprintf("internal error: %v", r)})
			}
		}
	}()
	panicPoint("work", x.id, e)
	var err error
	switch e := e.(type) {
	case runs.CreateWorktree:
		err = x.createWorktree(ctx, cfg)
	case runs.StartPlanner:
		err = x.plan(ctx, cfg, e)
	case runs.StartTask:
		err = x.implement(ctx, cfg, e)
	case runs.Validate:
		err = x.validate(ctx, cfg, e.Task)
	case runs.Commit:
		err = x.commit(ctx, cfg, e)
	case runs.Merge:
		err = x.merge(ctx, cfg, snap, e)
	default:
		x.ghWork(ctx, cfg, e)
	}
	if err != nil && ctx.Err() == nil {
		x.rn.log.Error("run step failed", "run", x.id, "effect", fmt.Sprintf("%T", e), "err", err)
		x.result(runs.Event{Type: runs.EvFailed, Reason: err.Error()})
	}
}

func (x *run) createWorktree(ctx context.Context, cfg runs.Config) error {
	repo, err := gitwork.Open(ctx, cfg.Cwd)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(cfg.Worktree), 0o755); err != nil {
		return fmt.Errorf("creating the worktrees directory: %w", err)
	}
	// gitwork adds the worktrees of one repository one at a time.
	if err := repo.AddWorktree(ctx, cfg.Worktree, cfg.Branch, cfg.BaseBranch); err != nil {
		return err
	}
	rc := x.rn.opts.Config.Runs
	// The setup command is the user's, but what it runs (an install's
	// package scripts, say) is the repository's: it gets apserver's
	// environment without apserver's secrets, as every command does.
	if err := gitwork.Setup(ctx, repo.Root(), cfg.Worktree, rc.SetupCopy, rc.SetupCommand, sandbox.Environ()); err != nil {
		return err
	}
	x.result(runs.Event{Type: runs.EvWorktreeReady})
	return nil
}

func str(s string) *string { return &s }

// startThread starts a thread in the run's worktree.
func (x *run) startThread(ctx context.Context, cfg runs.Config, sandboxMode protocol.SandboxMode, approval protocol.ApprovalPolicy, role string, model *string, dev string, readOnly, ephemeral bool) (string, error) {
	spec := port.ThreadSpec{Settings: protocol.ThreadSettings{
		Cwd: str(cfg.Worktree), Sandbox: &sandboxMode, ApprovalPolicy: &protocol.AskForApproval{Mode: approval},
		Model: model, DeveloperInstructions: str(dev),
	}, ReadOnly: readOnly, Ephemeral: ephemeral}
	// The role's provider ([roles.NAME] provider), kept when the run's
	// request names another model; a catalog entry's own provider still
	// wins when the turn resolves the model (config.ResolveThreadModel).
	if r, ok := x.rn.opts.Config.Roles[role]; ok && r.Provider != "" {
		spec.Settings.ModelProvider = &r.Provider
	}
	id, err := x.rn.threads.StartThread(ctx, spec)
	if err != nil {
		return "", fmt.Errorf("starting a thread: %w", err)
	}
	return id, nil
}

// turn runs one turn on a thread and returns the text of its last agent
// message.
func (x *run) turn(ctx context.Context, tag usageTag, thread, input string, schema json.RawMessage) (string, error) {
	// After a restart the thread is loaded again first.
	if err := x.rn.threads.Resume(ctx, thread, protocol.ThreadSettings{}); err != nil {
		return "", fmt.Errorf("resuming thread %s: %w", thread, err)
	}
	w := x.rn.threads.Watch(thread)
	defer w.Close()
	tr, err := x.rn.threads.StartTurn(ctx, protocol.TurnStartParams{
		ThreadID: thread, Input: []protocol.UserInput{{Type: "text", Text: input}}, OutputSchema: schema,
	})
	if err != nil {
		return "", fmt.Errorf("starting a turn: %w", err)
	}
	var last string
	for {
		o, err := w.Next(ctx)
		if err != nil {
			return "", err
		}
		switch o := o.(type) {
		case port.UsageReported:
			x.recordUsage(ctx, tag, o)
		case port.ItemCompleted:
			if m, ok := o.Item.(*protocol.AgentMessageItem); ok && o.TurnID == tr.ID {
				last = m.Text
			} else if m, ok := o.Item.(protocol.AgentMessageItem); ok && o.TurnID == tr.ID {
				last = m.Text
			}
		case port.TurnEnded:
			if o.TurnID != tr.ID {
				continue
			}
			if o.Status != protocol.TurnCompleted {
				msg := string(o.Status)
				if o.Error != nil {
					msg += ": " + o.Error.Message
				}
				return "", fmt.Errorf("turn %s ended %s", tr.ID, msg)
			}
			return last, nil
		}
	}
}

const plannerInstructions = `You are the planner of an apserver run. You cannot change files: read the repository, then answer with JSON only, matching the output schema: a summary and a graph of small tasks (id, title, description, kind, dependencies, risk, acceptance {criteria, checks, files}, estimate), with "clarification": null; or, if you cannot plan without the user's answer, "tasks": [] and a clarification {question, context, options}. In "decisions" list the choices your plan makes that later work must follow (a technology, a library, a convention: title, text, why, the alternatives rejected, the files and tags it concerns), or [] when it makes none. Checks are shell commands run in the repository that exit 0 when the task is done. Mark deleting directories, network use, migrations and dependency upgrades as risk "high". Read .apserver/memory.md if it exists: it holds decisions of earlier runs.`

// planSchema is the planner's structured output (strict: every property
// required, nullable where optional).
var planSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["summary","tasks","clarification","decisions"],"properties":{
"summary":{"type":"string"},
"tasks":{"type":"array","items":{"type":"object","additionalProperties":false,
 "required":["id","title","description","kind","dependencies","risk","acceptance","estimate"],"properties":{
 "id":{"type":"string"},"title":{"type":"string"},"description":{"type":"string"},"kind":{"type":"string"},
 "dependencies":{"type":"array","items":{"type":"string"}},"risk":{"type":"string","enum":["low","medium","high"]},
 "acceptance":{"type":"object","additionalProperties":false,"required":["criteria","checks","files"],"properties":{
  "criteria":{"type":"array","items":{"type":"string"}},"checks":{"type":"array","items":{"type":"string"}},"files":{"type":"array","items":{"type":"string"}}}},
 "estimate":{"type":"string"}}}},
"clarification":{"anyOf":[{"type":"null"},{"type":"object","additionalProperties":false,"required":["question","context","options"],"properties":{
 "question":{"type":"string"},"context":{"type":"string"},"options":{"type":"array","items":{"type":"string"}}}}]},
"decisions":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["title","text","why","alternatives","files","tags"],"properties":{
 "title":{"type":"string"},"text":{"type":"string"},"why":{"type":"string"},"alternatives":{"type":"array","items":{"type":"string"}},
 "files":{"type":"array","items":{"type":"string"}},"tags":{"type":"array","items":{"type":"string"}}}}}}}`)

type planOutput struct {
	Summary       string              `json:"summary"`
	Tasks         []protocol.PlanTask `json:"tasks"`
	Clarification *struct {
		Question string   `json:"question"`
		Context  string   `json:"context"`
		Options  []string `json:"options"`
	} `json:"clarification"`
	// Decisions are the choices the plan makes (a technology, a
	// convention), recorded in the project brain (runner/brain.go); none
	// is fine.
	Decisions []plannerDecision `json:"decisions"`
}

// jsonObject is the first JSON object in s (a model may wrap it in a code
// fence).
func jsonObject(s string) string {
	if i, j := strings.Index(s, "{"), strings.LastIndex(s, "}"); i >= 0 && j > i {
		return s[i : j+1]
	}
	return s
}

// checkPlan parses and checks the planner's answer: a JSON object with
// either a clarification and no tasks, or tasks that are valid
// (protocol.ValidateTasks), and decisions that are valid
// (plannerDecisions). The error names what is wrong.
func checkPlan(text string) (planOutput, error) {
	var out planOutput
	if err := json.Unmarshal([]byte(jsonObject(text)), &out); err != nil {
		return out, fmt.Errorf("the plan is not JSON (%v): %.200q", err, text)
	}
	if out.Clarification != nil && len(out.Tasks) == 0 {
		return out, nil
	}
	if len(out.Tasks) == 0 {
		return out, errors.New("the plan has no tasks")
	}
	if err := protocol.ValidateTasks("tasks", out.Tasks); err != nil {
		return out, fmt.Errorf("the plan is not valid: %v", err)
	}
	if _, problems := plannerDecisions(out.Decisions); len(problems) > 0 {
		return out, fmt.Errorf("the plan's decisions are not valid: %s", strings.Join(problems, "; "))
	}
	return out, nil
}

func (x *run) plan(ctx context.Context, cfg runs.Config, e runs.StartPlanner) error {
	thread := e.ThreadID
	if thread == "" {
		var err error
		thread, err = x.startThread(ctx, cfg, protocol.SandboxReadOnly, protocol.ApprovalNever, "planner", cfg.Models.Planner, x.withContext(ctx, cfg, "planner", nil, plannerInstructions), true, false)
		if err != nil {
			return err
		}
		if err := x.resultWait(runs.Event{Type: runs.EvPlannerStarted, ThreadID: thread}); err != nil {
			return nil // the run moved on
		}
	}
	text, err := x.turn(ctx, usageTag{stage: "planning"}, thread, e.Prompt, planSchema)
	if err != nil {
		if ctx.Err() == nil {
			x.result(runs.Event{Type: runs.EvPlannerFailed, Reason: err.Error()})
		}
		return nil
	}
	out, perr := checkPlan(text)
	if perr != nil {
		// Model output is untrusted: ask once more in the same thread,
		// saying what was wrong; a second bad answer fails the run.
		text, err = x.turn(ctx, usageTag{stage: "planning"}, thread, fmt.Sprintf("Your plan is not valid: %v. Answer again with JSON only, matching the output schema.", perr), planSchema)
		if err != nil {
			if ctx.Err() == nil {
				x.result(runs.Event{Type: runs.EvPlannerFailed, Reason: err.Error()})
			}
			return nil
		}
		if out, perr = checkPlan(text); perr != nil {
			x.result(runs.Event{Type: runs.EvPlannerFailed, Reason: "the planner's answer is not valid, twice: " + perr.Error()})
			return nil
		}
	}
	if c := out.Clarification; c != nil && len(out.Tasks) == 0 {
		x.result(runs.Event{Type: runs.EvClarificationAsked, Clarification: &protocol.RunClarification{
			Stage: protocol.StagePlanning, Question: c.Question, Context: c.Context, Options: c.Options}})
		return nil
	}
	x.markForbidden(cfg, out.Tasks)
	x.recordPlannerDecisions(ctx, cfg, out.Decisions)
	x.result(runs.Event{Type: runs.EvPlanProposed, Tasks: out.Tasks, Summary: out.Summary})
	return nil
}

// markForbidden makes high risk every task with a check the command rules
// forbid (builtin rules and the user's rules file), so that it waits for
// run/task/approve. The event carries the risk, so a replay needs no rules.
func (x *run) markForbidden(cfg runs.Config, tasks []protocol.PlanTask) {
	var files []string
	if f := x.rn.opts.Config.RulesFile; f != "" {
		files = append(files, f)
	}
	set, err := rules.Load(files...)
	if err != nil {
		set = rules.Builtin()
	}
	home, _ := os.UserHomeDir()
	rc := rules.Context{Cwd: cfg.Worktree, Home: home}
	for i := range tasks {
		for _, c := range tasks[i].Acceptance.Checks {
			if set.Evaluate(c, rc).Decision == rules.Forbidden {
				tasks[i].Risk = protocol.RiskHigh
			}
		}
	}
}

// approvals maps a run's autonomy onto its task threads: the thread's
// approval policy and full auto's approvals.
func approvals(a protocol.Autonomy) (protocol.ApprovalPolicy, protocol.FullAutoApprovals) {
	switch a {
	case protocol.AutonomySuggest:
		return protocol.ApprovalUntrusted, protocol.FullAutoApproveAsk
	case protocol.AutonomySemiAuto:
		return protocol.ApprovalUntrusted, protocol.FullAutoApprovePolicy
	default:
		return protocol.ApprovalOnRequest, protocol.FullAutoApprovePolicy
	}
}

const implementerInstructions = `You are the implementer of one task of an apserver run, in a git worktree of the run's own. Do the task and nothing else; make its checks pass; do not commit (apserver commits after it validated the task). When done, say so in one sentence.`

func (x *run) implement(ctx context.Context, cfg runs.Config, e runs.StartTask) error {
	policy, fa := approvals(cfg.Autonomy)
	thread := e.ThreadID
	if thread != "" && x.rn.unknownThread(ctx, thread) {
		// Started by another process (a cluster worker that died): the
		// attempt starts again here in a thread of this process's own.
		thread = ""
	}
	fresh := thread == ""
	if fresh {
		var err error
		thread, err = x.startThread(ctx, cfg, protocol.SandboxWorkspaceWrite, policy, "implementer", cfg.Models.Implementer, x.withContext(ctx, cfg, "implementer", &e.Task.PlanTask, implementerInstructions), false, false)
		if err != nil {
			return err
		}
		if err := x.resultWait(runs.Event{Type: runs.EvTaskStarted, TaskID: e.Task.ID, ThreadID: thread}); err != nil {
			return nil
		}
	}
	w := x.rn.threads.Watch(thread)
	defer w.Close()
	start := fresh
	if !fresh {
		// After a restart: the thread's full auto may be running, over, or
		// never started. It is brought back first: a server does that for
		// every thread once its client initialized, apserver run has no
		// such client (bringing it back twice does nothing).
		if err := x.rn.threads.RestoreFullAuto(ctx, thread); err != nil {
			x.rn.log.Warn("bringing back a task thread's full auto", "run", x.id, "thread", thread, "err", err)
		}
		st, err := x.rn.threads.FullAuto(ctx, thread)
		switch {
		case err != nil || st.Run == nil:
			start = true
		case st.Run.State == protocol.FullAutoStopped:
			x.implemented(e.Task.ID, *st.Run)
			return nil
		default:
			x.threadState(ctx, e.Task.ID, thread, *st.Run)
		}
	}
	if start {
		_, err := x.rn.threads.StartFullAuto(ctx, protocol.FullAutoStartParams{
			ThreadID: thread, Objective: str(e.Objective), Approvals: &fa,
		})
		if err != nil {
			return fmt.Errorf("starting full auto on task %s: %w", e.Task.ID, err)
		}
	}
	for {
		o, err := w.Next(ctx)
		if err != nil {
			return nil
		}
		if u, ok := o.(port.UsageReported); ok {
			x.recordUsage(ctx, usageTag{"task", e.Task.ID}, u)
			continue
		}
		p, ok := o.(port.FullAutoChanged)
		if !ok {
			continue
		}
		if p.Stopped() {
			x.implemented(e.Task.ID, p.Run)
			return nil
		}
		x.threadState(ctx, e.Task.ID, thread, p.Run)
	}
}

// threadState tells the run whether its task thread's full auto waits on
// a human (paused, or an approval or question) or runs again. The kind of
// the wait is that of the thread's own attention item.
func (x *run) threadState(ctx context.Context, task, thread string, r protocol.FullAutoRun) {
	if r.State == protocol.FullAutoRunning {
		x.result(runs.Event{Type: runs.EvTaskContinued, TaskID: task})
		return
	}
	kind := protocol.AttentionPaused
	if r.State == protocol.FullAutoWaiting {
		kind = protocol.AttentionApproval
		if st, err := x.rn.threads.FullAuto(ctx, thread); err == nil && st.Waiting != "" {
			kind = st.Waiting
		}
	}
	reason := string(r.State)
	if r.Reason != nil && *r.Reason != "" {
		reason = *r.Reason
	}
	x.result(runs.Event{Type: runs.EvTaskWaiting, TaskID: task, Text: string(kind), Reason: reason})
}

func (x *run) implemented(task string, r protocol.FullAutoRun) {
	cond := ""
	if r.StopCondition != nil {
		cond = *r.StopCondition
	}
	reason := cond
	if r.Reason != nil && *r.Reason != "" {
		reason += ": " + *r.Reason
	}
	x.result(runs.Event{Type: runs.EvTaskImplemented, TaskID: task, OK: cond == "completed", Reason: reason})
}

const validatorInstructions = `You are the validator of an apserver run. You review one task's diff against its acceptance criteria. Answer with JSON only: {"pass": true|false, "findings": "what is wrong, or why it is right"}.`

var reviewSchema = json.RawMessage(runs.ReviewSchema)

// checkTimeout bounds one acceptance check.
const checkTimeout = 10 * time.Minute

// validate runs the task's acceptance: its files exist, its checks exit 0
// in the sandbox in the worktree, and the validator model's review of its
// diff passes.
func (x *run) validate(ctx context.Context, cfg runs.Config, t protocol.RunTask) error {
	var rep strings.Builder
	ok := true
	for _, f := range t.Acceptance.Files {
		switch present, err := files.Inside(cfg.Worktree, f); {
		case err != nil:
			ok = false
			fmt.Fprintf(&rep, "- file `%s`: %v\n", f, err)
		case !present:
			ok = false
			fmt.Fprintf(&rep, "- file `%s`: missing\n", f)
		default:
			fmt.Fprintf(&rep, "- file `%s`: present\n", f)
		}
	}
	for _, check := range t.Acceptance.Checks {
		if !x.check(ctx, cfg, check, &rep) {
			ok = false
		}
	}
	// A claim of completion is not completion: a check the thread
	// attempted that was declined, failed or never finished (runs.MissingEvidence).
	missing, err := x.evidence(ctx, cfg, t)
	if err != nil && ctx.Err() == nil {
		return err
	}
	for _, m := range missing {
		ok = false
		fmt.Fprintf(&rep, "- %s\n", m)
	}
	if ctx.Err() != nil {
		return nil
	}
	if ok {
		pass, findings, err := x.review(ctx, cfg, t)
		var bad badReview
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &bad):
			// Not the task's fault: the run fails, naming the answer.
			return err
		case err != nil:
			ok = false
			fmt.Fprintf(&rep, "- review: failed: %v\n", err)
		default:
			ok = pass
			fmt.Fprintf(&rep, "- review (pass %v): %s\n", pass, strings.TrimSpace(findings))
		}
	}
	x.result(runs.Event{Type: runs.EvTaskValidated, TaskID: t.ID, OK: ok, Reason: rep.String()})
	return nil
}

// check runs one acceptance check in the worktree in the sandbox, reports
// it in rep and says whether it exited 0.
func (x *run) check(ctx context.Context, cfg runs.Config, check string, rep *strings.Builder) bool {
	c := x.rn.opts.Config
	pol := &sandbox.Policy{Mode: sandbox.WorkspaceWrite, WritableRoots: []string{cfg.Worktree}, ReadableRoots: c.SandboxReadableRoots,
		Network: c.SandboxNetwork, AllowTmp: true}
	res, err := tools.Exec(ctx, tools.ExecRequest{Command: check, Dir: cfg.Worktree, Timeout: checkTimeout, MaxOutputBytes: 16 << 10, Sandbox: pol}, nil)
	if err != nil {
		fmt.Fprintf(rep, "- check `%s`: could not run: %v\n", check, err)
		return false
	}
	fmt.Fprintf(rep, "- check `%s`: exit %d\n", check, res.ExitCode)
	if out := strings.TrimSpace(res.Output); out != "" && res.ExitCode != 0 {
		fmt.Fprintf(rep, "  output: %.2000s\n", out)
	}
	return res.ExitCode == 0
}

// review asks the validator model about the task's diff, in a read-only
// ephemeral thread of its own.
func (x *run) review(ctx context.Context, cfg runs.Config, t protocol.RunTask) (bool, string, error) {
	diff, err := gitwork.Diff(ctx, cfg.Worktree, "HEAD")
	if err != nil {
		return false, "", err
	}
	if len(diff) > 60<<10 {
		diff = diff[:60<<10] + "\n… (diff cut at 60 KiB)\n"
	}
	thread, err := x.startThread(ctx, cfg, protocol.SandboxReadOnly, protocol.ApprovalNever, "validator", cfg.Models.Validator, x.withContext(ctx, cfg, "reviewer", &t.PlanTask, validatorInstructions), true, true)
	if err != nil {
		return false, "", err
	}
	defer x.rn.threads.Release(thread)
	var b strings.Builder
	fmt.Fprintf(&b, "Review task %s of run %s: %s\n%s\n\nAcceptance criteria:\n", t.ID, cfg.ID, t.Title, t.Description)
	for _, c := range t.Acceptance.Criteria {
		fmt.Fprintf(&b, "- %s\n", c)
	}
	fmt.Fprintf(&b, "\nThe diff:\n```diff\n%s```\n", diff)
	text, err := x.turn(ctx, usageTag{"review", t.ID}, thread, b.String(), reviewSchema)
	if err != nil {
		return false, "", err
	}
	r, perr := runs.ParseReview(text)
	if perr != nil {
		// Model output is untrusted: ask once more, saying what was wrong.
		text, err = x.turn(ctx, usageTag{"review", t.ID}, thread, fmt.Sprintf("Your answer is not valid: %v. Answer again with JSON only: "+
			`{"pass": true or false, "findings": "what is wrong, or why it is right"}.`, perr), reviewSchema)
		if err != nil {
			return false, "", err
		}
		if r, perr = runs.ParseReview(text); perr != nil {
			return false, "", badReview{task: t.ID, err: perr}
		}
	}
	return r.Pass, r.Findings, nil
}

// badReview: the validator's answer was not valid, asked twice.
type badReview struct {
	task string
	err  error
}

func (b badReview) Error() string {
	return fmt.Sprintf("the validator's answer about task %s is not valid, twice: %v", b.task, b.err)
}

func trailers(ts []runs.Trailer) []gitwork.Trailer {
	out := make([]gitwork.Trailer, len(ts))
	for i, t := range ts {
		out[i] = gitwork.Trailer{Key: t.Key, Value: t.Value}
	}
	return out
}

func (x *run) commit(ctx context.Context, cfg runs.Config, e runs.Commit) error {
	sha, err := gitwork.Commit(ctx, cfg.Worktree, e.Message, trailers(e.Trailers))
	if err != nil {
		return err
	}
	if err := x.rn.push(ctx, cfg, false); err != nil {
		return err
	}
	x.result(runs.Event{Type: runs.EvTaskCommitted, TaskID: e.Task.ID, Commit: sha})
	return nil
}

// merge ends a run: the final artifacts and memory.md in one last commit,
// then (under auto trust) the branch merged into its base.
func (x *run) merge(ctx context.Context, cfg runs.Config, snap runs.Snapshot, e runs.Merge) error {
	final := snap
	final.Run.Status = protocol.RunCompleted
	final.Run.Stage = protocol.StageDone
	final.Run.WaitingFor, final.Run.Reason, final.Run.CurrentTaskID = nil, nil, nil
	if !e.Into {
		// The committed state.md says what the run's end will be.
		final.LastEvent = runs.Event{Type: runs.EvMerged, AtMs: x.rn.now()}
	}
	if err := writeArtifacts(cfg.Worktree, final); err != nil {
		return err
	}
	if err := x.writeRunMemory(ctx, cfg, final); err != nil {
		return err
	}
	msg := fmt.Sprintf("apserver run %s: %s\n\n%d tasks completed.\n", cfg.ID, cfg.Request, snap.Run.Counts.Completed)
	if _, err := gitwork.Commit(ctx, cfg.Worktree, msg, []gitwork.Trailer{{Key: "Apserver-Run", Value: cfg.ID}, {Key: "Apserver-Step", Value: "finish"}}); err != nil {
		return err
	}
	if !e.Into {
		return x.leave(ctx, cfg, final, e.Reason)
	}
	unlock, err := x.rn.merging(ctx, cfg)
	if err != nil {
		return err
	}
	defer unlock()
	repo, err := gitwork.Open(ctx, cfg.Cwd)
	if err != nil {
		return err
	}
	for round := 0; ; round++ {
		sha, err := repo.Merge(ctx, cfg.BaseBranch, cfg.Branch, gitwork.MergeMode(e.Mode), msg)
		behind := errors.Is(err, gitwork.ErrNotFastForward) || (e.Mode == protocol.MergeSquash && errors.Is(err, gitwork.ErrConflict))
		if behind && round < maxCatchUps {
			// The base moved on (another run landed): bring it into the
			// branch, check the result, and try again.
			err = x.catchUp(ctx, cfg, final)
			var cf checksFailed
			switch {
			case errors.Is(err, gitwork.ErrConflict), errors.As(err, &cf):
				return x.leave(ctx, cfg, final, err.Error()+"; the branch is left for review")
			case err != nil:
				return err
			}
			continue
		}
		switch {
		case errors.Is(err, gitwork.ErrBaseDirty), errors.Is(err, gitwork.ErrNotFastForward), errors.Is(err, gitwork.ErrConflict):
			return x.leave(ctx, cfg, final, err.Error()+"; the branch is left for review")
		case err != nil:
			return err
		}
		if err := x.rn.push(ctx, cfg, true); err != nil {
			return err
		}
		x.result(runs.Event{Type: runs.EvMerged, Commit: sha})
		return nil
	}
}

// leave ends a run whose branch is left for review (reason: why it was not
// merged, "" under implementation trust manual). When there is a reason,
// the artifacts that say so are committed in the branch too (Apserver-Step:
// review, found by its trailers on a replay): the branch is what stays of
// the run once its worktree is removed.
func (x *run) leave(ctx context.Context, cfg runs.Config, final runs.Snapshot, reason string) error {
	if reason != "" {
		now := x.rn.now()
		final.Run.Reason = &reason
		final.LastEvent = runs.Event{Type: runs.EvMerged, AtMs: now, Reason: reason}
		final.Decisions = append(final.Decisions, runs.Decision{AtMs: now, Text: fmt.Sprintf("branch %s not merged: %s", cfg.Branch, reason)})
		if err := writeArtifacts(cfg.Worktree, final); err != nil {
			return err
		}
		msg := fmt.Sprintf("apserver run %s: left for review\n\n%s\n", cfg.ID, reason)
		if _, err := gitwork.Commit(ctx, cfg.Worktree, msg, []gitwork.Trailer{{Key: "Apserver-Run", Value: cfg.ID}, {Key: "Apserver-Step", Value: "review"}}); err != nil {
			return err
		}
	}
	if err := x.rn.push(ctx, cfg, false); err != nil {
		return err
	}
	x.result(runs.Event{Type: runs.EvMerged, Reason: reason})
	return nil
}

// maxCatchUps bounds how many times one merge brings a base that keeps
// moving into the run's branch.
const maxCatchUps = 5

// checksFailed: an acceptance check fails on the branch brought up to its
// base.
type checksFailed struct{ report string }

func (c checksFailed) Error() string { return "after bringing in the base, checks fail:\n" + c.report }

// catchUp merges the base into the run's branch in its worktree (a merge
// commit). memory.md, which every run writes, is mended: the base's file
// with this run's section. Every acceptance check of the run's completed
// tasks runs on the merged tree before it is committed.
func (x *run) catchUp(ctx context.Context, cfg runs.Config, snap runs.Snapshot) error {
	mend := func(path string, theirs []byte) ([]byte, bool) {
		if path != runs.MemoryFile {
			return nil, false
		}
		return []byte(memoryText(string(theirs), snap)), true
	}
	verify := func(ctx context.Context) error {
		var rep strings.Builder
		ok := true
		for _, t := range snap.Run.Plan.Tasks {
			if t.Status != protocol.TaskCompleted {
				continue
			}
			for _, check := range t.Acceptance.Checks {
				if !x.check(ctx, cfg, check, &rep) {
					ok = false
				}
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !ok {
			return checksFailed{rep.String()}
		}
		return nil
	}
	msg := fmt.Sprintf("apserver run %s: bring in %s\n", cfg.ID, cfg.BaseBranch)
	_, err := gitwork.CatchUp(ctx, cfg.Worktree, cfg.BaseBranch, msg,
		[]gitwork.Trailer{{Key: "Apserver-Run", Value: cfg.ID}, {Key: "Apserver-Step", Value: "catch-up"}}, mend, verify)
	return err
}
