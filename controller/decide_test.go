package controller

import (
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func step(action, result string) Step {
	return Step{Tool: "exec_command", Action: "exec_command: " + action, Result: result}
}

func errStep(action, result string) Step {
	s := step(action, result)
	s.Error = true
	return s
}

// base is a run one turn in: the agent is working, nothing is wrong.
func base() Input {
	return Input{
		Objective: "Add a --verbose flag to the CLI.",
		Config:    DefaultConfig(),
		Spent:     Spent{Tokens: 1000, Turns: 1, TimeMs: 60_000},
		Turn: TurnSummary{
			TurnID: "t1", Status: StatusCompleted, AgentMessage: "I added the flag parsing; wiring it up next.",
			Steps:                []Step{step("ls", "exit 0: main.go")},
			WorkspaceFingerprint: "ws1",
		},
	}
}

// withHistory puts turns before in.Turn and renumbers Spent.Turns.
func withHistory(in *Input, turns ...TurnSummary) {
	in.History = append(in.History, turns...)
	in.Spent.Turns = len(in.History) + 1
}

func talk(id, msg string) TurnSummary {
	return TurnSummary{TurnID: id, Status: StatusCompleted, AgentMessage: msg, WorkspaceFingerprint: "ws1"}
}

type decideCase struct {
	name   string
	mod    func(*Input)
	action Action
	cond   StopCondition
	rule   string
}

func runDecideCases(t *testing.T, cases []decideCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := base()
			c.mod(&in)
			got := Decide(in)
			if got.Action != c.action || got.StopCondition != c.cond || got.Rule != c.rule {
				t.Errorf("Decide(%s) = %s/%s rule %s (%s), want %s/%s rule %s",
					c.name, got.Action, got.StopCondition, got.Rule, got.Reason, c.action, c.cond, c.rule)
			}
			if got.Source == "" || got.Reason == "" || got.Confidence <= 0 || got.Confidence > 1 {
				t.Errorf("Decide(%s) = %+v: source, reason and confidence must be set", c.name, got)
			}
		})
	}
}

