package runs

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apserver/apserver/protocol"
)

// step is what a running run is doing right now; the driver's work in
// flight. Internal state: iota with a String method.
type step int

const (
	stepNone      step = iota // nothing in flight (waiting, paused, final, or about to decide)
	stepWorktree              // CreateWorktree asked
	stepPlanning              // the planner is running
	stepImplement             // a task thread is running (cur)
	stepValidate              // cur's checks and review are running
	stepCommit                // cur's commit is being made
	stepMerge                 // the run's end: final commit and merge
	stepPush                  // GitHub: the branch is being pushed
	stepOpenPR                // GitHub: the pull request is being opened
	stepReady                 // GitHub: the draft is being marked ready
	stepWatch                 // GitHub: the pull request's checks and reviews are watched
	stepReply                 // GitHub: review comments are being answered
	stepMergePR               // GitHub: the pull request is being merged
)

func (s step) String() string {
	return [...]string{"none", "worktree", "planning", "implement", "validate", "commit", "merge",
		"push", "openPR", "markReady", "watchPR", "replyReview", "mergePR"}[s]
}

// Decision is a key decision of the run, for state.md, context.json and
// memory.md.
type Decision struct {
	AtMs int64  `json:"atMs"`
	Text string `json:"text"`
}

// Attempt is one validation of a task: the retry log and the validation
// report.
type Attempt struct {
	TaskID  string `json:"taskId"`
	Attempt int    `json:"attempt"`
	OK      bool   `json:"ok"`
	Report  string `json:"report"`
	AtMs    int64  `json:"atMs"`
}

// Snapshot is the run's state as its artifacts show it.
type Snapshot struct {
	Run       protocol.Run `json:"run"`
	Step      string       `json:"step"`
	Decisions []Decision   `json:"decisions"`
	Attempts  []Attempt    `json:"attempts"`
	Blockers  []string     `json:"blockers"`
	// LastEvent is the last event applied: the "last session" of state.md.
	LastEvent Event `json:"lastEvent"`
}

// Machine is one run's state machine. It is not safe for concurrent use:
// its driver owns it. Every event goes through Apply, which returns the
// effects the driver must apply in order.
type Machine struct {
	cfg Config
	run protocol.Run

	step step
	cur  string // the task in flight (stepImplement, stepValidate, stepCommit)
	// gate is the task waiting on run/task/approve (high risk or manual
	// trust); gateFix says the approval is for a fix attempt.
	gate    string
	gateFix bool
	// noMoreQuestions: the clarification limit was reached and the user
	// resumed the run: the planner decides by itself.
	noMoreQuestions bool
	// feedback and answers go into the planner's next prompt.
	feedback string

	decisions []Decision
	attempts  []Attempt
	blockers  []string
	last      Event
	sinceMs   int64 // when the run started waiting (attention)
	// taskWaitKind is what the task thread waits for (waitingFor
	// taskThread): the kind of the run's attention item.
	taskWaitKind protocol.AttentionKind
	// pauseAsked: run/pause came while a step was in flight; the run is
	// pausing and pauses when that step ends (settlePause).
	pauseAsked bool
	// failedStep and failedTask are the step (and its task) that failed
	// the run: run/resume tries that step again (retryStep).
	failedStep step
	failedTask string
	// ghs is the GitHub stage's state (github.go).
	ghs ghState

	out []Effect
}

// New returns a machine with no run yet: the first event must be
// EvStarted.
func New() *Machine { return &Machine{} }

// Run is the run as clients see it.
func (m *Machine) Run() protocol.Run {
	r := m.run
	r.Plan.Tasks = slices.Clone(r.Plan.Tasks)
	r.Clarifications = slices.Clone(r.Clarifications)
	r.Reverts = slices.Clone(r.Reverts)
	if r.PullRequest != nil {
		pr := *r.PullRequest
		r.PullRequest = &pr
	}
	return r
}

// Snapshot is the run's state for its artifacts.
func (m *Machine) Snapshot() Snapshot {
	return Snapshot{Run: m.Run(), Step: m.step.String(), Decisions: slices.Clone(m.decisions),
		Attempts: slices.Clone(m.attempts), Blockers: slices.Clone(m.blockers), LastEvent: m.last}
}

// Config is the run's configuration.
func (m *Machine) Config() Config { return m.cfg }

// ErrState is the error of an event that does not fit the run's state (a
// human answered something the run does not wait for). It wraps
// protocol.ErrInvalidRequest.
func stateErr(format string, args ...any) error {
	return protocol.Errorf(protocol.ErrInvalidRequest, format, args...)
}

