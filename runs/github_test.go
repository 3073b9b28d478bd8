package runs

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
)

func ghCfg(mut ...func(*GitHubConfig)) func(*Config) {
	return func(c *Config) {
		g := &GitHubConfig{Owner: "acme", Name: "greet", Remote: "origin", Push: "end", Draft: true, MergeMethod: "squash",
			AutoMerge: "false", DeleteBranch: true, PollMs: 100, PollMaxMs: 800}
		for _, f := range mut {
			f(g)
		}
		c.GitHub = g
	}
}

// ghStart runs one task and pushes: the harness stands at OpenPR.
func ghStart(t *testing.T, mut ...func(*Config)) *harness {
	t.Helper()
	h := start(t, cfg(append([]func(*Config){ghCfg()}, mut...)...))
	h.do(Event{Type: EvPlanProposed, Tasks: []protocol.PlanTask{task("t1")}})
	h.do(Event{Type: EvPlanApproved})
	if h.m.waitingFor(protocol.WaitTaskApproval) {
		h.do(Event{Type: EvTaskApproved, TaskID: "t1", Decision: protocol.TaskDecisionApprove})
	}
	h.runTask()
	h.none(Merge{})
	h.want(PushBranch{})
	h.do(Event{Type: EvPushed, Commit: "aaaa1111"})
	if o := h.want(OpenPR{}).(OpenPR); !o.Draft {
		t.Errorf("OpenPR %+v, want a draft", o)
	}
	h.do(Event{Type: EvPROpened, GitHub: &GitHubData{PR: &protocol.RunPullRequest{Number: 7, URL: "https://gh/pull/7", State: protocol.PullRequestDraft}}})
	h.want(MarkReady{})
	h.do(Event{Type: EvPRReady})
	return h
}

func (h *harness) poll(p Poll) {
	h.t.Helper()
	h.want(PollPR{})
	if p.HeadSHA == "" {
		p.HeadSHA = h.m.ghs.pushed
	}
	h.do(Event{Type: EvPRPolled, GitHub: &GitHubData{Poll: &p}})
}

func passed() protocol.RunPullRequestChecks {
	return protocol.RunPullRequestChecks{State: "passed", Summary: "2 checks passed"}
}

// Under auto trust: push, draft, ready, checks polled with backoff, then a
// merge guarded by the head SHA that was pushed.
func TestGitHubAutoMerge(t *testing.T) {
	h := ghStart(t)
	p1 := h.want(PollPR{}).(PollPR)
	h.poll(Poll{State: protocol.PullRequestOpen, Checks: protocol.RunPullRequestChecks{State: "pending"}})
	p2 := h.want(PollPR{}).(PollPR)
	if p1.DelayMs != 100 || p2.DelayMs != 200 {
		t.Errorf("poll delays %d, %d; want 100, 200 (backoff)", p1.DelayMs, p2.DelayMs)
	}
	h.poll(Poll{State: protocol.PullRequestOpen, Checks: passed()})
	mg := h.want(MergePR{}).(MergePR)
	if mg.SHA != "aaaa1111" || mg.Method != "squash" || mg.Auto || !mg.DeleteBranch {
		t.Errorf("MergePR %+v", mg)
	}
	h.do(Event{Type: EvPRMerged, OK: true, Commit: "bbbb2222"})
	h.status(protocol.RunCompleted, "")
	r := h.m.Run()
	if r.PullRequest == nil || r.PullRequest.State != protocol.PullRequestMerged || deref(r.MergeCommit) != "bbbb2222" || r.PullRequest.Checks.State != "passed" {
		t.Errorf("run %+v, PR %+v", r, r.PullRequest)
	}
	arts := Artifacts(h.m.Snapshot())
	if st := string(arts[".apserver/runs/r1/state.md"]); !strings.Contains(st, "| pull request | #7 https://gh/pull/7 (merged) |") {
		t.Errorf("state.md:\n%s", st)
	}
	if cj := string(arts[".apserver/runs/r1/context.json"]); !strings.Contains(cj, `"pullRequest"`) || !strings.Contains(cj, `"number": 7`) {
		t.Errorf("context.json:\n%s", cj)
	}
	// The log replays to the same run.
	if got := Replay(h.log).Run(); !reflect.DeepEqual(got, r) {
		t.Errorf("Replay = %+v\nwant %+v", got, r)
	}
}

