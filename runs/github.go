package runs

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apserver/apserver/protocol"
)

// The GitHub stage (docs/github.md): a run whose Config.GitHub is set ends
// on GitHub — its branch pushed, a draft pull request opened and marked
// ready, then watched: a red check or a review becomes a fix task, green
// checks merge it under implementation trust auto (or wait for a human
// under manual), and GitHub's refusals and errors are waits, never a
// failure. The decisions are here; package runner talks to GitHub.

// GitHubConfig is how a run uses GitHub, fixed at run/start from [github]
// and the repository's remote. It holds no secret: the token is read from
// the environment (TokenEnv) each time the driver talks to GitHub.
type GitHubConfig struct {
	// Unavailable says why GitHub cannot be used (no remote, not a GitHub
	// remote, no token): the run says so and ends as a local branch.
	Unavailable string `json:"unavailable,omitempty"`
	Owner       string `json:"owner,omitempty"`
	Name        string `json:"name,omitempty"`
	REST        string `json:"rest,omitempty"`
	GraphQL     string `json:"graphql,omitempty"`
	// Remote is the git remote the branch is pushed to (origin).
	Remote        string   `json:"remote,omitempty"`
	TokenEnv      string   `json:"tokenEnv,omitempty"`
	Push          string   `json:"push,omitempty"` // end | after_plan
	Draft         bool     `json:"draft"`
	Reviewers     []string `json:"reviewers,omitempty"`
	TeamReviewers []string `json:"teamReviewers,omitempty"`
	Labels        []string `json:"labels,omitempty"`
	MergeMethod   string   `json:"mergeMethod,omitempty"`
	AutoMerge     string   `json:"autoMerge,omitempty"` // false | true | when_required
	Bots          []string `json:"bots,omitempty"`
	DeleteBranch  bool     `json:"deleteBranch"`
	PollMs        int64    `json:"pollMs,omitempty"`
	PollMaxMs     int64    `json:"pollMaxMs,omitempty"`
}

// GitHub events: results of the GitHub effects.
const (
	EvPushed      EventType = "pushed"      // Commit: the SHA pushed
	EvPROpened    EventType = "prOpened"    // GitHub.PR
	EvPRReady     EventType = "prReady"     // the draft was marked ready for review
	EvPRPolled    EventType = "prPolled"    // GitHub.Poll: the PR, its checks and new review comments
	EvReplied     EventType = "replied"     // GitHub.IDs: the review comments answered, their threads resolved
	EvPRMerged    EventType = "prMerged"    // Commit; OK false: auto-merge enabled, GitHub merges later
	EvGitHubError EventType = "githubError" // GitHub.Kind, Reason, GitHub.WaitMs
)

// GitHubData is the GitHub part of an event.
type GitHubData struct {
	PR   *protocol.RunPullRequest `json:"pr,omitempty"`
	Poll *Poll                    `json:"poll,omitempty"`
	IDs  []int64                  `json:"ids,omitempty"`
	// Kind is the error's kind (github.Kind's name, or "pushRejected");
	// WaitMs how long a rate limit says to wait.
	Kind   string `json:"kind,omitempty"`
	WaitMs int64  `json:"waitMs,omitempty"`
}

// Poll is one look at the pull request.
type Poll struct {
	State       protocol.RunPullRequestState  `json:"state"`
	HeadSHA     string                        `json:"headSha"`
	MergeCommit string                        `json:"mergeCommit,omitempty"`
	Checks      protocol.RunPullRequestChecks `json:"checks"`
	// Failures describe each failed check: its annotations and the end
	// of its job's log (github.Check.Describe).
	Failures   []string `json:"failures,omitempty"`
	Unresolved int      `json:"unresolved"`
	// Review is the first batch of review comments to act on (authors
	// with write access, listed bots; none consumed before).
	Review []ReviewComment `json:"review,omitempty"`
}