// Check says whether a human's event fits the run's state, without
// applying it: the driver checks before it stores the event, so the log
// holds only events that applied.
func (m *Machine) Check(ev Event) error {
	r := &m.run
	if ev.Type != EvStarted && ev.Type != EvImported && r.ID == "" {
		return stateErr("run has not started")
	}
	final := r.Status.Final() && r.Status != protocol.RunFailed
	waiting := func(w protocol.RunWaitingFor) bool { return r.WaitingFor != nil && *r.WaitingFor == w }
	switch ev.Type {
	case EvImported:
		if r.ID != "" {
			return stateErr("run %s exists already", r.ID)
		}
		if ev.Run == nil || ev.Run.ID == "" || !ev.Run.Status.Final() {
			return stateErr("an imported run must be over")
		}
	case EvStarted:
		if r.ID != "" {
			return stateErr("run %s has already started", r.ID)
		}
		if ev.Config == nil || ev.Config.ID == "" {
			return stateErr("run/start without a configuration")
		}
	case EvPlanUpdated, EvPlanApproved, EvPlanRejected:
		if !waiting(protocol.WaitPlanApproval) {
			return stateErr("run %s is not waiting for plan approval (%s)", r.ID, m.describeWait())
		}
		if ev.Type == EvPlanUpdated {
			if err := protocol.ValidateTasks("tasks", ev.Tasks); err != nil {
				return err
			}
		}
	case EvTaskApproved:
		if !waiting(protocol.WaitTaskApproval) {
			return stateErr("run %s is not waiting for a task approval (%s)", r.ID, m.describeWait())
		}
		if ev.TaskID != m.gate {
			return stateErr("run %s waits for approval of task %q, not %q", r.ID, m.gate, ev.TaskID)
		}
	case EvClarificationAnswered:
		if !waiting(protocol.WaitClarification) {
			return stateErr("run %s is not waiting for a clarification (%s)", r.ID, m.describeWait())
		}
		c := m.openClarification()
		if c == nil || c.ID != ev.ID {
			return stateErr("run %s has no open clarification %q", r.ID, ev.ID)
		}
	case EvRepairApproved:
		if !waiting(protocol.WaitRepair) || r.RepairProposal == nil {
			return stateErr("run %s has no repair proposal (%s)", r.ID, m.describeWait())
		}
		if r.RepairProposal.TaskID != ev.TaskID {
			return stateErr("run %s's repair proposal is for task %q, not %q", r.ID, r.RepairProposal.TaskID, ev.TaskID)
		}
		if len(ev.Tasks) == 1 {
			if m.taskIndex(ev.Tasks[0].ID) >= 0 {
				return protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: task id %q is already in the plan", ev.Tasks[0].ID)
			}
			for _, d := range ev.Tasks[0].Dependencies {
				if m.taskIndex(d) < 0 {
					return protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: task depends on unknown task %q", d)
				}
			}
		}
	case EvPaused:
		if final || r.Status == protocol.RunFailed {
			return stateErr("run %s is %s", r.ID, r.Status)
		}
		if r.Status == protocol.RunPaused {
			return stateErr("run %s is already paused", r.ID)
		}
		if m.pauseAsked {
			return stateErr("run %s is already pausing: it pauses when its current step ends", r.ID)
		}
	case EvResumed:
		if waiting(protocol.WaitGitHub) {
			return nil
		}
		if r.Status != protocol.RunPaused && r.Status != protocol.RunFailed && r.Status != protocol.RunPausing {
			return stateErr("run %s is %s, not paused (%s)", r.ID, r.Status, m.describeWait())
		}
		if waiting(protocol.WaitRepair) {
			return stateErr("run %s has a blocked task: approve its repair (run/repair/approve) or cancel", r.ID)
		}
		if waiting(protocol.WaitTaskThread) {
			return stateErr("run %s waits on the thread of task %s: resume that thread (fullAuto/resume) or answer it", r.ID, m.cur)
		}
	case EvCancelled:
		if final {
			return stateErr("run %s is already %s", r.ID, r.Status)
		}
	case EvReverted:
		if !r.Status.Final() {
			return stateErr("run %s is %s: a run is undone once it is over (run/cancel first)", r.ID, r.Status)
		}
		if ev.Revert == nil {
			return stateErr("run %s: a revert without its record", r.ID)
		}
	}
	return nil
}

func (m *Machine) describeWait() string {
	if m.run.WaitingFor != nil {
		return fmt.Sprintf("it is %s, waiting for %s", m.run.Status, *m.run.WaitingFor)
	}
	return fmt.Sprintf("it is %s in stage %s", m.run.Status, m.run.Stage)
}

// Accepts says whether Apply would apply ev: Check for a human's event,
// and for a driver's result whether it belongs to the work in flight.
func (m *Machine) Accepts(ev Event) error {
	if err := m.Check(ev); err != nil {
		return err
	}
	if !m.fits(ev) {
		return stateErr("run %s: a stale %s result", m.run.ID, ev.Type)
	}
	return nil
}

// Apply applies one event at now (unix ms) and returns the effects: the
// contract of every pure core (fullauto.Machine.Apply too). The event is
// stamped with now (ev.AtMs), as its driver stores it; a replay passes
// each stored event's AtMs. An event that does not fit (Check) is ignored,
// with no effects: a stale result (the answer of a thread of a cancelled
// run) is dropped the same way.
func (m *Machine) Apply(now int64, ev Event) []Effect {
	ev.AtMs = now
	m.out = nil
	if err := m.Check(ev); err != nil {
		return nil
	}
	if !m.fits(ev) {
		return nil
	}
	before := m.updated()
	m.apply(ev)
	m.settlePause(ev.AtMs)
	m.last = ev
	m.run.UpdatedAtMs = ev.AtMs
	m.finish(before, ev.AtMs)
	out := m.out
	m.out = nil
	return out
}

// fits says whether a driver's result event belongs to the work in flight.
func (m *Machine) fits(ev Event) bool {
	switch ev.Type {
	case EvWorktreeReady:
		return m.step == stepWorktree
	case EvPlannerStarted, EvPlanProposed, EvPlannerFailed, EvClarificationAsked:
		return m.step == stepPlanning
	case EvTaskStarted, EvTaskImplemented, EvTaskWaiting, EvTaskContinued:
		return m.step == stepImplement && ev.TaskID == m.cur
	case EvTaskValidated:
		return m.step == stepValidate && ev.TaskID == m.cur
	case EvTaskCommitted:
		return m.step == stepCommit && ev.TaskID == m.cur
	case EvMerged:
		return m.step == stepMerge
	case EvPushed:
		return m.step == stepPush
	case EvPROpened:
		return m.step == stepOpenPR && ev.GitHub != nil && ev.GitHub.PR != nil
	case EvPRReady:
		return m.step == stepReady
	case EvPRPolled:
		return m.step == stepWatch && ev.GitHub != nil && ev.GitHub.Poll != nil && m.run.PullRequest != nil
	case EvReplied:
		return m.step == stepReply
	case EvPRMerged:
		return m.step == stepMergePR
	case EvGitHubError:
		return m.isGitHubStep() && !m.run.Status.Final()
	case EvFailed:
		return !m.run.Status.Final()
	case EvQueued:
		st := m.run.Status
		return m.step != stepNone && (st == protocol.RunRunning || st == protocol.RunQueued) && ev.Position > 0
	case EvDequeued:
		return m.run.Status == protocol.RunQueued
	}
	return true
}

func (m *Machine) emit(e Effect) { m.out = append(m.out, e) }

// updatedKey is what run/updated reports, to send it only on change.
type updatedKey struct {
	status  protocol.RunStatus
	stage   protocol.RunStage
	waiting protocol.RunWaitingFor
	reason  string
	cur     string
	queue   int
	counts  protocol.RunCounts
	pr      protocol.RunPullRequest
	reverts int
}