func TestDecideHardRules(t *testing.T) {
	runDecideCases(t, []decideCase{
		{"plain turn continues", func(in *Input) {}, ActContinue, StopNone, ruleContinue},
		{"user stop", func(in *Input) { in.UserStop = true }, ActStop, StopUserStop, ruleUserStop},
		{"user stop beats failure and budget", func(in *Input) {
			in.UserStop = true
			in.Turn.Status, in.Turn.Error = StatusFailed, &TurnError{Message: "boom"}
			in.Config.Budgets.Tokens = 10
		}, ActStop, StopUserStop, ruleUserStop},
		{"unrecoverable failure", func(in *Input) {
			in.Turn.Status, in.Turn.Error = StatusFailed, &TurnError{Message: "invalid api key", Kind: "auth"}
		}, ActStop, StopFailedUnrecoverable, ruleFailedUnrecoverable},
		{"failure without error", func(in *Input) { in.Turn.Status = StatusFailed }, ActStop, StopFailedUnrecoverable, ruleFailedUnrecoverable},
		{"recoverable failure retries", func(in *Input) {
			in.Turn.Status, in.Turn.Error = StatusFailed, &TurnError{Message: "stream disconnected", Recoverable: true}
			in.Retries = 1
		}, ActContinue, StopNone, ruleRetry},
		{"last retry allowed", func(in *Input) {
			in.Turn.Status, in.Turn.Error = StatusFailed, &TurnError{Message: "503", Recoverable: true}
			in.Retries = 3
		}, ActContinue, StopNone, ruleRetry},
		{"retries exhausted", func(in *Input) {
			in.Turn.Status, in.Turn.Error = StatusFailed, &TurnError{Message: "503", Recoverable: true}
			in.Retries = 4
		}, ActPause, StopRetriesExhausted, ruleRetryExhausted},
		{"negative MaxRetries never retries", func(in *Input) {
			in.Turn.Status, in.Turn.Error = StatusFailed, &TurnError{Message: "503", Recoverable: true}
			in.Retries, in.Config.MaxRetries = 1, -1
		}, ActPause, StopRetriesExhausted, ruleRetryExhausted},
		{"failure beats budget", func(in *Input) {
			in.Turn.Status, in.Turn.Error = StatusFailed, &TurnError{Message: "503", Recoverable: true}
			in.Retries, in.Config.Budgets.Tokens = 1, 500
		}, ActContinue, StopNone, ruleRetry},
		{"token budget", func(in *Input) { in.Config.Budgets.Tokens = 1000 }, ActStop, StopBudgetTokens, ruleBudgetTokens},
		{"turn budget", func(in *Input) { in.Config.Budgets.Turns = 1 }, ActStop, StopBudgetTurns, ruleBudgetTurns},
		{"time budget", func(in *Input) { in.Config.Budgets.TimeMs = 60_000 }, ActStop, StopBudgetTime, ruleBudgetTime},
		{"cost budget", func(in *Input) {
			in.Spent.CostUSD, in.Config.Budgets.CostUSD = 0.51, 0.5
		}, ActStop, StopBudgetCost, ruleBudgetCost},
		{"tokens checked before turns", func(in *Input) {
			in.Config.Budgets = Budgets{Tokens: 1000, Turns: 1}
		}, ActStop, StopBudgetTokens, ruleBudgetTokens},
		{"budget beats completion", func(in *Input) {
			in.Turn.AgentMessage, in.Config.Budgets.Turns = "The task is complete.", 1
		}, ActStop, StopBudgetTurns, ruleBudgetTurns},
		{"budget beats pending approval", func(in *Input) {
			in.Turn.PendingApprovals, in.Config.Budgets.Tokens = 1, 900
		}, ActStop, StopBudgetTokens, ruleBudgetTokens},
		{"pending approval", func(in *Input) { in.Turn.PendingApprovals = 1 }, ActPause, StopWaitingOnHuman, ruleWaitingApproval},
		{"pending question", func(in *Input) { in.Turn.PendingQuestions = 2 }, ActPause, StopWaitingOnHuman, ruleWaitingQuestion},
		{"approval timeout", func(in *Input) {
			in.Turn.ApprovalTimeouts, in.Turn.PendingApprovals = 1, 1
		}, ActStop, StopApprovalTimeout, ruleApprovalTimeout},
		{"interrupted", func(in *Input) { in.Turn.Status = StatusInterrupted }, ActPause, StopWaitingOnHuman, ruleInterrupted},
		{"waiting beats stuck", func(in *Input) {
			in.Turn.PendingQuestions = 1
			in.Turn.Steps = []Step{errStep("go test", "exit 1"), errStep("go test", "exit 1"), errStep("go test", "exit 1")}
		}, ActPause, StopWaitingOnHuman, ruleWaitingQuestion},
		{"stuck beats completion", func(in *Input) {
			in.Turn.AgentMessage = "The task is complete."
			in.Turn.Steps = []Step{step("cat a", "x"), step("cat a", "x"), step("cat a", "x"), step("cat a", "x")}
		}, ActStop, StopStuckLoop, ruleSameActionResult},
	})
}