// ReviewComment is a review comment a run acts on.
type ReviewComment struct {
	ID       int64  `json:"id"`
	ThreadID string `json:"threadId"`
	Author   string `json:"author"`
	Body     string `json:"body"`
	Path     string `json:"path,omitempty"`
	Line     int    `json:"line,omitempty"`
}

// Check states of a poll (github.CheckState's values).
const (
	checksPending        = "pending"
	checksPassed         = "passed"
	checksFailed         = "failed"
	checksActionRequired = "actionRequired"
)

// PushBranch commits the run's artifacts in its branch and pushes the
// branch (git CLI, never forced). Result: EvPushed or EvGitHubError
// (kind pushRejected when the remote branch has a commit the run did not
// push).
type PushBranch struct {
	Snapshot Snapshot
	// N numbers the push, for the idempotent artifacts commit.
	N int
}

// OpenPR opens the run's pull request (or finds the one open for its
// branch), with reviewers and labels. Result: EvPROpened.
type OpenPR struct {
	Snapshot Snapshot
	Draft    bool
}

// UpdatePRBody rewrites the pull request's body from the run. No result
// event: a body that could not be written is written next time.
type UpdatePRBody struct {
	Number   int
	Snapshot Snapshot
}

// MarkReady takes the draft out of draft. Result: EvPRReady.
type MarkReady struct{ PR protocol.RunPullRequest }

// PollPR looks at the pull request after DelayMs: its state and head, the
// checks of the head, and review comments not in Consumed. Result:
// EvPRPolled.
type PollPR struct {
	PR       protocol.RunPullRequest
	DelayMs  int64
	Consumed []int64
}

// ReplyAndResolve answers each comment in its thread naming the fix
// commit, and resolves the thread; a comment answered before is skipped.
// Result: EvReplied.
type ReplyAndResolve struct {
	PR       protocol.RunPullRequest
	Commit   string
	TaskID   string
	Comments []ReviewComment
}

// MergePR merges the pull request if its head is still SHA (or, Auto,
// enables GitHub's auto-merge), then deletes the branch when configured.
// Result: EvPRMerged.
type MergePR struct {
	PR           protocol.RunPullRequest
	SHA          string
	Method       string
	Auto         bool
	DeleteBranch bool
}

// Retry asks again for Effect after DelayMs (a rate limit's wait, a
// network error's backoff).
type Retry struct {
	Effect  Effect
	DelayMs int64
}

func (PushBranch) effect()      {}
func (OpenPR) effect()          {}
func (UpdatePRBody) effect()    {}
func (MarkReady) effect()       {}
func (PollPR) effect()          {}
func (ReplyAndResolve) effect() {}
func (MergePR) effect()         {}
func (Retry) effect()           {}

// replyBatch is a review batch whose fix task has not been answered yet.
type replyBatch struct {
	TaskID   string
	Comments []ReviewComment
}

// ghState is the GitHub stage's state.
type ghState struct {
	pushed     string // the head SHA the run pushed last
	pushes     int
	looks      int // polls since the last change: the backoff
	checkFails int // red check rounds in a row
	consumed   map[int64]bool
	replies    []replyBatch
	fixes      int // fix tasks made from checks
	reviews    int // fix tasks made from reviews
	errors     int // GitHub errors in a row
	retry      step
	movedHead  string          // the head a human pushed, while the run asks
	autoAsked  bool            // auto-merge was tried after a refused merge
	early      bool            // pushed after plan approval (push after_plan)
	fixTasks   map[string]bool // the fix tasks made from checks and reviews
}

// gh is the run's GitHub configuration, nil when the run does not use
// GitHub.
func (m *Machine) gh() *GitHubConfig { return m.cfg.GitHub }

func (m *Machine) ghOn() bool { return m.cfg.GitHub != nil && m.cfg.GitHub.Unavailable == "" }

func (m *Machine) isGitHubStep() bool {
	switch m.step {
	case stepPush, stepOpenPR, stepReady, stepWatch, stepReply, stepMergePR:
		return true
	}
	return false
}