func (m *Machine) updated() updatedKey {
	k := updatedKey{status: m.run.Status, stage: m.run.Stage, counts: m.run.Counts}
	if m.run.WaitingFor != nil {
		k.waiting = *m.run.WaitingFor
	}
	if m.run.Reason != nil {
		k.reason = *m.run.Reason
	}
	if m.run.CurrentTaskID != nil {
		k.cur = *m.run.CurrentTaskID
	}
	if m.run.QueuePosition != nil {
		k.queue = *m.run.QueuePosition
	}
	if m.run.PullRequest != nil {
		k.pr = *m.run.PullRequest
	}
	k.reverts = len(m.run.Reverts)
	return k
}

func ptr[T any](v T) *T { return &v }

func (m *Machine) apply(ev Event) {
	r := &m.run
	switch ev.Type {
	case EvPushed, EvPROpened, EvPRReady, EvPRPolled, EvReplied, EvPRMerged, EvGitHubError:
		m.applyGitHub(ev)
	case EvImported:
		*r = *ev.Run
		r.Plan.Tasks = slices.Clone(r.Plan.Tasks)
		m.cfg = Config{ID: r.ID, Request: r.Request, Cwd: r.Cwd, BaseBranch: r.BaseBranch, Branch: r.Branch, Worktree: r.Worktree,
			Trust: r.Trust, Autonomy: r.Autonomy, Merge: r.Merge, Models: r.Models, MaxClarifications: r.MaxClarifications, MaxRetries: 3}
		m.decisions = slices.Clone(ev.Decisions)
	case EvReverted:
		rv := *ev.Revert
		rv.AtMs = ev.AtMs
		r.Reverts = append(r.Reverts, rv)
		what := "the run"
		if rv.TaskID != nil {
			what = "task " + *rv.TaskID
		}
		switch rv.Kind {
		case protocol.RevertPullRequest:
			n := 0
			if rv.PullRequest != nil {
				n = rv.PullRequest.Number
			}
			m.decide(ev.AtMs, fmt.Sprintf("%s undone by revert pull request #%d (commit %s on %s)", what, n, rv.Commit, rv.Branch))
		case protocol.RevertBranchClosed:
			m.decide(ev.AtMs, fmt.Sprintf("%s undone: branch %s closed (it was at %s) and the worktree removed", what, rv.Branch, rv.Commit))
		default:
			m.decide(ev.AtMs, fmt.Sprintf("%s undone by revert commit %s on %s", what, rv.Commit, rv.Branch))
		}
	case EvStarted:
		m.cfg = *ev.Config
		if m.cfg.MaxRetries <= 0 {
			m.cfg.MaxRetries = 3
		}
		c := m.cfg
		*r = protocol.Run{ID: c.ID, Request: c.Request, Status: protocol.RunRunning, Stage: protocol.StagePlanning,
			Cwd: c.Cwd, BaseBranch: c.BaseBranch, Branch: c.Branch, Worktree: c.Worktree, Trust: c.Trust,
			Autonomy: c.Autonomy, Merge: c.Merge, Models: c.Models, MaxClarifications: c.MaxClarifications,
			Clarifications: []protocol.RunClarification{}, Plan: protocol.RunPlan{Tasks: []protocol.RunTask{}},
			CreatedAtMs: ev.AtMs, Blueprint: blueprintView(c)}
		m.emit(Notify{protocol.NotifyRunStarted, protocol.RunStartedNotification{Run: m.Run()}})
		m.step = stepWorktree
		m.emit(CreateWorktree{})
	case EvWorktreeReady:
		m.step = stepNone
		m.advance(ev.AtMs)
	case EvPlannerStarted:
		r.PlannerThreadID = ptr(ev.ThreadID)
	case EvPlanProposed:
		m.step = stepNone
		m.setPlan(ev.Tasks, ev.Summary)
		m.decide(ev.AtMs, fmt.Sprintf("plan v%d proposed by the planner: %d tasks", r.Plan.Version, len(ev.Tasks)))
		if r.Trust.Planning == protocol.TrustAuto && (r.Status == protocol.RunRunning || r.Status == protocol.RunPausing) {
			m.approvePlan(ev.AtMs, "approved by auto trust")
		} else {
			m.wait(ev.AtMs, protocol.WaitPlanApproval, "the plan waits for approval")
		}
		m.advance(ev.AtMs)
	case EvPlannerFailed:
		m.step = stepNone
		m.fail(ev.AtMs, "the planner failed: "+ev.Reason)
	case EvClarificationAsked:
		m.step = stepNone
		asked := len(r.Clarifications)
		if asked >= r.MaxClarifications {
			m.noMoreQuestions = true
			reason := fmt.Sprintf("escalated: the run has asked %d clarifications (maxClarifications %d) and needs another: %s",
				asked, r.MaxClarifications, ev.Clarification.Question)
			m.blockers = append(m.blockers, reason)
			m.decide(ev.AtMs, reason)
			m.pause(ev.AtMs, reason)
			return
		}
		c := *ev.Clarification
		c.ID = fmt.Sprintf("c%d", asked+1)
		c.AskedAtMs = ev.AtMs
		if c.Options == nil {
			c.Options = []string{}
		}
		c.Answer, c.AnsweredAtMs = nil, nil
		if c.Stage == "" {
			c.Stage = protocol.StagePlanning
		}
		r.Clarifications = append(r.Clarifications, c)
		m.wait(ev.AtMs, protocol.WaitClarification, "clarification: "+c.Question)
		m.emit(Notify{protocol.NotifyRunClarificationRequested, protocol.RunClarificationRequestedNotification{RunID: r.ID, Clarification: c}})
	case EvClarificationAnswered:
		c := m.openClarification()
		c.Answer = ptr(ev.Text)
		c.AnsweredAtMs = ptr(ev.AtMs)
		m.decide(ev.AtMs, fmt.Sprintf("clarification %s answered: %s", c.ID, ev.Text))
		m.unwait()
		m.advance(ev.AtMs)
	case EvPlanUpdated:
		m.setPlan(ev.Tasks, r.Plan.Summary)
		m.decide(ev.AtMs, fmt.Sprintf("plan v%d edited by the user: %d tasks", r.Plan.Version, len(ev.Tasks)))
	case EvPlanApproved:
		m.unwait()
		m.approvePlan(ev.AtMs, "approved by the user")
		m.advance(ev.AtMs)
	case EvPlanRejected:
		m.unwait()
		m.feedback = ev.Text
		m.decide(ev.AtMs, "plan rejected by the user: "+ev.Text)
		r.Stage = protocol.StagePlanning
		m.advance(ev.AtMs)
	case EvTaskApproved:
		t := m.task(m.gate)
		m.unwait()
		if ev.Decision == protocol.TaskDecisionSkip {
			r.CurrentTaskID = nil
			t.Status = protocol.TaskSkipped
			m.decide(ev.AtMs, fmt.Sprintf("task %s skipped by the user", t.ID))
		} else {
			if !m.gateFix {
				t.Status = protocol.TaskApproved
			}
			m.decide(ev.AtMs, fmt.Sprintf("task %s approved by the user", t.ID))
			m.startTask(t)
		}
		m.gate, m.gateFix = "", false
		m.taskUpdated(t)
		m.advance(ev.AtMs)
	case EvTaskStarted:
		t := m.task(ev.TaskID)
		t.ThreadID = ptr(ev.ThreadID)
		m.taskUpdated(t)
	case EvTaskWaiting:
		// The run waits with its task thread; a run paused by the user
		// stays paused.
		switch {
		case r.Status == protocol.RunRunning, r.Status == protocol.RunPausing, m.waitingFor(protocol.WaitTaskThread):
			since := m.sinceMs
			again := m.waitingFor(protocol.WaitTaskThread)
			m.taskWaitKind = protocol.AttentionKind(ev.Text)
			m.wait(ev.AtMs, protocol.WaitTaskThread, fmt.Sprintf("task %s: its thread waits: %s", ev.TaskID, ev.Reason))
			if m.taskWaitKind == protocol.AttentionPaused {
				// Paused, not waiting: headless, apserver run declines the
				// thread's approvals and questions, but cannot resume it.
				r.Status = protocol.RunPaused
			}
			if again {
				m.sinceMs = since
				m.emit(m.attention())
			}
		}
	case EvTaskContinued:
		if m.waitingFor(protocol.WaitTaskThread) {
			m.unwait()
		}
	case EvTaskImplemented:
		if m.waitingFor(protocol.WaitTaskThread) {
			m.unwait()
		}
		t := m.task(ev.TaskID)
		if !ev.OK {
			m.failedAttempt(ev.AtMs, t, "implementation did not finish: "+ev.Reason)
			return
		}
		m.step = stepValidate
		r.Stage = protocol.StageValidation
		m.emit(Validate{Task: *t})
	case EvTaskValidated:
		t := m.task(ev.TaskID)
		if !ev.OK {
			m.failedAttempt(ev.AtMs, t, ev.Reason)
			return
		}
		m.attempts = append(m.attempts, Attempt{TaskID: t.ID, Attempt: t.RetryCount + 1, OK: true, Report: ev.Reason, AtMs: ev.AtMs})
		m.step = stepCommit
		m.emit(m.commitEffect(t))
	case EvTaskCommitted:
		t := m.task(ev.TaskID)
		t.Status = protocol.TaskCompleted
		t.Commit = ptr(ev.Commit)
		t.CompletedAtMs = ptr(ev.AtMs)
		t.LastFailure = nil
		m.step, m.cur = stepNone, ""
		r.CurrentTaskID = nil
		r.Stage = protocol.StageImplementation
		m.taskUpdated(t)
		if r.PullRequest != nil && m.ghOn() {
			// push after_plan: the open draft says how far the run got.
			m.emit(UpdatePRBody{Number: r.PullRequest.Number, Snapshot: m.Snapshot()})
		}
		m.blueprintCommitted(t, ev.AtMs)
		m.advance(ev.AtMs)
	case EvRepairApproved:
		p := r.RepairProposal
		fix := p.ProposedTask
		if len(ev.Tasks) == 1 {
			fix = ev.Tasks[0]
		}
		blocked := m.task(p.TaskID)
		blocked.Status = protocol.TaskApproved
		blocked.RetryCount = 0
		blocked.Dependencies = append(slices.Clone(blocked.Dependencies), fix.ID)
		i := m.taskIndex(p.TaskID)
		r.Plan.Tasks = slices.Insert(r.Plan.Tasks, i, protocol.RunTask{PlanTask: normTask(fix), Status: protocol.TaskApproved})
		r.Plan.Version++
		r.RepairProposal = nil
		m.blockers = nil
		m.ghs.checkFails = 0
		m.decide(ev.AtMs, fmt.Sprintf("repair approved: task %s inserted before %s", fix.ID, p.TaskID))
		m.unwait()
		m.emit(Notify{protocol.NotifyRunPlanUpdated, protocol.RunPlanUpdatedNotification{RunID: r.ID, Plan: m.Run().Plan}})
		m.advance(ev.AtMs)
	case EvPaused:
		m.decide(ev.AtMs, "paused by the user")
		if m.step == stepWatch {
			// Watching a pull request is no work in flight: it stops.
			m.step = stepNone
		}
		if m.step == stepNone {
			m.pause(ev.AtMs, "paused by the user")
			return
		}
		// A step is in flight (the planner's turn, a task's thread, its
		// validation or commit): it finishes, then the run pauses.
		m.pauseAsked = true
		if r.Status == protocol.RunRunning || r.Status == protocol.RunQueued {
			r.Status = protocol.RunPausing
			r.QueuePosition = nil
			r.Reason = ptr(m.pausingReason())
		}
	case EvResumed:
		m.decide(ev.AtMs, "resumed by the user")
		if m.waitingFor(protocol.WaitGitHub) {
			r.Status = protocol.RunRunning
			r.WaitingFor, r.Reason = nil, nil
			m.emit(ClearAttention{})
			m.ghResume()
			return
		}
		failed := r.Status == protocol.RunFailed
		if failed {
			m.blockers = nil
		}
		m.pauseAsked = false
		r.Status = protocol.RunRunning
		r.WaitingFor, r.Reason = nil, nil
		m.emit(ClearAttention{})
		if !failed || !m.retryStep() {
			m.advance(ev.AtMs)
		}
		m.failedStep, m.failedTask = stepNone, ""
	case EvQueued:
		r.Status = protocol.RunQueued
		r.QueuePosition = ptr(ev.Position)
		r.Reason = ptr(fmt.Sprintf("queued: waits for a slot (max_parallel_runs); place %d in the queue", ev.Position))
	case EvDequeued:
		r.Status = protocol.RunRunning
		r.QueuePosition, r.Reason = nil, nil
	case EvCancelled:
		if m.cur != "" {
			t := m.task(m.cur)
			if t.ThreadID != nil && m.step == stepImplement {
				m.emit(Interrupt{ThreadID: *t.ThreadID})
			}
			t.Status = protocol.TaskFailed
			t.LastFailure = ptr("the run was cancelled")
			m.taskUpdated(t)
		}
		if m.step == stepPlanning && r.PlannerThreadID != nil {
			m.emit(Interrupt{ThreadID: *r.PlannerThreadID})
		}
		m.decide(ev.AtMs, "cancelled by the user")
		m.blueprintCancelled()
		m.end(ev.AtMs, protocol.RunCancelled, "cancelled by the user")
	case EvMerged:
		m.step = stepNone
		if ev.Commit != "" {
			r.MergeCommit = ptr(ev.Commit)
			m.decide(ev.AtMs, fmt.Sprintf("merged into %s (%s) as %s", r.BaseBranch, r.Merge, ev.Commit))
		} else if ev.Reason != "" {
			m.decide(ev.AtMs, fmt.Sprintf("branch %s not merged: %s", r.Branch, ev.Reason))
		} else {
			m.decide(ev.AtMs, fmt.Sprintf("branch %s left for review", r.Branch))
		}
		// A merge refused says why in the run's reason (state.md, run/completed).
		m.end(ev.AtMs, protocol.RunCompleted, ev.Reason)
	case EvFailed:
		m.failedStep, m.failedTask = m.step, m.cur
		m.step = stepNone
		m.fail(ev.AtMs, ev.Reason)
	}
}

