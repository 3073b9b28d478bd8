package main

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/protocol"
)

func testRun() protocol.Run {
	w := protocol.WaitPlanApproval
	return protocol.Run{ID: "abc123", Status: protocol.RunWaiting, WaitingFor: &w, BaseBranch: "main",
		Plan: protocol.RunPlan{Version: 1, Summary: "two tasks", Tasks: []protocol.RunTask{
			{PlanTask: protocol.PlanTask{ID: "t1", Title: "first", Kind: "file_edit", Risk: protocol.RiskLow, Dependencies: []string{},
				Acceptance: protocol.TaskAcceptance{Criteria: []string{"it works"}, Checks: []string{"sh test.sh"}, Files: []string{}}}},
			{PlanTask: protocol.PlanTask{ID: "t2", Title: "second \"quoted\"", Description: "multi\nline", Kind: "docs", Risk: protocol.RiskHigh,
				Dependencies: []string{"t1"}, Estimate: "5m", Acceptance: protocol.TaskAcceptance{Criteria: []string{}, Checks: []string{}, Files: []string{"README.md"}}}},
		}}}
}

// The plan goes to the editor and comes back as the same tasks; an edit
// is read back; what the protocol would refuse is refused in plain words.
func TestPlanTextRoundTrip(t *testing.T) {
	r := testRun()
	text, err := planText(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := parsePlanText(text)
	if err != nil {
		t.Fatalf("parsePlanText: %v\n%s", err, text)
	}
	want := []protocol.PlanTask{r.Plan.Tasks[0].PlanTask, r.Plan.Tasks[1].PlanTask}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
	edited := strings.Replace(text, `title = "first"`, `title = "first, edited"`, 1)
	if got, err := parsePlanText(edited); err != nil || got[0].Title != "first, edited" {
		t.Errorf("edited: %v %+v", err, got)
	}
	if got, err := parsePlanText("# nothing\n"); err != nil || got != nil {
		t.Errorf("an empty plan = %+v, %v; want unchanged", got, err)
	}
	for _, c := range []struct{ text, want string }{
		{strings.Replace(text, `dependencies = []`, `dependencies = ["t2"]`, 1), "cycle"},
		{strings.Replace(text, `risk = "low"`, `risk = "tiny"`, 1), `risk must be "low", "medium" or "high"`},
		{text + "\nbogus = 1\n", "does not know: tasks.bogus"},
		{"[[tasks]\n", "not valid TOML"},
	} {
		_, err := parsePlanText(c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "Invalid params") {
			t.Errorf("parsePlanText = %v, want an error with %q and no protocol prefix", err, c.want)
		}
	}
}

// Every stop names the command that continues it, with the flags that
// reach the same data dir.
func TestNextSteps(t *testing.T) {
	flags := " --data-dir '/tmp/my data'"
	wait := func(w protocol.RunWaitingFor, st protocol.RunStatus) protocol.Run {
		r := testRun()
		r.Status, r.WaitingFor = st, &w
		return r
	}
	task := "t2"
	gate := wait(protocol.WaitTaskApproval, protocol.RunWaiting)
	gate.CurrentTaskID = &task
	for _, c := range []struct {
		r    protocol.Run
		want []string
	}{
		{wait(protocol.WaitPlanApproval, protocol.RunWaiting), []string{"apserver runs approve abc123" + flags, "apserver runs edit abc123" + flags, `apserver runs reject abc123 --feedback "what to change"` + flags}},
		{gate, []string{"apserver runs approve abc123" + flags + "    # run the high-risk task t2", "apserver runs answer abc123 --reject" + flags}},
		{wait(protocol.WaitClarification, protocol.RunWaiting), []string{`apserver runs answer abc123 --text "your answer"` + flags}},
		{wait(protocol.WaitRepair, protocol.RunPaused), []string{"apserver runs approve abc123" + flags}},
		{wait(protocol.WaitResume, protocol.RunPaused), []string{"apserver runs resume abc123" + flags}},
		{protocol.Run{ID: "abc123", Status: protocol.RunFailed}, []string{"apserver runs resume abc123" + flags}},
	} {
		got := strings.Join(nextSteps(c.r, flags), "\n")
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("nextSteps(%s %v) =\n%s\nwant a line with %q", c.r.Status, *c.r.WaitingFor, got, w)
			}
		}
	}
	if got := nextSteps(protocol.Run{ID: "x", Status: protocol.RunCompleted}, ""); len(got) != 0 {
		t.Errorf("nextSteps(completed) = %v", got)
	}
	if shellQuote("/tmp/my data") != "'/tmp/my data'" || shellQuote("http://127.0.0.1:9/v1") != "http://127.0.0.1:9/v1" || shellQuote("it's") != `'it'\''s'` {
		t.Error("shellQuote")
	}
}