// mergeEffect is the Merge of a run that ends locally: under GitHub
// unavailable it leaves the branch, saying why.
func (m *Machine) mergeEffect() Merge {
	r := m.run
	if g := m.gh(); g != nil && g.Unavailable != "" {
		return Merge{Into: false, Mode: r.Merge, Reason: "GitHub cannot be used (" + g.Unavailable + "): the run ends as a local branch"}
	}
	return Merge{Into: r.Trust.Implementation == protocol.TrustAuto && r.Autonomy != protocol.AutonomyOff, Mode: r.Merge}
}

// ghEarly pushes and opens a draft before the first task (push
// after_plan). It reports whether it did.
func (m *Machine) ghEarly() bool {
	if !m.ghOn() || m.gh().Push != "after_plan" || m.ghs.early || m.run.PullRequest != nil {
		return false
	}
	m.ghs.early = true
	m.step = stepPush
	m.ghs.pushes++
	m.emit(PushBranch{Snapshot: m.Snapshot(), N: m.ghs.pushes})
	return true
}

// ghFinish starts the GitHub stage once every task is done: push, then
// open (or update) the pull request, then watch it.
func (m *Machine) ghFinish() {
	m.run.Stage = protocol.StageMerge
	m.step = stepPush
	m.ghs.pushes++
	m.emit(PushBranch{Snapshot: m.Snapshot(), N: m.ghs.pushes})
}

func (m *Machine) tasksDone() bool {
	for _, t := range m.run.Plan.Tasks {
		if t.Status != protocol.TaskCompleted && t.Status != protocol.TaskSkipped {
			return false
		}
	}
	return true
}

// watch polls the pull request after the backoff's delay.
func (m *Machine) watch() {
	g := m.gh()
	d := g.PollMs
	if d <= 0 {
		d = 10_000
	}
	maxD := g.PollMaxMs
	if maxD < d {
		maxD = max(d, 300_000)
	}
	for i := 0; i < m.ghs.looks && d < maxD; i++ {
		d *= 2
	}
	m.ghs.looks++
	m.step = stepWatch
	m.run.Stage = protocol.StageMerge
	m.emit(PollPR{PR: *m.run.PullRequest, DelayMs: min(d, maxD), Consumed: m.consumedIDs()})
}