// finish sends run/updated when what it reports changed, and rewrites the
// artifacts (the worktree exists once the run is past stepWorktree).
func (m *Machine) finish(before updatedKey, now int64) {
	m.recount()
	after := m.updated()
	if after != before {
		m.emit(Notify{protocol.NotifyRunUpdated, protocol.RunUpdatedNotification{RunID: m.run.ID, Status: m.run.Status,
			Stage: m.run.Stage, WaitingFor: m.run.WaitingFor, Reason: m.run.Reason, CurrentTaskID: m.run.CurrentTaskID,
			QueuePosition: m.run.QueuePosition, Counts: m.run.Counts, PullRequest: m.Run().PullRequest}})
	}
	if m.step != stepWorktree && !(m.run.Status == protocol.RunFailed && m.last.Type == EvStarted) {
		// The artifacts go first in the batch: on disk before a client
		// hears of the change, and before a commit or merge of the batch.
		m.out = append([]Effect{WriteArtifacts{Snapshot: m.Snapshot()}}, m.out...)
	}
	if m.run.Status.Final() && before.status != m.run.Status {
		m.emit(Notify{protocol.NotifyRunCompleted, protocol.RunCompletedNotification{Run: m.Run()}})
		m.emit(Released{})
	}
}

func (m *Machine) recount() {
	c := protocol.RunCounts{Total: len(m.run.Plan.Tasks)}
	for _, t := range m.run.Plan.Tasks {
		switch t.Status {
		case protocol.TaskPending:
			c.Pending++
		case protocol.TaskApproved:
			c.Approved++
		case protocol.TaskRunning:
			c.Running++
		case protocol.TaskCompleted:
			c.Completed++
		case protocol.TaskFailed:
			c.Failed++
		case protocol.TaskBlocked:
			c.Blocked++
		case protocol.TaskSkipped:
			c.Skipped++
		}
	}
	m.run.Counts = c
}

