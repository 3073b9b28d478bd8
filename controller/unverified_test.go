package controller

import (
	"strings"
	"testing"
)

// TestClaimIsNotCompletion: a completion claim stops the run "completed"
// only when no check that was due is missing. A check the agent tried and
// could not run, or an objective that names checks when none ran, stops
// the run for review (waitingOnHuman, not completed) with a reason naming
// the check.
func TestClaimIsNotCompletion(t *testing.T) {
	done := func(in *Input) { in.Turn.AgentMessage = "The task is complete." }
	runDecideCases(t, []decideCase{
		{"objective names make test, no check ran", func(in *Input) {
			in.Objective = "Make the tests pass. Check with `make test`."
			done(in)
		}, ActStop, StopWaitingOnHuman, ruleDoneUnverified},
		{"objective asks for passing tests, no check ran", func(in *Input) {
			in.Objective = "Make the tests pass."
			done(in)
		}, ActStop, StopWaitingOnHuman, ruleDoneUnverified},
		{"objective names checks, a check passed", func(in *Input) {
			in.Objective = "Make the tests pass."
			done(in)
			in.Turn.ChecksPassed = ptr(true)
		}, ActStop, StopCompleted, ruleDone},
		{"objective names checks, a check passed earlier in the run", func(in *Input) {
			in.Objective = "Make the tests pass."
			withHistory(in, TurnSummary{TurnID: "t0", Status: StatusCompleted, ChecksPassed: ptr(true), WorkspaceFingerprint: "ws0"})
			done(in)
		}, ActStop, StopCompleted, ruleDone},
		{"check declined this turn", func(in *Input) {
			done(in)
			in.Turn.ChecksNotRun = []string{"make test"}
		}, ActStop, StopWaitingOnHuman, ruleDoneUnverified},
		{"check declined, then another passed in the same turn", func(in *Input) {
			done(in)
			in.Turn.ChecksNotRun, in.Turn.ChecksPassed = []string{"make test"}, ptr(true)
		}, ActStop, StopWaitingOnHuman, ruleDoneUnverified},
		{"check declined in an earlier turn", func(in *Input) {
			withHistory(in, TurnSummary{TurnID: "t0", Status: StatusCompleted, ChecksNotRun: []string{"./gradlew test"}, WorkspaceFingerprint: "ws0"})
			done(in)
		}, ActStop, StopWaitingOnHuman, ruleDoneUnverified},
		{"check declined, then passing checks in a later turn", func(in *Input) {
			withHistory(in, TurnSummary{TurnID: "t0", Status: StatusCompleted, ChecksNotRun: []string{"make test"}, WorkspaceFingerprint: "ws0"})
			done(in)
			in.Turn.ChecksPassed = ptr(true)
		}, ActStop, StopCompleted, ruleDone},
		{"failed check still disputes", func(in *Input) {
			in.Objective = "Make the tests pass."
			done(in)
			in.Turn.ChecksPassed = ptr(false)
		}, ActContinue, StopNone, ruleDoneDisputed},
		{"objective names no check, none ran", func(in *Input) {
			done(in)
		}, ActStop, StopCompleted, ruleDone},
		{"an approving review does not cover a declined check", func(in *Input) {
			in.Turn.Kind, in.Turn.ReviewApproved = KindReview, ptr(true)
			in.Turn.ChecksNotRun = []string{"make check"}
		}, ActStop, StopWaitingOnHuman, ruleDoneUnverified},
		{"the decision model's stop does not cover it either", func(in *Input) {
			in.Objective = "Make the tests pass."
			done(in)
			in.Model = &ModelAnswer{Action: ActStop, Confidence: 0.9, Reason: "looks done"}
		}, ActStop, StopWaitingOnHuman, ruleModelStopUnverified},
		{"no wrap-up skip for an unverified claim", func(in *Input) {
			in.Config.Budgets.Turns = 2
			in.Objective = "Make the tests pass."
			done(in)
		}, ActContinue, StopNone, ruleWrapUp},
	})
	in := base()
	in.Objective = "Make the tests pass: run `make test`."
	in.Turn.AgentMessage = "The task is complete."
	if d := Decide(in); !strings.Contains(d.Reason, "`make test`") {
		t.Errorf("the reason does not name the check: %q", d.Reason)
	}
	in = base()
	in.Turn.AgentMessage, in.Turn.ChecksNotRun = "The task is complete.", []string{"./gradlew check"}
	if d := Decide(in); !strings.Contains(d.Reason, "`./gradlew check`") || !strings.Contains(d.Reason, "declined") {
		t.Errorf("the reason does not name the declined check: %q", d.Reason)
	}
}

func TestNamedChecks(t *testing.T) {
	for _, tc := range []struct {
		objective string
		want      string // "" for none
	}{
		{"Make the tests pass.", `"make the tests pass"`},
		{"Fix the failing tests in parser.go", `"fix the failing tests"`},
		{"Run `make test` and fix what fails", "`make test`"},
		{"Check with `go test ./...` and `golangci-lint run`", "`go test ./...`, `golangci-lint run`"},
		{"Get `./gradlew check` green", "`./gradlew check`"},
		{"Make sure the build passes", `"the build passes"`},
		{"Make sure it compiles", `"it compiles"`},
		{"Add a --verbose flag to the CLI.", ""},
		{"Write the latest changelog entry", ""},
		{"Rename `foo` to `bar`", ""},
		{"Document how to run tests later", `"run tests"`},
		// "The checks" says nothing of which: a run's task thread, whose
		// checks the run validates itself, is told "apserver commits when
		// the checks pass".
		{"Do not commit: apserver commits when the checks pass.", ""},
		{"The check `test -f flag.txt` failed", ""},
	} {
		got := strings.Join(NamedChecks(tc.objective), ", ")
		if got != tc.want {
			t.Errorf("NamedChecks(%q) = %q, want %q", tc.objective, got, tc.want)
		}
	}
}