func TestDecideSoftLanding(t *testing.T) {
	// 4 turns, 8000 tokens: 2000 a turn, so turn 5 would reach 10000.
	near := func(in *Input) {
		in.Config.Budgets.Tokens = 10_000
		in.Spent.Tokens, in.Spent.Turns = 8000, 4
	}
	runDecideCases(t, []decideCase{
		{"forecast crosses: wrap up", near, ActContinue, StopNone, ruleWrapUp},
		{"forecast below budget", func(in *Input) {
			near(in)
			in.Spent.Tokens = 7000
		}, ActContinue, StopNone, ruleContinue},
		{"after the wrap-up decision: stop", func(in *Input) {
			near(in)
			in.Recent = []Decision{{Action: ActContinue, Rule: ruleWrapUp, WrapUp: true}}
		}, ActStop, StopBudgetTokens, ruleWrapUpStop},
		{"after a wrap-up turn: stop", func(in *Input) {
			near(in)
			in.Turn.Kind = KindWrapUp
		}, ActStop, StopBudgetTokens, ruleWrapUpStop},
		{"wrap-up disabled", func(in *Input) {
			near(in)
			in.Config.WrapUp = false
		}, ActContinue, StopNone, ruleContinue},
		{"turn budget: the last turn is the wrap-up", func(in *Input) {
			in.Config.Budgets.Turns = 2
		}, ActContinue, StopNone, ruleWrapUp},
		{"time budget forecast", func(in *Input) {
			in.Config.Budgets.TimeMs = 100_000
		}, ActContinue, StopNone, ruleWrapUp},
		{"cost budget forecast", func(in *Input) {
			in.Spent.CostUSD, in.Config.Budgets.CostUSD = 0.3, 0.5
		}, ActContinue, StopNone, ruleWrapUp},
		{"wrap-up beats pending approval", func(in *Input) {
			near(in)
			in.Turn.PendingApprovals = 1
		}, ActContinue, StopNone, ruleWrapUp},
		{"verified completion skips the wrap-up", func(in *Input) {
			near(in)
			in.Turn.AgentMessage, in.Turn.ChecksPassed = "All done: the flag works and tests pass.", ptr(true)
		}, ActStop, StopCompleted, ruleDone},
		{"approved review skips the wrap-up", func(in *Input) {
			near(in)
			in.Turn.Kind, in.Turn.ReviewApproved = KindReview, ptr(true)
		}, ActStop, StopCompleted, ruleReviewApproved},
		{"rejected review wraps up", func(in *Input) {
			near(in)
			in.Turn.Kind, in.Turn.ReviewApproved = KindReview, ptr(false)
		}, ActContinue, StopNone, ruleWrapUp},
		{"no wrap-up after an interrupt", func(in *Input) {
			near(in)
			in.Turn.Status = StatusInterrupted
		}, ActPause, StopWaitingOnHuman, ruleInterrupted},
		{"disputed completion still wraps up", func(in *Input) {
			near(in)
			in.Turn.AgentMessage, in.Turn.ChecksPassed = "The task is complete.", ptr(false)
		}, ActContinue, StopNone, ruleWrapUp},
	})
	in := base()
	near(&in)
	d := Decide(in)
	if !d.WrapUp || !strings.Contains(d.NextInput, "handoff note") || !strings.Contains(d.NextInput, "revert") {
		t.Errorf("Decide(near budget) = %+v, want WrapUp and a handoff/clean-state NextInput", d)
	}
}