func (m *Machine) decide(now int64, text string) {
	m.decisions = append(m.decisions, Decision{AtMs: now, Text: text})
}

func (m *Machine) wait(now int64, w protocol.RunWaitingFor, reason string) {
	r := &m.run
	r.Status = protocol.RunWaiting
	r.WaitingFor = ptr(w)
	r.Reason = ptr(reason)
	if w == protocol.WaitPlanApproval {
		r.Stage = protocol.StagePlanApproval
	}
	if w != protocol.WaitTaskThread {
		// A pausing run whose step ended in a wait on a human waits for
		// that: nothing runs until it is answered.
		m.pauseAsked = false
	}
	m.sinceMs = now
	m.emit(m.attention())
}

// waitingFor says whether the run waits (status waiting or paused) for w.
func (m *Machine) waitingFor(w protocol.RunWaitingFor) bool {
	st := m.run.Status
	return (st == protocol.RunWaiting || st == protocol.RunPaused) && m.run.WaitingFor != nil && *m.run.WaitingFor == w
}

func (m *Machine) unwait() {
	m.run.Status = protocol.RunRunning
	m.run.WaitingFor, m.run.Reason = nil, nil
	if m.pauseAsked && m.step != stepNone {
		m.run.Status = protocol.RunPausing
		m.run.Reason = ptr(m.pausingReason())
	}
	m.emit(ClearAttention{})
}

// pausingReason is the reason of a pausing run: what it finishes first.
func (m *Machine) pausingReason() string {
	what := "its current step"
	switch m.step {
	case stepPlanning:
		what = "the planner's turn"
	case stepImplement, stepValidate, stepCommit:
		what = fmt.Sprintf("task %s (%s)", m.cur, m.step)
	case stepWorktree:
		what = "the worktree"
	case stepMerge:
		what = "the merge"
	}
	return fmt.Sprintf("pausing: %s finishes first (run/pause)", what)
}

// settlePause pauses a pausing run once the step it waited for ended. A
// run that went to wait on a human meanwhile (a plan approval, a
// question, a gate) waits for that instead: nothing runs until it is
// answered.
func (m *Machine) settlePause(now int64) {
	if !m.pauseAsked || m.step != stepNone {
		return
	}
	switch m.run.Status {
	case protocol.RunRunning, protocol.RunPausing:
		m.pause(now, "paused by the user")
	default:
		m.pauseAsked = false
	}
}

func (m *Machine) pause(now int64, reason string) {
	r := &m.run
	m.pauseAsked = false
	r.QueuePosition = nil
	r.Status = protocol.RunPaused
	if r.WaitingFor == nil || *r.WaitingFor != protocol.WaitRepair {
		r.WaitingFor = ptr(protocol.WaitResume)
	}
	r.Reason = ptr(reason)
	m.sinceMs = now
	m.emit(m.attention())
}