func (m *Machine) consumedIDs() []int64 {
	ids := make([]int64, 0, len(m.ghs.consumed))
	for id := range m.ghs.consumed {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// afterPush goes on once the branch is on the remote.
func (m *Machine) afterPush(now int64) {
	r := &m.run
	if r.PullRequest == nil {
		m.step = stepOpenPR
		m.emit(OpenPR{Snapshot: m.Snapshot(), Draft: m.gh().Draft})
		return
	}
	r.PullRequest.HeadSHA = m.ghs.pushed
	m.emit(UpdatePRBody{Number: r.PullRequest.Number, Snapshot: m.Snapshot()})
	m.afterOpen(now)
}

// afterOpen: the pull request exists and has the run's head.
func (m *Machine) afterOpen(now int64) {
	r := &m.run
	if !m.tasksDone() {
		m.step = stepNone // push after_plan: the tasks come first
		m.advance(now)
		return
	}
	if r.PullRequest.State == protocol.PullRequestDraft {
		m.step = stepReady
		m.emit(MarkReady{PR: *r.PullRequest})
		return
	}
	if len(m.ghs.replies) > 0 {
		b := m.ghs.replies[0]
		t := m.task(b.TaskID)
		commit := ""
		if t != nil && t.Commit != nil {
			commit = *t.Commit
		}
		m.step = stepReply
		m.emit(ReplyAndResolve{PR: *r.PullRequest, Commit: commit, TaskID: b.TaskID, Comments: b.Comments})
		return
	}
	m.ghs.looks = 0
	m.watch()
}

// applyGitHub applies the GitHub events.
func (m *Machine) applyGitHub(ev Event) {
	r := &m.run
	g := ev.GitHub
	if g == nil {
		g = &GitHubData{}
	}
	if ev.Type != EvGitHubError {
		m.ghs.errors = 0
		if m.waitingFor(protocol.WaitGitHub) {
			m.unwait()
		}
		if r.Reason != nil && strings.HasPrefix(*r.Reason, "GitHub") && r.Status == protocol.RunRunning {
			r.Reason = nil
		}
	}
	switch ev.Type {
	case EvPushed:
		m.ghs.pushed = ev.Commit
		m.decide(ev.AtMs, fmt.Sprintf("branch %s pushed at %s", r.Branch, short(ev.Commit)))
		m.afterPush(ev.AtMs)
	case EvPROpened:
		pr := *g.PR
		pr.HeadSHA = m.ghs.pushed
		r.PullRequest = &pr
		m.decide(ev.AtMs, fmt.Sprintf("pull request #%d opened (%s): %s", pr.Number, pr.State, pr.URL))
		m.afterOpen(ev.AtMs)
	case EvPRReady:
		r.PullRequest.State = protocol.PullRequestOpen
		m.decide(ev.AtMs, fmt.Sprintf("pull request #%d marked ready for review: every task passed validation", r.PullRequest.Number))
		m.afterOpen(ev.AtMs)
	case EvReplied:
		if len(m.ghs.replies) > 0 {
			b := m.ghs.replies[0]
			m.ghs.replies = m.ghs.replies[1:]
			m.decide(ev.AtMs, fmt.Sprintf("answered %d review comments with the commit of task %s and resolved their threads", len(g.IDs), b.TaskID))
		}
		m.afterOpen(ev.AtMs)
	case EvPRMerged:
		if !ev.OK {
			m.decide(ev.AtMs, fmt.Sprintf("auto-merge enabled on #%d: GitHub merges it when its requirements are met", r.PullRequest.Number))
			m.watch()
			return
		}
		m.merged(ev.AtMs, ev.Commit)
	case EvPRPolled:
		m.polled(ev.AtMs, *g.Poll)
	case EvGitHubError:
		m.githubError(ev.AtMs, g.Kind, ev.Reason, g.WaitMs)
	}
}

func (m *Machine) merged(now int64, commit string) {
	r := &m.run
	r.PullRequest.State = protocol.PullRequestMerged
	m.step = stepNone
	if commit != "" {
		r.MergeCommit = ptr(commit)
	}
	m.decide(now, fmt.Sprintf("pull request #%d merged into %s as %s", r.PullRequest.Number, r.BaseBranch, short(commit)))
	m.end(now, protocol.RunCompleted, "")
}

// polled decides on one look at the pull request.
func (m *Machine) polled(now int64, p Poll) {
	r := &m.run
	pr := r.PullRequest
	pr.Checks = p.Checks
	pr.UnresolvedComments = p.Unresolved
	if p.HeadSHA != "" {
		pr.HeadSHA = p.HeadSHA
	}
	switch p.State {
	case protocol.PullRequestMerged:
		m.merged(now, p.MergeCommit)
		return
	case protocol.PullRequestClosed:
		pr.State = protocol.PullRequestClosed
		m.step = stepNone
		m.decide(now, fmt.Sprintf("pull request #%d closed on GitHub without a merge; the branch is kept", pr.Number))
		m.end(now, protocol.RunCompleted, fmt.Sprintf("pull request #%d was closed without a merge", pr.Number))
		return
	}
	if p.HeadSHA != "" && p.HeadSHA != m.ghs.pushed {
		// Someone else pushed to the run's branch: the run never pushes
		// over it; a human says what to do.
		m.ghs.movedHead = p.HeadSHA
		m.ghWait(now, stepWatch, fmt.Sprintf("GitHub: the head of pull request #%d moved to %s, a commit this run did not push; "+
			"the run will not push on top of it: run/resume takes it as the head, or cancel the run", pr.Number, short(p.HeadSHA)))
		return
	}
	if len(p.Review) > 0 {
		if m.waitingFor(protocol.WaitChecks) || m.waitingFor(protocol.WaitReview) {
			m.unwait()
		}
		m.reviewFix(now, p.Review)
		return
	}
	switch p.Checks.State {
	case checksFailed:
		if m.waitingFor(protocol.WaitChecks) || m.waitingFor(protocol.WaitReview) {
			m.unwait()
		}
		m.checkFix(now, p)
	case checksActionRequired:
		if !m.waitingFor(protocol.WaitChecks) {
			m.wait(now, protocol.WaitChecks, fmt.Sprintf("GitHub: the workflows of pull request #%d wait for a human to approve them (%s); the run goes on when they ran",
				pr.Number, p.Checks.Summary))
		}
		m.watch()
	case checksPassed:
		m.ghs.checkFails = 0
		if m.waitingFor(protocol.WaitChecks) {
			m.unwait()
		}
		if r.Trust.Implementation == protocol.TrustAuto && r.Status == protocol.RunRunning {
			m.mergePR(now, m.gh().AutoMerge == "true")
			return
		}
		if !m.waitingFor(protocol.WaitReview) {
			m.decide(now, fmt.Sprintf("pull request #%d passed its checks; left open for review (implementation trust manual)", pr.Number))
			m.wait(now, protocol.WaitReview, fmt.Sprintf("pull request #%d passed its checks and waits for a human to review and merge it: %s", pr.Number, pr.URL))
		}
		m.watch()
	default: // pending, or none reported yet
		if m.waitingFor(protocol.WaitChecks) {
			m.unwait()
		}
		m.watch()
	}
}

func (m *Machine) mergePR(now int64, auto bool) {
	r := &m.run
	g := m.gh()
	m.step = stepMergePR
	how := "merging"
	if auto {
		how = "enabling auto-merge on"
	}
	m.decide(now, fmt.Sprintf("checks passed at %s: %s pull request #%d (%s, guarded by the head SHA)", short(m.ghs.pushed), how, r.PullRequest.Number, g.MergeMethod))
	m.emit(MergePR{PR: *r.PullRequest, SHA: m.ghs.pushed, Method: g.MergeMethod, Auto: auto, DeleteBranch: g.DeleteBranch})
}

// fixTask adds a fix task to the plan: approved under fixes trust auto,
// else it waits at the gate.
func (m *Machine) fixTask(now int64, p protocol.PlanTask) *protocol.RunTask {
	r := &m.run
	st := protocol.TaskApproved
	if r.Trust.Fixes != protocol.TrustAuto {
		st = protocol.TaskPending
	}
	p = normTask(p)
	if m.ghs.fixTasks == nil {
		m.ghs.fixTasks = map[string]bool{}
	}
	m.ghs.fixTasks[p.ID] = true
	r.Plan.Tasks = append(r.Plan.Tasks, protocol.RunTask{PlanTask: p, Status: st})
	r.Plan.Version++
	m.emit(Notify{protocol.NotifyRunPlanUpdated, protocol.RunPlanUpdatedNotification{RunID: r.ID, Plan: m.Run().Plan}})
	m.step = stepNone
	r.Stage = protocol.StageImplementation
	return &r.Plan.Tasks[len(r.Plan.Tasks)-1]
}

// checkFix turns red checks into a fix task, or, at the retry limit, a
// blocked task with a repair proposal.
func (m *Machine) checkFix(now int64, p Poll) {
	r := &m.run
	m.ghs.checkFails++
	m.ghs.fixes++
	desc := strings.Join(p.Failures, "\n")
	if desc == "" {
		desc = p.Checks.Summary
	}
	task := protocol.PlanTask{
		ID:    m.freeID(fmt.Sprintf("ci-fix-%d", m.ghs.fixes)),
		Title: fmt.Sprintf("Fix the failing checks of pull request #%d", r.PullRequest.Number),
		Description: fmt.Sprintf("GitHub's checks of %s failed (round %d of %d):\n\n%s\nFind the cause in the repository and fix it.",
			short(m.ghs.pushed), m.ghs.checkFails, m.cfg.MaxRetries, desc),
		Kind:       protocol.TaskKindFileEdit,
		Risk:       protocol.RiskLow,
		Acceptance: protocol.TaskAcceptance{Criteria: []string{"the failing checks pass"}},
	}
	if m.ghs.checkFails >= m.cfg.MaxRetries {
		t := m.fixTask(now, task)
		t.Status = protocol.TaskBlocked
		t.RetryCount = m.ghs.checkFails
		t.LastFailure = ptr(desc)
		r.RepairProposal = &protocol.RunRepairProposal{TaskID: t.ID, Failure: desc, ProposedTask: RepairTask(*t, r.Plan.Tasks)}
		reason := fmt.Sprintf("GitHub's checks of pull request #%d failed %d times in a row: %s", r.PullRequest.Number, m.ghs.checkFails, firstLine(desc))
		m.blockers = append(m.blockers, reason)
		m.decide(now, reason)
		m.taskUpdated(t)
		r.WaitingFor = ptr(protocol.WaitRepair)
		m.pause(now, reason)
		return
	}
	m.decide(now, fmt.Sprintf("checks of pull request #%d failed (round %d): fix task %s", r.PullRequest.Number, m.ghs.checkFails, task.ID))
	m.fixTask(now, task)
	m.advance(now)
}

// reviewFix turns one batch of review comments into one fix task; the
// comments are consumed (the log has their ids: a restart never answers
// them twice).
func (m *Machine) reviewFix(now int64, cs []ReviewComment) {
	r := &m.run
	if m.ghs.consumed == nil {
		m.ghs.consumed = map[int64]bool{}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Review comments on pull request #%d to address:\n", r.PullRequest.Number)
	for _, c := range cs {
		m.ghs.consumed[c.ID] = true
		where := ""
		if c.Path != "" {
			where = fmt.Sprintf(" on %s:%d", c.Path, c.Line)
		}
		fmt.Fprintf(&b, "- %s%s: %s\n", c.Author, where, strings.TrimSpace(c.Body))
	}
	m.ghs.reviews++
	id := m.freeID(fmt.Sprintf("review-%d", m.ghs.reviews))
	m.ghs.replies = append(m.ghs.replies, replyBatch{TaskID: id, Comments: slices.Clone(cs)})
	m.decide(now, fmt.Sprintf("%d review comments on pull request #%d: fix task %s", len(cs), r.PullRequest.Number, id))
	m.fixTask(now, protocol.PlanTask{
		ID: id, Title: fmt.Sprintf("Address the review of pull request #%d", r.PullRequest.Number),
		Description: b.String() + "\nChange the code as the reviewers ask.",
		Kind:        protocol.TaskKindFileEdit, Risk: protocol.RiskLow,
		Acceptance: protocol.TaskAcceptance{Criteria: []string{"each review comment is addressed"}},
	})
	m.advance(now)
}

func (m *Machine) freeID(id string) string {
	base := id
	for n := 2; m.taskIndex(id) >= 0; n++ {
		id = fmt.Sprintf("%s-%d", base, n)
	}
	return id
}

// githubError decides on an error GitHub (or the push) answered: a rate
// limit or a network error waits and tries again; what needs a human
// (a token, branch protection, a moved head) waits for run/resume.
func (m *Machine) githubError(now int64, kind, msg string, waitMs int64) {
	r := &m.run
	m.ghs.errors++
	again := m.step
	switch kind {
	case "rateLimited":
		when := "now: the limit has reset"
		if waitMs > 0 {
			when = fmt.Sprintf("in %s", msDuration(waitMs))
		}
		r.Reason = ptr(fmt.Sprintf("GitHub rate limit: %s; the run tries again %s", msg, when))
		m.retry(again, max(waitMs, 0))
		return
	case "network", "graphql", "other":
		if m.ghs.errors <= 5 {
			d := int64(1000) << (m.ghs.errors - 1)
			r.Reason = ptr(fmt.Sprintf("GitHub could not be reached or answered an error: %s; the run tries again in %s (attempt %d of 5)", msg, msDuration(d), m.ghs.errors))
			m.retry(again, d)
			return
		}
	case "mergeRefused":
		if m.step == stepMergePR && m.gh().AutoMerge == "when_required" && !m.ghs.autoAsked {
			m.ghs.autoAsked = true
			m.decide(now, fmt.Sprintf("GitHub refused a direct merge (%s): enabling auto-merge", msg))
			m.mergePR(now, true)
			return
		}
		m.ghWait(now, again, fmt.Sprintf("GitHub refused to merge pull request #%d: %s; a human resolves it (merge it on GitHub, or fix the rule and run/resume)", r.PullRequest.Number, msg))
		return
	case "conflict":
		if m.step == stepMergePR {
			m.ghWait(now, stepWatch, fmt.Sprintf("GitHub: the head of pull request #%d moved before the merge (%s); what was validated is not what would merge: run/resume looks again", r.PullRequest.Number, msg))
			return
		}
	case "pushRejected":
		m.ghWait(now, again, fmt.Sprintf("GitHub: the push of %s was rejected: %s; the run will not push over someone else's commit: a human resolves it, then run/resume", r.Branch, msg))
		return
	case "unauthorized":
		m.ghWait(now, again, fmt.Sprintf("GitHub refused the token: %s; fix the token (docs/github.md), then run/resume", msg))
		return
	}
	m.ghWait(now, again, fmt.Sprintf("GitHub: %s; run/resume tries again", msg))
}

// retry asks for the step's effect again after delayMs.
func (m *Machine) retry(s step, delayMs int64) {
	m.step = s
	effs := m.out
	m.out = nil
	m.inflight()
	again := m.out
	m.out = effs
	for _, e := range again {
		if p, ok := e.(PollPR); ok {
			delayMs = max(delayMs, p.DelayMs)
			p.DelayMs = 0
			e = p
		}
		m.emit(Retry{Effect: e, DelayMs: delayMs})
	}
}

// ghWait stops the GitHub stage until a human acts: run/resume takes up
// step s again.
func (m *Machine) ghWait(now int64, s step, reason string) {
	m.ghs.retry = s
	m.step = stepNone
	m.decide(now, reason)
	m.wait(now, protocol.WaitGitHub, reason)
}

// ghResume takes up the GitHub stage after run/resume.
func (m *Machine) ghResume() {
	if m.ghs.movedHead != "" {
		m.ghs.pushed = m.ghs.movedHead
		m.ghs.movedHead = ""
	}
	m.ghs.errors = 0
	m.step = m.ghs.retry
	if m.step == stepNone {
		m.step = stepWatch
	}
	m.ghs.retry = stepNone
	if m.step == stepWatch {
		m.ghs.looks = 0
		m.watch()
		return
	}
	m.inflight()
}

// ghInflight asks again for the GitHub step's work (Restore, Retry).
func (m *Machine) ghInflight() {
	r := m.run
	switch m.step {
	case stepPush:
		m.emit(PushBranch{Snapshot: m.Snapshot(), N: m.ghs.pushes})
	case stepOpenPR:
		m.emit(OpenPR{Snapshot: m.Snapshot(), Draft: m.gh().Draft})
	case stepReady:
		m.emit(MarkReady{PR: *r.PullRequest})
	case stepWatch:
		m.emit(PollPR{PR: *r.PullRequest, Consumed: m.consumedIDs()})
	case stepReply:
		m.afterOpen(m.run.UpdatedAtMs)
	case stepMergePR:
		g := m.gh()
		m.emit(MergePR{PR: *r.PullRequest, SHA: m.ghs.pushed, Method: g.MergeMethod, Auto: g.AutoMerge == "true" || m.ghs.autoAsked, DeleteBranch: g.DeleteBranch})
	}
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func msDuration(ms int64) string {
	switch {
	case ms >= 60_000:
		return fmt.Sprintf("%dm%02ds", ms/60_000, ms/1000%60)
	case ms >= 1000:
		return fmt.Sprintf("%ds", ms/1000)
	}
	return fmt.Sprintf("%dms", ms)
}