func TestDecideNoProgress(t *testing.T) {
	// Three distinct steps a turn, same results: no step pattern fires,
	// only the fingerprint shows nothing changes.
	same := func(id, msg string) TurnSummary {
		tu := talk(id, msg)
		tu.Steps = []Step{step("cat a.go", "A"), step("cat b.go", "B"), step("go vet", "exit 0")}
		return tu
	}
	runDecideCases(t, []decideCase{
		{"four identical turns: stop", func(in *Input) {
			withHistory(in, same("t1", "one"), same("t2", "two"), same("t3", "three"))
			in.Turn = same("t4", "four")
		}, ActStop, StopNoProgress, ruleNoProgress},
		{"three identical turns: not yet", func(in *Input) {
			withHistory(in, same("t1", "one"), same("t2", "two"))
			in.Turn = same("t3", "three")
		}, ActContinue, StopNone, ruleContinue},
		{"workspace changed in between", func(in *Input) {
			changed := same("t2", "two")
			changed.WorkspaceFingerprint = "ws2"
			withHistory(in, same("t1", "one"), changed, same("t3", "three"))
			in.Turn = same("t4", "four")
		}, ActContinue, StopNone, ruleContinue},
		{"plan changed in between", func(in *Input) {
			p := []PlanStep{{Step: "flag", Status: PlanInProgress}}
			t2 := same("t2", "two")
			t2.Plan = p
			withHistory(in, same("t1", "one"), t2, same("t3", "three"))
			in.Turn = same("t4", "four")
		}, ActContinue, StopNone, ruleContinue},
		{"configurable threshold", func(in *Input) {
			in.Config.NoProgressTurns = 1
			withHistory(in, same("t1", "one"))
			in.Turn = same("t2", "two")
		}, ActStop, StopNoProgress, ruleNoProgress},
		{"waiting on a process is not no progress", func(in *Input) {
			withHistory(in, same("t1", "one"), same("t2", "two"), same("t3", "three"))
			in.Turn = same("t4", "four")
			in.Turn.WaitingOnProcess = true
		}, ActContinue, StopNone, ruleContinue},
		{"waiting turns neither count nor break", func(in *Input) {
			w := same("t2", "waiting")
			w.WaitingOnProcess = true
			withHistory(in, same("t1", "one"), w, same("t3", "three"), same("t4", "four"))
			in.Turn = same("t5", "five")
		}, ActStop, StopNoProgress, ruleNoProgress},
		{"talk-only turns", func(in *Input) {
			withHistory(in, talk("t1", "Looking."), talk("t2", "Still looking."), talk("t3", "Thinking."))
			in.Turn = talk("t4", "Considering options.")
		}, ActStop, StopNoProgress, ruleNoProgress},
	})
}