// attention is the attention item of a run waiting on a human.
func (m *Machine) attention() SetAttention {
	r := m.run
	kind := protocol.AttentionPaused
	if r.WaitingFor != nil {
		switch *r.WaitingFor {
		case protocol.WaitPlanApproval, protocol.WaitTaskApproval:
			kind = protocol.AttentionApproval
		case protocol.WaitClarification:
			kind = protocol.AttentionQuestion
		case protocol.WaitTaskThread:
			if m.taskWaitKind != "" {
				kind = m.taskWaitKind
			}
		}
	}
	thread := ""
	if r.PlannerThreadID != nil {
		thread = *r.PlannerThreadID
	}
	for _, id := range []string{m.gate, m.cur} {
		if t := m.task(id); t != nil && t.ThreadID != nil {
			thread = *t.ThreadID
			break
		}
	}
	reason := ""
	if r.Reason != nil {
		reason = *r.Reason
	}
	task := ""
	switch {
	case m.gate != "":
		task = m.gate
	case m.cur != "":
		task = m.cur
	case r.RepairProposal != nil:
		task = r.RepairProposal.TaskID
	}
	return SetAttention{ThreadID: thread, Kind: kind, Reason: fmt.Sprintf("run %s: %s", r.ID, reason), SinceMs: m.sinceMs, TaskID: task}
}

func (m *Machine) fail(now int64, reason string) {
	m.blockers = append(m.blockers, reason)
	m.decide(now, "failed: "+reason)
	m.end(now, protocol.RunFailed, reason)
	m.emit(m.attention())
}

func (m *Machine) end(now int64, s protocol.RunStatus, reason string) {
	r := &m.run
	r.Status = s
	r.Stage = protocol.StageDone
	r.WaitingFor = nil
	if s == protocol.RunFailed {
		r.WaitingFor = ptr(protocol.WaitResume)
	}
	r.Reason = nil
	if reason != "" {
		r.Reason = ptr(reason)
	}
	r.CurrentTaskID = nil
	r.QueuePosition = nil
	m.step, m.cur, m.gate = stepNone, "", ""
	m.pauseAsked = false
	m.sinceMs = now
	if s != protocol.RunFailed {
		m.emit(ClearAttention{})
	}
}

func (m *Machine) openClarification() *protocol.RunClarification {
	cs := m.run.Clarifications
	if n := len(cs); n > 0 && cs[n-1].Answer == nil {
		return &cs[n-1]
	}
	return nil
}

func normTask(p protocol.PlanTask) protocol.PlanTask {
	if p.Dependencies == nil {
		p.Dependencies = []string{}
	}
	if p.Acceptance.Criteria == nil {
		p.Acceptance.Criteria = []string{}
	}
	if p.Acceptance.Checks == nil {
		p.Acceptance.Checks = []string{}
	}
	if p.Acceptance.Files == nil {
		p.Acceptance.Files = []string{}
	}
	if p.Kind == "" {
		p.Kind = protocol.TaskKindFileEdit
	}
	if p.Risk == "" {
		p.Risk = protocol.RiskLow
	}
	if risk, _ := ClassifyRisk(p); risk == protocol.RiskHigh {
		p.Risk = protocol.RiskHigh
	}
	return p
}

func (m *Machine) setPlan(tasks []protocol.PlanTask, summary string) {
	r := &m.run
	old := map[string]protocol.RunTask{}
	for _, t := range r.Plan.Tasks {
		old[t.ID] = t
	}
	ts := make([]protocol.RunTask, 0, len(tasks))
	for _, p := range tasks {
		t := protocol.RunTask{PlanTask: normTask(p), Status: protocol.TaskPending}
		if o, ok := old[p.ID]; ok {
			t.RetryCount, t.ThreadID, t.LastFailure = o.RetryCount, o.ThreadID, o.LastFailure
		}
		ts = append(ts, t)
	}
	r.Plan = protocol.RunPlan{Version: r.Plan.Version + 1, Summary: summary, Tasks: ts}
	m.emit(Notify{protocol.NotifyRunPlanUpdated, protocol.RunPlanUpdatedNotification{RunID: r.ID, Plan: m.Run().Plan}})
}

func (m *Machine) approvePlan(now int64, how string) {
	r := &m.run
	r.Plan.Approved = true
	for i := range r.Plan.Tasks {
		t := &r.Plan.Tasks[i]
		if t.Status == protocol.TaskPending && t.Risk != protocol.RiskHigh && r.Trust.Implementation == protocol.TrustAuto {
			t.Status = protocol.TaskApproved
		}
	}
	m.decide(now, fmt.Sprintf("plan v%d %s", r.Plan.Version, how))
	r.Stage = protocol.StageImplementation
	m.emit(Notify{protocol.NotifyRunPlanUpdated, protocol.RunPlanUpdatedNotification{RunID: r.ID, Plan: m.Run().Plan}})
}

func (m *Machine) taskIndex(id string) int {
	for i, t := range m.run.Plan.Tasks {
		if t.ID == id {
			return i
		}
	}
	return -1
}

func (m *Machine) task(id string) *protocol.RunTask {
	if i := m.taskIndex(id); i >= 0 && id != "" {
		return &m.run.Plan.Tasks[i]
	}
	return nil
}

func (m *Machine) taskUpdated(t *protocol.RunTask) {
	m.emit(Notify{protocol.NotifyRunTaskUpdated, protocol.RunTaskUpdatedNotification{RunID: m.run.ID, Task: *t}})
}