// What a run will do to its base branch, said before it starts.
func TestCheckoutPromise(t *testing.T) {
	for _, c := range []struct {
		dir   string
		trust protocol.Trust
		aut   protocol.Autonomy
		merge protocol.MergeMode
		want  string
	}{
		{"/src/app", protocol.TrustAuto, protocol.AutonomyFullAuto, protocol.MergeFastForward, "fast-forwards main to the run's branch: main is checked out in /src/app, so git merge --ff-only updates the files"},
		{"", protocol.TrustAuto, protocol.AutonomyFullAuto, protocol.MergeSquash, "adds one squash commit to main: main is checked out nowhere, so only its ref moves"},
		{"/src/app", protocol.TrustManual, protocol.AutonomyFullAuto, protocol.MergeFastForward, "main and your checkout stay as they are: the branch is left for review"},
		{"/src/app", protocol.TrustAuto, protocol.AutonomyOff, protocol.MergeFastForward, "plans only"},
	} {
		if got := checkoutPromise("main", c.dir, c.trust, c.aut, c.merge); !strings.Contains(got, c.want) {
			t.Errorf("checkoutPromise(%q, %s, %s, %s) = %q, want %q", c.dir, c.trust, c.aut, c.merge, got, c.want)
		}
	}
}

func TestParseAge(t *testing.T) {
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "12h": 12 * time.Hour, "90m": 90 * time.Minute, "0d": 0} {
		if got, err := parseAge(in); err != nil || got != want {
			t.Errorf("parseAge(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"-1d", "xd", "soon", "-5h"} {
		if _, err := parseAge(in); err == nil {
			t.Errorf("parseAge(%q) accepted", in)
		}
	}
}

// A run left for review exits 8, a merged one 0, a plan-only one 0.
func TestRunExitLeftForReview(t *testing.T) {
	sha := "abc"
	code := func(r protocol.Run) int {
		err := runExit(r)
		if err == nil {
			return 0
		}
		return err.(*exitError).code
	}
	if c := code(protocol.Run{Status: protocol.RunCompleted, Autonomy: protocol.AutonomyFullAuto}); c != 8 {
		t.Errorf("left for review = %d, want 8", c)
	}
	if c := code(protocol.Run{Status: protocol.RunCompleted, Autonomy: protocol.AutonomyFullAuto, MergeCommit: &sha}); c != 0 {
		t.Errorf("merged = %d, want 0", c)
	}
	if c := code(protocol.Run{Status: protocol.RunCompleted, Autonomy: protocol.AutonomyOff}); c != 0 {
		t.Errorf("plan only = %d, want 0", c)
	}
}

func TestDisplayCommand(t *testing.T) {
	for in, want := range map[string]string{
		`/bin/bash -c 'printf '\''%s\n'\'' hi > a.txt'`: `printf '%s\n' hi > a.txt`,
		`/bin/bash -lc 'make test'`:                     `make test`,
		`ls -la`:                                        `ls -la`,
		`/bin/bash -c 'a' 'b'`:                          `/bin/bash -c 'a' 'b'`,
	} {
		if got := displayCommand(in); got != want {
			t.Errorf("displayCommand(%q) = %q, want %q", in, got, want)
		}
	}
}