// Under manual trust: green checks leave the PR open; the run waits for a
// human's review and merge, and ends when GitHub says it was merged.
func TestGitHubManualTrust(t *testing.T) {
	h := ghStart(t, func(c *Config) { c.Trust.Implementation = protocol.TrustManual })
	h.poll(Poll{State: protocol.PullRequestOpen, Checks: passed()})
	h.none(MergePR{})
	h.status(protocol.RunWaiting, protocol.WaitReview)
	if a := h.want(SetAttention{}).(SetAttention); !strings.Contains(a.Reason, "#7") {
		t.Errorf("attention %+v", a)
	}
	h.poll(Poll{State: protocol.PullRequestOpen, Checks: passed()})
	h.status(protocol.RunWaiting, protocol.WaitReview)
	h.poll(Poll{State: protocol.PullRequestMerged, MergeCommit: "cccc", Checks: passed()})
	h.status(protocol.RunCompleted, "")
	if r := h.m.Run(); deref(r.MergeCommit) != "cccc" {
		t.Errorf("merge commit %v", r.MergeCommit)
	}
}

// A red check becomes a fix task whose objective carries the check's
// annotation; the fix is pushed and watched again. Three red rounds in a
// row block the run with a repair proposal.
func TestGitHubRedChecks(t *testing.T) {
	h := ghStart(t)
	red := Poll{State: protocol.PullRequestOpen, Checks: protocol.RunPullRequestChecks{State: "failed", Summary: "1 failed"},
		Failures: []string{"The check \"test\" failed (failure)\n- greet.sh:3 failure: expected HELLO"}}
	for round := 1; round <= 2; round++ {
		h.poll(red)
		st := h.want(StartTask{}).(StartTask)
		if !strings.Contains(st.Objective, "greet.sh:3 failure: expected HELLO") || !strings.HasPrefix(st.Task.ID, "ci-fix-") {
			t.Fatalf("round %d: fix task %s objective:\n%s", round, st.Task.ID, st.Objective)
		}
		h.runTask()
		pb := h.want(PushBranch{}).(PushBranch)
		if pb.N != round+1 {
			t.Errorf("push number %d, want %d", pb.N, round+1)
		}
		h.do(Event{Type: EvPushed, Commit: "fix" + string(rune('0'+round))})
		h.none(OpenPR{})
		h.want(UpdatePRBody{})
	}
	h.poll(red)
	h.none(StartTask{})
	h.status(protocol.RunPaused, protocol.WaitRepair)
	r := h.m.Run()
	if r.RepairProposal == nil || !strings.Contains(r.RepairProposal.Failure, "expected HELLO") || r.Counts.Blocked != 1 {
		t.Fatalf("run %+v", r)
	}
	// The repair is approved: fix and blocked task run, then push and watch.
	h.do(Event{Type: EvRepairApproved, TaskID: r.RepairProposal.TaskID})
	h.runTask()
	h.runTask()
	h.want(PushBranch{})
	h.do(Event{Type: EvPushed, Commit: "fix9"})
	h.poll(Poll{State: protocol.PullRequestOpen, Checks: passed()})
	h.want(MergePR{})
}

// Workflows waiting for approval make the run wait, and say so, while it
// keeps watching; once they ran and passed, it merges.
func TestGitHubActionRequired(t *testing.T) {
	h := ghStart(t)
	h.poll(Poll{State: protocol.PullRequestOpen, Checks: protocol.RunPullRequestChecks{State: "actionRequired", Summary: "ci waits for approval"}})
	h.status(protocol.RunWaiting, protocol.WaitChecks)
	if a := h.want(SetAttention{}).(SetAttention); !strings.Contains(a.Reason, "approve") {
		t.Errorf("attention %+v", a)
	}
	h.poll(Poll{State: protocol.PullRequestOpen, Checks: passed()})
	h.status(protocol.RunRunning, "")
	h.want(MergePR{})
}