// advance starts the next piece of work when the run is running and
// nothing is in flight: the planner, the next ready task (or its gate),
// or the end.
func (m *Machine) advance(now int64) {
	r := &m.run
	if r.Status != protocol.RunRunning || m.step != stepNone {
		return
	}
	if !r.Plan.Approved {
		if m.startFromBlueprint(now) {
			return
		}
		m.step = stepPlanning
		r.Stage = protocol.StagePlanning
		m.emit(m.plannerEffect())
		return
	}
	if r.Autonomy == protocol.AutonomyOff {
		m.decide(now, "autonomy off: the run ends with the approved plan")
		m.step = stepMerge
		r.Stage = protocol.StageMerge
		m.emit(Merge{Into: false, Mode: r.Merge})
		return
	}
	if m.ghEarly() {
		return
	}
	t := m.nextTask()
	if t == nil {
		for _, t := range r.Plan.Tasks {
			if t.Status != protocol.TaskCompleted && t.Status != protocol.TaskSkipped {
				// Only tasks whose dependencies were skipped are left.
				m.fail(now, fmt.Sprintf("task %s cannot run: a task it depends on was skipped", t.ID))
				return
			}
		}
		if m.ghOn() {
			m.ghFinish()
			return
		}
		m.step = stepMerge
		r.Stage = protocol.StageMerge
		m.emit(m.mergeEffect())
		return
	}
	if t.Status == protocol.TaskPending {
		m.gateTask(now, t, false)
		return
	}
	m.startTask(t)
}

// nextTask is the first task in plan order that is not done and whose
// dependencies are completed (or skipped... no: a skipped dependency
// blocks its dependents, which then fail the run).
func (m *Machine) nextTask() *protocol.RunTask {
	done := map[string]bool{}
	for _, t := range m.run.Plan.Tasks {
		if t.Status == protocol.TaskCompleted {
			done[t.ID] = true
		}
	}
	for i := range m.run.Plan.Tasks {
		t := &m.run.Plan.Tasks[i]
		if t.Status != protocol.TaskPending && t.Status != protocol.TaskApproved && t.Status != protocol.TaskRunning {
			continue
		}
		ready := true
		for _, d := range t.Dependencies {
			if !done[d] {
				ready = false
			}
		}
		if ready {
			return t
		}
	}
	return nil
}