func TestDecideCompletion(t *testing.T) {
	done := func(in *Input) { in.Turn.AgentMessage = "The task is complete: --verbose is wired and documented." }
	review := func(approved *bool, msg string) func(*Input) {
		return func(in *Input) {
			prev := in.Turn
			prev.AgentMessage = "I'm done."
			withHistory(in, prev)
			in.Turn = TurnSummary{TurnID: "r1", Kind: KindReview, Status: StatusCompleted, AgentMessage: msg,
				ReviewApproved: approved, WorkspaceFingerprint: prev.WorkspaceFingerprint}
			in.Config.ReviewOnDone = true
		}
	}
	runDecideCases(t, []decideCase{
		{"done, no checks", done, ActStop, StopCompleted, ruleDone},
		{"done, checks passed", func(in *Input) { done(in); in.Turn.ChecksPassed = ptr(true) }, ActStop, StopCompleted, ruleDone},
		{"done, plan completed", func(in *Input) {
			done(in)
			in.Turn.Plan = []PlanStep{{"parse flag", PlanCompleted}, {"docs", PlanCompleted}}
		}, ActStop, StopCompleted, ruleDone},
		{"done, plan incomplete", func(in *Input) {
			done(in)
			in.Turn.Plan = []PlanStep{{"parse flag", PlanCompleted}, {"docs", PlanPending}}
		}, ActContinue, StopNone, ruleDoneDisputed},
		{"done, checks failed", func(in *Input) { done(in); in.Turn.ChecksPassed = ptr(false) }, ActContinue, StopNone, ruleDoneDisputed},
		{"done, checks failed in an earlier turn", func(in *Input) {
			prev := in.Turn
			prev.ChecksPassed = ptr(false)
			withHistory(in, prev)
			done(in)
		}, ActContinue, StopNone, ruleDoneDisputed},
		{"done, checks failed then passed", func(in *Input) {
			prev := in.Turn
			prev.ChecksPassed = ptr(false)
			fixed := in.Turn
			fixed.ChecksPassed, fixed.WorkspaceFingerprint = ptr(true), "ws2"
			withHistory(in, prev, fixed)
			done(in)
		}, ActStop, StopCompleted, ruleDone},
		{"empty reply never counts", func(in *Input) { done(in); in.Turn.EmptyReply = true }, ActContinue, StopNone, ruleContinue},
		{"negated claim", func(in *Input) { in.Turn.AgentMessage = "The task is not complete yet." }, ActContinue, StopNone, ruleContinue},
		{"review on done", func(in *Input) { done(in); in.Config.ReviewOnDone = true }, ActReview, StopNone, ruleDoneReview},
		{"review approved", review(ptr(true), "APPROVED. Looks good."), ActStop, StopCompleted, ruleReviewApproved},
		{"review rejected", review(ptr(false), "CHANGES REQUESTED: the flag is not documented."), ActContinue, StopNone, ruleReviewRejected},
		{"review without verdict", review(nil, "Hmm."), ActContinue, StopNone, ruleReviewRejected},
		{"review approved but checks failed", func(in *Input) {
			review(ptr(true), "APPROVED")(in)
			in.Turn.ChecksPassed = ptr(false)
		}, ActContinue, StopNone, ruleDoneDisputed},
		{"done again on the approved state", func(in *Input) {
			in.Config.ReviewOnDone = true
			r := TurnSummary{TurnID: "r1", Kind: KindReview, Status: StatusCompleted, ReviewApproved: ptr(true), WorkspaceFingerprint: "ws1"}
			withHistory(in, r)
			done(in)
		}, ActStop, StopCompleted, ruleDone},
		{"done after changes since the approved review", func(in *Input) {
			in.Config.ReviewOnDone = true
			r := TurnSummary{TurnID: "r1", Kind: KindReview, Status: StatusCompleted, ReviewApproved: ptr(true), WorkspaceFingerprint: "ws0"}
			withHistory(in, r)
			done(in)
		}, ActReview, StopNone, ruleDoneReview},
		{"done again after a rejected review, nothing changed", func(in *Input) {
			in.Config.ReviewOnDone = true
			r := TurnSummary{TurnID: "r1", Kind: KindReview, Status: StatusCompleted, ReviewApproved: ptr(false), WorkspaceFingerprint: "ws1"}
			withHistory(in, r)
			done(in)
		}, ActReview, StopNone, ruleDoneReview},
	})

	in := base()
	review(ptr(false), "CHANGES REQUESTED: the flag is not documented.")(&in)
	if d := Decide(in); !strings.Contains(d.NextInput, "the flag is not documented") {
		t.Errorf("Decide(review rejected).NextInput = %q, want the reviewer's text", d.NextInput)
	}
	in = base()
	done(&in)
	in.Turn.Plan = []PlanStep{{"docs", PlanPending}}
	in.Turn.ChecksPassed = ptr(false)
	if d := Decide(in); !strings.Contains(d.NextInput, `"docs" (pending)`) || !strings.Contains(d.NextInput, "failed") {
		t.Errorf("Decide(disputed).NextInput = %q, want it to name the open step and the failed check", d.NextInput)
	}
	in = base()
	done(&in)
	in.Config.ReviewOnDone = true
	if d := Decide(in); !strings.Contains(d.NextInput, in.Objective) || !strings.Contains(d.NextInput, "APPROVED") {
		t.Errorf("Decide(review on done).NextInput = %q, want review instructions with the objective", d.NextInput)
	}
}

func TestDecideContinueInput(t *testing.T) {
	in := base()
	in.Config.Budgets = Budgets{Tokens: 100_000, Turns: 10, TimeMs: 3_600_000, CostUSD: 5}
	in.Spent.CostUSD = 1.25
	in.Turn.Plan = []PlanStep{{"parse flag", PlanCompleted}, {"wire logger", PlanInProgress}, {"docs", PlanPending}}
	in.Turn.ChecksPassed = ptr(false)
	d := Decide(in)
	for _, want := range []string{in.Objective, `"wire logger" (inProgress)`, `"docs" (pending)`,
		"failed", "Budget left: 99000 tokens, 9 turns, 59m00s, $3.75.", "The task is complete."} {
		if !strings.Contains(d.NextInput, want) {
			t.Errorf("Decide(plan in progress).NextInput = %q, want it to contain %q", d.NextInput, want)
		}
	}
	if strings.Contains(d.NextInput, "parse flag") {
		t.Errorf("Decide(plan in progress).NextInput = %q lists a completed step", d.NextInput)
	}
	if again := Decide(in); again != d {
		t.Errorf("Decide is not deterministic: %+v then %+v", d, again)
	}
}