// A review batch becomes one fix task; after it is pushed, the comments
// are answered with its commit; their ids are in the log, so a replayed
// run never asks for them again.
func TestGitHubReview(t *testing.T) {
	h := ghStart(t, func(c *Config) { c.Trust.Implementation = protocol.TrustManual })
	review := []ReviewComment{{ID: 11, ThreadID: "T1", Author: "alice", Body: "rename x", Path: "a.go", Line: 3},
		{ID: 12, ThreadID: "T2", Author: "alice", Body: "add a test"}}
	h.poll(Poll{State: protocol.PullRequestOpen, Checks: passed(), Unresolved: 2, Review: review})
	st := h.want(StartTask{}).(StartTask)
	if !strings.Contains(st.Objective, "rename x") || !strings.Contains(st.Objective, "add a test") {
		t.Fatalf("fix task objective:\n%s", st.Objective)
	}
	if n := len(h.m.Run().Plan.Tasks); n != 2 {
		t.Fatalf("%d tasks, want 2: one fix task for the batch", n)
	}
	h.runTask()
	h.want(PushBranch{})
	h.do(Event{Type: EvPushed, Commit: "fix1"})
	rr := h.want(ReplyAndResolve{}).(ReplyAndResolve)
	fix := h.m.Run().Plan.Tasks[1]
	if len(rr.Comments) != 2 || rr.Commit != deref(fix.Commit) || rr.Commit == "" {
		t.Errorf("ReplyAndResolve %+v, fix commit %v", rr, fix.Commit)
	}
	// Restarted here: the reply is asked for again, the ids are consumed.
	m := Replay(h.log)
	again := m.Restore(h.now)
	found := false
	for _, e := range again {
		if r, ok := e.(ReplyAndResolve); ok && len(r.Comments) == 2 {
			found = true
		}
	}
	if !found {
		t.Errorf("Restore = %s, want the reply asked again", kinds(again))
	}
	h.do(Event{Type: EvReplied, GitHub: &GitHubData{IDs: []int64{11, 12}}})
	p := h.want(PollPR{}).(PollPR)
	if !reflect.DeepEqual(p.Consumed, []int64{11, 12}) {
		t.Errorf("PollPR.Consumed = %v, want [11 12]", p.Consumed)
	}
	if m := Replay(h.log); !reflect.DeepEqual(m.consumedIDs(), []int64{11, 12}) {
		t.Errorf("replayed consumed ids %v", m.consumedIDs())
	}
	b, _ := json.Marshal(h.log)
	if !strings.Contains(string(b), `"id":11`) {
		t.Errorf("the log does not hold the consumed comment ids")
	}
}

// GitHub's errors: a rate limit waits and tries again, saying so; a bad
// token or branch protection waits for a human, and run/resume tries the
// step again; a moved head stops the run from pushing over it.
func TestGitHubErrors(t *testing.T) {
	h := ghStart(t)
	h.want(PollPR{})
	h.do(Event{Type: EvGitHubError, Reason: "API rate limit exceeded", GitHub: &GitHubData{Kind: "rateLimited", WaitMs: 90_000}})
	rt := h.want(Retry{}).(Retry)
	if _, ok := rt.Effect.(PollPR); !ok || rt.DelayMs != 90_000 {
		t.Errorf("Retry %+v", rt)
	}
	if r := h.m.Run(); r.Status != protocol.RunRunning || !strings.Contains(deref(r.Reason), "rate limit") || !strings.Contains(deref(r.Reason), "1m30s") {
		t.Errorf("run %s reason %q", r.Status, deref(r.Reason))
	}
	// Reset in the past: again at once.
	h.do(Event{Type: EvGitHubError, Reason: "API rate limit exceeded", GitHub: &GitHubData{Kind: "rateLimited"}})
	if rt := h.want(Retry{}).(Retry); rt.DelayMs != 0 {
		t.Errorf("Retry after a past reset: %+v", rt)
	}
	h.do(Event{Type: EvPRPolled, GitHub: &GitHubData{Poll: &Poll{State: protocol.PullRequestOpen, HeadSHA: "aaaa1111", Checks: passed()}}})
	if r := h.m.Run(); r.Reason != nil {
		t.Errorf("reason after success: %q", *r.Reason)
	}
	h.want(MergePR{})
	h.do(Event{Type: EvGitHubError, Reason: "Required status check \"ci\" is expected.", GitHub: &GitHubData{Kind: "mergeRefused"}})
	h.status(protocol.RunWaiting, protocol.WaitGitHub)
	if a := h.want(SetAttention{}).(SetAttention); !strings.Contains(a.Reason, "Required status check") {
		t.Errorf("attention %+v", a)
	}
	h.do(Event{Type: EvResumed})
	h.want(MergePR{})
	h.do(Event{Type: EvPRMerged, OK: true, Commit: "m1"})
	h.status(protocol.RunCompleted, "")

	// A human's commit moved the head: stop and ask.
	h = ghStart(t)
	h.poll(Poll{State: protocol.PullRequestOpen, HeadSHA: "human1", Checks: protocol.RunPullRequestChecks{State: "failed"}})
	h.none(StartTask{})
	h.status(protocol.RunWaiting, protocol.WaitGitHub)
	h.do(Event{Type: EvResumed})
	p := h.want(PollPR{}).(PollPR)
	_ = p
	h.do(Event{Type: EvPRPolled, GitHub: &GitHubData{Poll: &Poll{State: protocol.PullRequestOpen, HeadSHA: "human1", Checks: passed()}}})
	if mg := h.want(MergePR{}).(MergePR); mg.SHA != "human1" {
		t.Errorf("after resume the head taken is %q", mg.SHA)
	}

	// A refused merge under when_required enables auto-merge.
	h = ghStart(t, ghCfg(func(g *GitHubConfig) { g.AutoMerge = "when_required" }))
	h.poll(Poll{State: protocol.PullRequestOpen, Checks: passed()})
	h.want(MergePR{})
	h.do(Event{Type: EvGitHubError, Reason: "changes must be made through the merge queue", GitHub: &GitHubData{Kind: "mergeRefused"}})
	if mg := h.want(MergePR{}).(MergePR); !mg.Auto {
		t.Errorf("MergePR %+v, want auto", mg)
	}
	h.do(Event{Type: EvPRMerged, OK: true, Commit: "m2"})
	h.status(protocol.RunCompleted, "")
}