func (m *Machine) gateTask(now int64, t *protocol.RunTask, fix bool) {
	m.gate, m.gateFix = t.ID, fix
	// The task waiting at the gate is the run's current task: a client
	// knows what run/task/approve is for without reading the reason.
	m.run.CurrentTaskID = ptr(t.ID)
	var reason string
	switch {
	case fix:
		reason = fmt.Sprintf("fix attempt %d of task %s waits for approval (fixes trust manual): %s", t.RetryCount, t.ID, deref(t.LastFailure))
	case t.Risk == protocol.RiskHigh:
		_, why := ClassifyRisk(t.PlanTask)
		if why == "" {
			why = "the planner or the command rules marked it high risk"
		}
		reason = fmt.Sprintf("high-risk task %s waits for approval: %s", t.ID, why)
	case m.ghs.fixTasks[t.ID]:
		reason = fmt.Sprintf("fix task %s from GitHub waits for approval (fixes trust manual): %s", t.ID, firstLine(t.Description))
	default:
		reason = fmt.Sprintf("task %s waits for approval (implementation trust manual)", t.ID)
	}
	m.wait(now, protocol.WaitTaskApproval, reason)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (m *Machine) startTask(t *protocol.RunTask) {
	r := &m.run
	if r.Status != protocol.RunRunning {
		return
	}
	t.Status = protocol.TaskRunning
	m.cur = t.ID
	r.CurrentTaskID = ptr(t.ID)
	r.Stage = protocol.StageImplementation
	m.step = stepImplement
	t.ThreadID = nil
	m.taskUpdated(t)
	m.blueprintProgress(t.ID, protocol.NodeInProgress)
	m.emit(StartTask{Task: *t, Attempt: t.RetryCount + 1, Objective: Objective(m.cfg, *t)})
}

// failedAttempt counts a failed implementation or validation: a fix
// attempt (under fixes trust) or, at MaxRetries, a blocked task with a
// repair proposal.
func (m *Machine) failedAttempt(now int64, t *protocol.RunTask, failure string) {
	r := &m.run
	m.attempts = append(m.attempts, Attempt{TaskID: t.ID, Attempt: t.RetryCount + 1, OK: false, Report: failure, AtMs: now})
	t.RetryCount++
	t.LastFailure = ptr(failure)
	m.step = stepNone
	r.Stage = protocol.StageImplementation
	if t.RetryCount >= m.cfg.MaxRetries {
		t.Status = protocol.TaskBlocked
		m.blueprintProgress(t.ID, protocol.NodeBlocked)
		m.cur = ""
		r.CurrentTaskID = nil
		r.RepairProposal = &protocol.RunRepairProposal{TaskID: t.ID, Failure: failure, ProposedTask: RepairTask(*t, m.run.Plan.Tasks)}
		reason := fmt.Sprintf("task %s is blocked after %d failed attempts: %s", t.ID, t.RetryCount, failure)
		m.blockers = append(m.blockers, reason)
		m.decide(now, reason)
		m.taskUpdated(t)
		r.WaitingFor = ptr(protocol.WaitRepair)
		m.pause(now, reason)
		return
	}
	m.taskUpdated(t)
	if r.Status != protocol.RunRunning {
		return // paused meanwhile: resume starts the fix attempt
	}
	if r.Trust.Fixes == protocol.TrustManual {
		m.cur = ""
		r.CurrentTaskID = nil
		m.gateTask(now, t, true)
		return
	}
	m.startTask(t)
}

// RepairTask is the fix task proposed for a blocked task: it works on
// what failed, with the blocked task's acceptance.
func RepairTask(t protocol.RunTask, all []protocol.RunTask) protocol.PlanTask {
	ids := map[string]bool{}
	for _, o := range all {
		ids[o.ID] = true
	}
	id := t.ID + "-fix"
	for n := 2; ids[id]; n++ {
		id = fmt.Sprintf("%s-fix%d", t.ID, n)
	}
	return normTask(protocol.PlanTask{
		ID:    id,
		Title: "Fix: " + t.Title,
		Description: fmt.Sprintf("Task %s (%s) failed its acceptance %d times. Last failure:\n%s\n\nFind the cause and fix it so that its checks pass.",
			t.ID, t.Title, t.RetryCount, deref(t.LastFailure)),
		Kind:         protocol.TaskKindFileEdit,
		Dependencies: slices.Clone(t.Dependencies),
		Risk:         t.Risk,
		Acceptance:   t.Acceptance,
		Estimate:     t.Estimate,
	})
}

// Objective is the full-auto objective of a task's thread: the task and
// the acceptance that proves it.
func Objective(c Config, t protocol.RunTask) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are carrying out task %s of a plan for this request: %s\n\n", t.ID, c.Request)
	fmt.Fprintf(&b, "Task: %s\n%s\n", t.Title, t.Description)
	if len(t.Acceptance.Criteria) > 0 {
		b.WriteString("\nAcceptance criteria:\n")
		for _, s := range t.Acceptance.Criteria {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	if len(t.Acceptance.Checks) > 0 {
		b.WriteString("\nThese commands must succeed (exit 0) in the workspace:\n")
		for _, s := range t.Acceptance.Checks {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	if len(t.Acceptance.Files) > 0 {
		fmt.Fprintf(&b, "\nThese files must exist: %s\n", strings.Join(t.Acceptance.Files, ", "))
	}
	if t.RetryCount > 0 && t.LastFailure != nil {
		fmt.Fprintf(&b, "\nAttempt %d. The previous attempt failed validation:\n%s\n", t.RetryCount+1, *t.LastFailure)
	}
	b.WriteString("\nDo only this task. Do not commit: apserver commits when the checks pass.")
	return b.String()
}

func (m *Machine) commitEffect(t *protocol.RunTask) Commit {
	msg := fmt.Sprintf("%s: %s\n\n%s\n", t.ID, t.Title, strings.TrimSpace(t.Description))
	return Commit{Task: *t, Message: msg, Trailers: []Trailer{{"Apserver-Run", m.cfg.ID}, {"Apserver-Task", t.ID}}}
}

func (m *Machine) plannerEffect() StartPlanner {
	r := m.run
	var b strings.Builder
	fmt.Fprintf(&b, "Plan this request as a graph of small tasks: %s\n", r.Request)
	if r.Plan.Version > 0 {
		b.WriteString("\nYour previous plan:\n")
		for _, t := range r.Plan.Tasks {
			fmt.Fprintf(&b, "- %s: %s (depends on %s)\n", t.ID, t.Title, strings.Join(t.Dependencies, ", "))
		}
	}
	b.WriteString(m.blueprintPlannerNote())
	if m.feedback != "" {
		fmt.Fprintf(&b, "\nThe user sent the plan back with this feedback: %s\n", m.feedback)
	}
	for _, c := range r.Clarifications {
		if c.Answer != nil {
			fmt.Fprintf(&b, "\nYou asked: %s\nThe user answered: %s\n", c.Question, *c.Answer)
		}
	}
	if m.noMoreQuestions {
		b.WriteString("\nYou may not ask more questions: decide by yourself and return a plan.\n")
	} else {
		fmt.Fprintf(&b, "\nIf you cannot plan without an answer from the user, return a clarification instead of tasks (at most %d per run).\n", r.MaxClarifications)
	}
	thread := ""
	if r.PlannerThreadID != nil {
		thread = *r.PlannerThreadID
	}
	return StartPlanner{ThreadID: thread, Prompt: b.String(), NoMoreQuestions: m.noMoreQuestions}
}

// Restore is called once after the log was replayed into a fresh machine:
// it returns the effects that take up the work that was in flight when
// apserver stopped (reattaching to a task's thread, redoing an idempotent
// commit or merge), and the attention item of a run that waits. A run
// that failed, is paused, or waits on a human gets no work: it never
// retries by itself.
func (m *Machine) Restore(now int64) []Effect {
	m.out = nil
	r := m.run
	if r.ID == "" {
		return nil
	}
	m.resendEvidence(now)
	switch {
	case r.Status == protocol.RunCompleted || r.Status == protocol.RunCancelled:
		m.emit(Released{})
		return m.takeOut()
	case r.Status == protocol.RunPausing, r.Status == protocol.RunQueued:
		// Work in flight goes on (a pausing run pauses when it ends; a
		// queued one waits for its slot again).
		m.inflight()
		return m.takeOut()
	case r.Status != protocol.RunRunning:
		m.emit(m.attention())
		if m.step != stepNone {
			// Paused with a task in flight: it finishes (a pause stops
			// before the next task, not in the middle of one).
			m.inflight()
		}
		return m.takeOut()
	}
	if m.step == stepNone {
		m.advance(now)
	} else {
		m.inflight()
	}
	return m.takeOut()
}

// retryStep takes up again the step that failed the run, when it is one
// that is tried again as it was (the worktree, a task's validation or
// commit): a task's validation that failed (its validator's answer
// unreadable, git refusing the diff) is validated again, not implemented
// again. It reports whether it did; otherwise advance decides.
func (m *Machine) retryStep() bool {
	r := &m.run
	switch m.failedStep {
	case stepWorktree:
		r.Stage = protocol.StagePlanning
	case stepValidate, stepCommit:
		t := m.task(m.failedTask)
		if t == nil || t.Status != protocol.TaskRunning {
			return false
		}
		m.cur = t.ID
		r.CurrentTaskID = ptr(t.ID)
		r.Stage = protocol.StageValidation
	default:
		return false
	}
	m.step = m.failedStep
	m.inflight()
	return true
}

// inflight asks again for the work of the current step.
func (m *Machine) inflight() {
	r := m.run
	switch m.step {
	case stepWorktree:
		m.emit(CreateWorktree{})
	case stepPlanning:
		m.emit(m.plannerEffect())
	case stepImplement:
		t := m.task(m.cur)
		e := StartTask{Task: *t, Attempt: t.RetryCount + 1, Objective: Objective(m.cfg, *t)}
		if t.ThreadID != nil {
			e.ThreadID = *t.ThreadID
		}
		m.emit(e)
	case stepValidate:
		m.emit(Validate{Task: *m.task(m.cur)})
	case stepCommit:
		t := m.task(m.cur)
		m.emit(m.commitEffect(t))
	case stepMerge:
		if r.Autonomy == protocol.AutonomyOff {
			m.emit(Merge{Into: false, Mode: r.Merge})
		} else {
			m.emit(m.mergeEffect())
		}
	default:
		m.ghInflight()
	}
}

func (m *Machine) takeOut() []Effect {
	out := m.out
	m.out = nil
	return out
}

// Replay rebuilds a machine from its log. Effects are dropped: Restore
// gives the ones that continue the run.
func Replay(events []Event) *Machine {
	m := New()
	for _, ev := range events {
		m.Apply(ev.AtMs, ev)
	}
	return m
}