func TestDecideModel(t *testing.T) {
	answer := func(a Action, next string, conf float64) func(*Input) {
		return func(in *Input) {
			in.Model = &ModelAnswer{Action: a, NextInput: next, Reason: "model says so", Confidence: conf}
		}
	}
	runDecideCases(t, []decideCase{
		{"model replaces continue", answer(ActReview, "", 0.9), ActReview, StopNone, ruleModel},
		{"model stops", answer(ActStop, "", 0.9), ActStop, StopCompleted, ruleModel},
		{"model pauses", answer(ActPause, "", 0.9), ActPause, StopWaitingOnHuman, ruleModel},
		{"model unsure", answer(ActContinue, "go on", 0.5), ActPause, StopLowConfidence, ruleModelLowConfidence},
		{"model gives an unknown action", answer("dance", "", 0.9), ActPause, StopLowConfidence, ruleModelLowConfidence},
		{"model replaces done", func(in *Input) {
			in.Turn.AgentMessage = "The task is complete."
			answer(ActContinue, "Also add a test.", 0.8)(in)
		}, ActContinue, StopNone, ruleModel},
		{"model cannot stop against the evidence", func(in *Input) {
			in.Turn.ChecksPassed = ptr(false)
			answer(ActStop, "", 0.95)(in)
		}, ActPause, StopWaitingOnHuman, ruleModelStopDisputed},
		{"model never overrides a budget", func(in *Input) {
			in.Config.Budgets.Turns = 1
			answer(ActContinue, "keep going", 1)(in)
		}, ActStop, StopBudgetTurns, ruleBudgetTurns},
		{"model never overrides a user stop", func(in *Input) {
			in.UserStop = true
			answer(ActContinue, "keep going", 1)(in)
		}, ActStop, StopUserStop, ruleUserStop},
		{"model never overrides a retry", func(in *Input) {
			in.Turn.Status, in.Turn.Error, in.Retries = StatusFailed, &TurnError{Message: "503", Recoverable: true}, 1
			answer(ActStop, "", 1)(in)
		}, ActContinue, StopNone, ruleRetry},
	})

	in := base()
	policy := Decide(in)
	answer(ActContinue, "", 0.9)(&in)
	d := Decide(in)
	if d.Source != SourceModel || d.NextInput != policy.NextInput || d.Confidence != 0.9 {
		t.Errorf("Decide(model continue, empty input) = %+v, want source model, the policy's NextInput and the model's confidence", d)
	}
	answer(ActContinue, "Now add a test for --verbose.", 0.9)(&in)
	if d := Decide(in); d.NextInput != "Now add a test for --verbose." {
		t.Errorf("Decide(model continue).NextInput = %q, want the model's", d.NextInput)
	}
}

func TestWithDefaults(t *testing.T) {
	got := Config{}.WithDefaults()
	want := Config{NoProgressTurns: 3, SameErrorTimes: 3, CompactionTimes: 3, MaxRetries: 3, MinConfidence: 0.6}
	if got != want {
		t.Errorf("Config{}.WithDefaults() = %+v, want %+v", got, want)
	}
	custom := Config{NoProgressTurns: 5, SameErrorTimes: 2, CompactionTimes: 4, MaxRetries: -1, MinConfidence: 0.8, WrapUp: true}
	if got := custom.WithDefaults(); got != custom {
		t.Errorf("WithDefaults(%+v) = %+v, want it unchanged", custom, got)
	}
	if !DefaultConfig().WrapUp {
		t.Error("DefaultConfig().WrapUp = false, want true")
	}
}