// GitHub unavailable (no token, no remote): the run says so and ends as a
// local branch, never merged locally, never failed.
func TestGitHubUnavailable(t *testing.T) {
	h := start(t, cfg(func(c *Config) { c.GitHub = &GitHubConfig{Unavailable: "no token: set GITHUB_TOKEN"} }))
	h.do(Event{Type: EvPlanProposed, Tasks: []protocol.PlanTask{task("t1")}})
	h.do(Event{Type: EvPlanApproved})
	h.runTask()
	h.none(PushBranch{})
	mg := h.want(Merge{}).(Merge)
	if mg.Into || !strings.Contains(mg.Reason, "no token") || !strings.Contains(mg.Reason, "local branch") {
		t.Errorf("Merge %+v", mg)
	}
	h.do(Event{Type: EvMerged, Reason: mg.Reason})
	h.status(protocol.RunCompleted, "")
	if r := h.m.Run(); !strings.Contains(deref(r.Reason), "no token") {
		t.Errorf("reason %q", deref(r.Reason))
	}
}

// push after_plan: the draft is opened before the first task and its
// body kept current; it is marked ready once every task validated.
func TestGitHubPushAfterPlan(t *testing.T) {
	h := start(t, cfg(ghCfg(func(g *GitHubConfig) { g.Push = "after_plan" })))
	h.do(Event{Type: EvPlanProposed, Tasks: []protocol.PlanTask{task("t1"), task("t2", "t1")}})
	h.do(Event{Type: EvPlanApproved})
	h.none(StartTask{})
	h.want(PushBranch{})
	h.do(Event{Type: EvPushed, Commit: "p1"})
	h.want(OpenPR{})
	h.do(Event{Type: EvPROpened, GitHub: &GitHubData{PR: &protocol.RunPullRequest{Number: 3, State: protocol.PullRequestDraft}}})
	h.none(MarkReady{})
	h.runTask()
	h.want(UpdatePRBody{})
	h.runTask()
	h.want(PushBranch{})
	h.do(Event{Type: EvPushed, Commit: "p2"})
	h.want(MarkReady{})
}

// Under fixes trust manual a fix task from GitHub waits at the gate,
// saying so.
func TestGitHubFixGate(t *testing.T) {
	h := ghStart(t, func(c *Config) { c.Trust.Fixes = protocol.TrustManual })
	h.poll(Poll{State: protocol.PullRequestOpen, Checks: protocol.RunPullRequestChecks{State: "failed"}, Failures: []string{"lint failed"}})
	h.none(StartTask{})
	h.status(protocol.RunWaiting, protocol.WaitTaskApproval)
	if r := h.m.Run(); !strings.Contains(deref(r.Reason), "fix task ci-fix-1 from GitHub waits for approval (fixes trust manual)") {
		t.Errorf("reason %q", deref(r.Reason))
	}
	h.do(Event{Type: EvTaskApproved, TaskID: "ci-fix-1", Decision: protocol.TaskDecisionApprove})
	if st := h.want(StartTask{}).(StartTask); !strings.Contains(st.Objective, "lint failed") {
		t.Errorf("objective %s", st.Objective)
	}
}

