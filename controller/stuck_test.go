package controller

import "testing"

func stepsTurn(id string, steps ...Step) TurnSummary {
	return TurnSummary{TurnID: id, Status: StatusCompleted, AgentMessage: "msg " + id, Steps: steps, WorkspaceFingerprint: "ws-" + id}
}

func TestDecideStuckPatterns(t *testing.T) {
	a, b, c := step("cat a.go", "A"), step("cat b.go", "B"), step("cat c.go", "C")
	fail := errStep("go test ./...", "exit 1: FAIL TestFlag")
	failOther := errStep("go test ./...", "exit 1: FAIL TestOther")
	runDecideCases(t, []decideCase{
		// Same action and result ×4.
		{"same action+result x4", func(in *Input) { in.Turn.Steps = []Step{a, a, a, a} }, ActStop, StopStuckLoop, ruleSameActionResult},
		{"same action+result x4 across turns", func(in *Input) {
			withHistory(in, stepsTurn("t1", c, a, a))
			in.Turn = stepsTurn("t2", a, a)
		}, ActStop, StopStuckLoop, ruleSameActionResult},
		{"same action+result x3 is not stuck", func(in *Input) { in.Turn.Steps = []Step{b, a, a, a} }, ActContinue, StopNone, ruleContinue},
		{"same action, different results", func(in *Input) {
			in.Turn.Steps = []Step{a, a, a, step("cat a.go", "A changed")}
		}, ActContinue, StopNone, ruleContinue},
		{"old loop, current turn ran nothing", func(in *Input) {
			withHistory(in, stepsTurn("t1", a, a, a, a))
			in.Turn = stepsTurn("t2")
		}, ActContinue, StopNone, ruleContinue},
		{"polling a running process", func(in *Input) {
			poll := Step{Tool: "write_stdin", Action: "write_stdin: session 3", Result: "running, no new output"}
			in.Turn.Steps = []Step{poll, poll, poll, poll}
			in.Turn.WaitingOnProcess = true
		}, ActContinue, StopNone, ruleContinue},

		// Same action and error ×3.
		{"same action+error x3", func(in *Input) { in.Turn.Steps = []Step{fail, failOther, fail} }, ActStop, StopStuckLoop, ruleSameActionError},
		{"same action+error x2 is not stuck", func(in *Input) { in.Turn.Steps = []Step{a, fail, fail} }, ActContinue, StopNone, ruleContinue},
		{"errors of different actions", func(in *Input) {
			in.Turn.Steps = []Step{fail, errStep("go vet ./...", "exit 1"), fail}
		}, ActContinue, StopNone, ruleContinue},
		{"same action, not all errors", func(in *Input) {
			in.Turn.Steps = []Step{fail, step("go test ./...", "exit 0"), fail}
		}, ActContinue, StopNone, ruleContinue},
		{"errors while polling still count", func(in *Input) {
			in.Turn.Steps = []Step{fail, fail, fail}
			in.Turn.WaitingOnProcess = true
		}, ActStop, StopStuckLoop, ruleSameActionError},

		// A-B-A-B over six steps.
		{"alternation A-B-A-B-A-B", func(in *Input) { in.Turn.Steps = []Step{a, b, a, b, a, b} }, ActStop, StopStuckLoop, ruleAlternation},
		{"alternation across turns", func(in *Input) {
			withHistory(in, stepsTurn("t1", c, a, b, a))
			in.Turn = stepsTurn("t2", b, a, b)
		}, ActStop, StopStuckLoop, ruleAlternation},
		{"A-B-A-C is not alternation", func(in *Input) { in.Turn.Steps = []Step{a, b, a, b, a, c} }, ActContinue, StopNone, ruleContinue},
		{"A-B-A-B over four steps is not enough", func(in *Input) { in.Turn.Steps = []Step{c, a, b, a, b} }, ActContinue, StopNone, ruleContinue},
		{"A-B with changing B results", func(in *Input) {
			in.Turn.Steps = []Step{a, step("cat b.go", "1"), a, step("cat b.go", "2"), a, step("cat b.go", "3")}
		}, ActContinue, StopNone, ruleContinue},

		// Same agent message ×3.
		{"same message x3", func(in *Input) {
			withHistory(in, talk("t1", "Let me check the tests."), talk("t2", "let me check  the tests."))
			in.Turn = stepsTurn("t3", a)
			in.Turn.AgentMessage = "Let me check the tests."
		}, ActStop, StopStuckLoop, ruleSameMessage},
		{"same message x2 is not stuck", func(in *Input) {
			withHistory(in, talk("t1", "Other."), talk("t2", "Let me check the tests."))
			in.Turn = stepsTurn("t3", a)
			in.Turn.AgentMessage = "Let me check the tests."
		}, ActContinue, StopNone, ruleContinue},
		{"same message, not in a row", func(in *Input) {
			withHistory(in, talk("t1", "Let me check."), talk("t2", "Let me check."), talk("t3", "Different."))
			in.Turn = stepsTurn("t4", a)
			in.Turn.AgentMessage = "Let me check."
		}, ActContinue, StopNone, ruleContinue},

		// Empty replies ×3.
		{"three empty replies", func(in *Input) {
			e := TurnSummary{Status: StatusCompleted, EmptyReply: true}
			withHistory(in, e, e)
			in.Turn = e
		}, ActStop, StopEmptyReplies, ruleEmptyReplies},
		{"two empty replies", func(in *Input) {
			e := TurnSummary{Status: StatusCompleted, EmptyReply: true}
			withHistory(in, talk("t1", "hi"), e)
			in.Turn = e
		}, ActContinue, StopNone, ruleContinue},

		// Compactions.
		{"ten compactions without a step", func(in *Input) {
			c := TurnSummary{Status: StatusCompleted, AgentMessage: "…", Compactions: 5, WorkspaceFingerprint: "x"}
			c2 := c
			c2.WorkspaceFingerprint, c2.AgentMessage = "y", "..."
			withHistory(in, c)
			in.Turn = c2
		}, ActStop, StopCompactionThrash, ruleCompactionStreak},
		{"nine compactions without a step", func(in *Input) {
			in.Config.CompactionTimes = 100
			c := TurnSummary{Status: StatusCompleted, AgentMessage: "…", Compactions: 9}
			in.Turn = c
		}, ActContinue, StopNone, ruleContinue},
		{"compactions without progress", func(in *Input) {
			one := func(id string) TurnSummary {
				tu := stepsTurn(id, a, b, c)
				tu.WorkspaceFingerprint, tu.Compactions, tu.AgentMessage = "ws", 1, "msg "+id
				return tu
			}
			withHistory(in, one("t1"), one("t2"), one("t3"))
			in.Turn = one("t4")
		}, ActStop, StopCompactionThrash, ruleCompactionNoProgress},
		{"compactions with progress", func(in *Input) {
			one := func(id string) TurnSummary {
				tu := stepsTurn(id, a, b, c)
				tu.Compactions = 2
				return tu
			}
			withHistory(in, one("t1"), one("t2"), one("t3"))
			in.Turn = one("t4")
		}, ActContinue, StopNone, ruleContinue},

		// Same error K turns in a row.
		{"same error three turns", func(in *Input) {
			one := func(id string) TurnSummary { return stepsTurn(id, step("edit "+id, "ok"), fail) }
			withHistory(in, one("t1"), one("t2"))
			in.Turn = one("t3")
		}, ActStop, StopRepeatedError, ruleRepeatedError},
		{"error fixed within the turn", func(in *Input) {
			one := func(id string) TurnSummary { return stepsTurn(id, step("edit "+id, "ok"), fail) }
			withHistory(in, one("t1"), one("t2"))
			in.Turn = stepsTurn("t3", fail, step("edit", "ok"), step("go test ./...", "exit 0"))
		}, ActContinue, StopNone, ruleContinue},
		{"error changes between turns", func(in *Input) {
			withHistory(in, stepsTurn("t1", step("e1", "ok"), fail), stepsTurn("t2", step("e2", "ok"), failOther))
			in.Turn = stepsTurn("t3", step("e3", "ok"), fail)
		}, ActContinue, StopNone, ruleContinue},
		{"repeated error threshold", func(in *Input) {
			in.Config.SameErrorTimes = 2
			withHistory(in, stepsTurn("t1", step("e1", "ok"), fail))
			in.Turn = stepsTurn("t2", step("e2", "ok"), fail)
		}, ActStop, StopRepeatedError, ruleRepeatedError},
	})
}

func TestErrorSignature(t *testing.T) {
	fail := errStep("go test", "exit 1")
	for _, c := range []struct {
		name string
		turn TurnSummary
		want string
	}{
		{"clean", stepsTurn("t", step("ls", "ok")), ""},
		{"last failure", stepsTurn("t", fail, step("edit", "ok")), "exec_command: go test => exit 1"},
		{"fixed later", stepsTurn("t", fail, step("go test", "exit 0")), ""},
		{"turn failure", TurnSummary{Error: &TurnError{Message: "context window exceeded", Kind: "contextWindow"}}, "turn: contextWindow: context window exceeded"},
	} {
		if got := errorSignature(c.turn); got != c.want {
			t.Errorf("errorSignature(%s) = %q, want %q", c.name, got, c.want)
		}
	}
}