// run/revert and run/task/revert are recorded in the log of a run that is
// over; a run still going refuses them.
func TestReverted(t *testing.T) {
	h := start(t, cfg())
	rv := &protocol.RunRevert{Kind: protocol.RevertCommit, Branch: "main", Commit: "abc"}
	if err := h.m.Check(Event{Type: EvReverted, Revert: rv}); err == nil || !strings.Contains(err.Error(), "run/cancel first") {
		t.Errorf("Check(reverted) of a running run = %v", err)
	}
	h.do(Event{Type: EvCancelled})
	h.do(Event{Type: EvReverted, Revert: rv})
	h.want(Notify{})
	task := "t1"
	h.do(Event{Type: EvReverted, Revert: &protocol.RunRevert{Kind: protocol.RevertCommit, TaskID: &task, Branch: "main", Commit: "def"}})
	r := h.m.Run()
	if len(r.Reverts) != 2 || r.Reverts[0].Commit != "abc" || r.Reverts[0].AtMs == 0 || *r.Reverts[1].TaskID != "t1" || r.Status != protocol.RunCancelled {
		t.Errorf("reverts %+v, status %s", r.Reverts, r.Status)
	}
	if got := Replay(h.log).Run(); !reflect.DeepEqual(got.Reverts, r.Reverts) {
		t.Errorf("replayed reverts %+v", got.Reverts)
	}
	if d := h.m.Snapshot().Decisions; !strings.Contains(d[len(d)-1].Text, "task t1 undone by revert commit def on main") {
		t.Errorf("decision %q", d[len(d)-1].Text)
	}
}

// An imported run (apserver runs import) is the run its branch recorded;
// only a run that is over is imported, and only into an empty log.
func TestImported(t *testing.T) {
	m := New()
	running := protocol.Run{ID: "r9", Status: protocol.RunRunning}
	if err := m.Check(Event{Type: EvImported, Run: &running}); err == nil {
		t.Error("a running run was imported")
	}
	mc := "abc"
	r := protocol.Run{ID: "r9", Request: "x", Status: protocol.RunCompleted, Stage: protocol.StageDone, BaseBranch: "main", Branch: "b",
		MergeCommit: &mc, Plan: protocol.RunPlan{Version: 1, Approved: true, Tasks: []protocol.RunTask{{PlanTask: task("t1"), Status: protocol.TaskCompleted}}},
		Clarifications: []protocol.RunClarification{}, UpdatedAtMs: 500}
	ev := Event{Type: EvImported, AtMs: 500, Run: &r, Decisions: []Decision{{AtMs: 1, Text: "plan v1 approved"}}}
	if err := m.Accepts(ev); err != nil {
		t.Fatal(err)
	}
	m.Apply(ev.AtMs, ev)
	got := m.Run()
	if got.ID != "r9" || got.Status != protocol.RunCompleted || deref(got.MergeCommit) != "abc" || got.Counts.Completed != 1 || m.Config().Branch != "b" {
		t.Errorf("imported run %+v", got)
	}
	if err := m.Check(ev); err == nil {
		t.Error("a run imported twice")
	}
	if rp := Replay([]Event{ev}).Run(); !reflect.DeepEqual(rp, got) {
		t.Errorf("Replay = %+v\nwant %+v", rp, got)
	}
}

// Network errors and GraphQL errors inside a 200 are tried again with
// backoff, five times; then the run waits for a human, and run/resume
// tries again.
func TestGitHubTransientErrors(t *testing.T) {
	h := ghStart(t)
	h.want(PollPR{})
	var delays []int64
	for i := 0; i < 5; i++ {
		kind := "network"
		if i%2 == 1 {
			kind = "graphql"
		}
		h.do(Event{Type: EvGitHubError, Reason: "boom", GitHub: &GitHubData{Kind: kind}})
		rt := h.want(Retry{}).(Retry)
		delays = append(delays, rt.DelayMs)
		h.status(protocol.RunRunning, "")
	}
	if !reflect.DeepEqual(delays, []int64{1000, 2000, 4000, 8000, 16000}) {
		t.Errorf("backoff %v", delays)
	}
	h.do(Event{Type: EvGitHubError, Reason: "boom", GitHub: &GitHubData{Kind: "network"}})
	h.none(Retry{})
	h.status(protocol.RunWaiting, protocol.WaitGitHub)
	h.do(Event{Type: EvResumed})
	h.want(PollPR{})
	h.status(protocol.RunRunning, "")
}
