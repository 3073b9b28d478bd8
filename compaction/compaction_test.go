package compaction

import (
	"reflect"
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
)

func TestTrigger(t *testing.T) {
	for _, tc := range []struct {
		window, autoLimit, want int64
	}{
		{0, 0, 0},                 // unknown window, no limit: never
		{100_000, 0, 90_000},      // 90% of the window
		{100_000, 50_000, 50_000}, // a lower configured limit wins
		{100_000, 95_000, 90_000}, // a higher one does not
		{0, 70_000, 70_000},       // the limit alone
	} {
		if got := Trigger(tc.window, tc.autoLimit); got != tc.want {
			t.Errorf("Trigger(%d, %d) = %d, want %d", tc.window, tc.autoLimit, got, tc.want)
		}
	}
	for _, tc := range []struct {
		trigger, tokens int64
		want            bool
	}{
		{0, 1 << 40, false}, {100, 99, false}, {100, 100, true}, {100, 101, true},
	} {
		if got := Due(tc.trigger, tc.tokens); got != tc.want {
			t.Errorf("Due(%d, %d) = %v, want %v", tc.trigger, tc.tokens, got, tc.want)
		}
	}
}

func TestEstimateTokens(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    Estimate
		want int64
	}{
		{"no usage: the whole request", Estimate{FixedBytes: 400, HistoryBytes: 3600, HistoryLen: 5}, 1000},
		{"usage plus what came since, when larger",
			Estimate{FixedBytes: 400, HistoryBytes: 3600, HistoryLen: 5, Usage: Usage{Valid: true, Tokens: 5000, HistLen: 3}, SinceBytes: 400}, 5100},
		{"the estimate, when larger than the usage",
			Estimate{FixedBytes: 400, HistoryBytes: 3600, HistoryLen: 5, Usage: Usage{Valid: true, Tokens: 10, HistLen: 3}, SinceBytes: 400}, 1000},
		{"usage of a longer history (rebuilt since): ignored",
			Estimate{FixedBytes: 400, HistoryBytes: 3600, HistoryLen: 2, Usage: Usage{Valid: true, Tokens: 9000, HistLen: 3}}, 1000},
		{"invalid usage: ignored",
			Estimate{FixedBytes: 4, HistoryBytes: 0, Usage: Usage{Tokens: 9000}}, 1},
	} {
		if got := tc.e.Tokens(); got != tc.want {
			t.Errorf("%s: %+v.Tokens() = %d, want %d", tc.name, tc.e, got, tc.want)
		}
	}
}

func TestMessageTooBig(t *testing.T) {
	for _, tc := range []struct {
		name                string
		window              int64
		learned             bool
		msgBytes, fixedByts int
		want                string // a part of the answer; "" fits
	}{
		{"unknown window", 0, false, 1 << 30, 0, ""},
		{"fits", 1000, false, 3000, 400, ""},
		{"just below 95%", 1000, false, 3396, 400, ""},
		{"at 95% with the instructions", 1000, false, 3400, 400, "with 100 tokens of instructions and tools, and m's window is 1000 tokens; F"},
		{"alone", 1000, false, 4000, 0, "the message alone is larger than the model's context window: about 1000 tokens (4000 bytes), and m's window is 1000 tokens; F"},
		{"learned", 1000, true, 4000, 0, "at most 1000 tokens (learned from a refusal)"},
	} {
		got := MessageTooBig("m", tc.window, tc.learned, tc.msgBytes, tc.fixedByts, "F")
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: MessageTooBig = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func user(s string) Entry { return Entry{Kind: User, Text: s} }

func TestReplace(t *testing.T) {
	call := Entry{Kind: ToolCall, Name: "shell", CallID: "c1", Arguments: "{}"}
	out := Entry{Kind: ToolOutput, CallID: "c1", Output: "ok"}
	summaryEntry := user(SummaryHeader + "\n\nold")
	pinnedEntry := user(PinnedHeader + "\n\n## Objective (full auto)\nx")
	long := strings.Repeat("w", 400) // 100 tokens
	for _, tc := range []struct {
		name   string
		h      []Entry
		step   Step
		budget int64
		want   Plan
	}{
		{"the newest users, the last verbatim, the earlier marked",
			[]Entry{user("a"), {Kind: Assistant, Text: "A"}, user("b")}, Step{}, 1000,
			Plan{Users: []Kept{{0, EarlierPrefix + "a"}, {2, "b"}}, Tail: 3}},
		{"an earlier mark is not doubled",
			[]Entry{user(EarlierPrefix + "a"), user("b")}, Step{}, 1000,
			Plan{Users: []Kept{{0, EarlierPrefix + "a"}, {1, "b"}}, Tail: 2}},
		{"what a compaction wrote is not kept as user input",
			[]Entry{user("a"), summaryEntry, pinnedEntry, user("b")}, Step{}, 1000,
			Plan{Users: []Kept{{0, EarlierPrefix + "a"}, {3, "b"}}, Tail: 4}},
		{"the budget stops at the older messages",
			[]Entry{user(long), user(long), user("c")}, Step{}, 150,
			Plan{Users: []Kept{{1, EarlierPrefix + long}, {2, "c"}}, Tail: 3}},
		{"the last message is kept over budget",
			[]Entry{user("a"), user(long)}, Step{}, 10,
			Plan{Users: []Kept{{1, long}}, Tail: 2}},
		{"the step in flight is kept as it is",
			[]Entry{user("a"), {Kind: Assistant, Text: "A"}, call, out}, Step{InStep: true, Start: 2}, 1000,
			Plan{Users: []Kept{{0, "a"}}, Tail: 2}},
		{"steered input after the step: nothing is in flight",
			[]Entry{user("a"), call, out, user("steer")}, Step{InStep: true, Start: 1}, 1000,
			Plan{Users: []Kept{{0, EarlierPrefix + "a"}, {3, "steer"}}, Tail: 4}},
		{"not in a step: the calls are summarized",
			[]Entry{user("a"), call, out}, Step{Start: 1}, 1000,
			Plan{Users: []Kept{{0, "a"}}, Tail: 3}},
	} {
		tc.want.Summary, tc.want.Pinned = SummaryHeader+"\n\nS", "P"
		got := Replace(tc.h, tc.step, "S", "P", tc.budget)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Replace = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestKeptBudget(t *testing.T) {
	for _, tc := range []struct {
		outputBudget int
		want         int64
	}{
		{0, KeptUserTokens}, {1 << 30, KeptUserTokens}, {8000, 1000},
	} {
		if got := KeptBudget(tc.outputBudget); got != tc.want {
			t.Errorf("KeptBudget(%d) = %d, want %d", tc.outputBudget, got, tc.want)
		}
	}
}

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name string
		j    Judged
		want Outcome
	}{
		{"a client's compaction that shrinks", Judged{Before: 1000, After: 100, Window: 2000, Trigger: 1800}, Outcome{Verdict: Keep, Replaced: true}},
		{"a client's compaction that does not shrink: kept as it is",
			Judged{Before: 100, After: 100, Streak: 2},
			Outcome{Verdict: NoGain, Streak: 2, Message: "compaction refused: it would not shrink the context (100 tokens before, 100 after); the history is kept as it is"}},
		{"an automatic one that does not shrink fails the turn",
			Judged{Auto: true, Before: 100, After: 120},
			Outcome{Verdict: Fail, Message: "compaction refused: it would not shrink the context (100 tokens before, 120 after)"}},
		{"automatic, below the trigger: the streak stays",
			Judged{Auto: true, Before: 1900, After: 100, Window: 2000, Trigger: 1800, Streak: 1}, Outcome{Verdict: Keep, Replaced: true, Streak: 1}},
		{"automatic, above the trigger: the streak grows",
			Judged{Auto: true, Before: 1990, After: 1850, Window: 2000, Trigger: 1800, Streak: 1}, Outcome{Verdict: Keep, Replaced: true, Streak: 2}},
		{"the third in a row above the trigger ends the turn",
			Judged{Auto: true, Before: 1990, After: 1850, Window: 2000, Trigger: 1800, Streak: 2},
			Outcome{Verdict: Fail, Replaced: true, Streak: 3, Message: "3 automatic compactions in a row left the context above the limit (1850 of 1800 tokens); stopping"}},
		{"still at 95% of the window",
			Judged{Auto: true, Before: 2500, After: 1900, Window: 2000, Trigger: 0},
			Outcome{Verdict: Fail, Replaced: true, Message: "the context does not fit the model's window even after compaction (1900 of 2000 tokens)"}},
		{"a client's compaction never counts in the streak",
			Judged{Before: 1990, After: 1900, Window: 2000, Trigger: 1800, Streak: 2}, Outcome{Verdict: Keep, Replaced: true, Streak: 2}},
	} {
		if got := Judge(tc.j); got != tc.want {
			t.Errorf("%s: Judge(%+v) = %+v, want %+v", tc.name, tc.j, got, tc.want)
		}
	}
}

func TestFitSummaryInput(t *testing.T) {
	es := []Entry{user(strings.Repeat("a", 4000)), user(strings.Repeat("b", 4000)), user("c")}
	fixed := ApproxTokens(len(Instructions) + len(Prompt))
	for _, tc := range []struct {
		name   string
		window int64
		want   int // entries kept, the newest
	}{
		{"unknown window", 0, 3},
		{"all fit", (fixed + 3000) * 100 / 95, 3},
		{"the oldest go first", (fixed + 1100) * 100 / 95, 2},
		{"at least one stays", 1, 1},
	} {
		got := FitSummaryInput(es, tc.window)
		if !reflect.DeepEqual(got, es[len(es)-tc.want:]) {
			t.Errorf("%s: FitSummaryInput(window %d) kept %d entries, want the newest %d", tc.name, tc.window, len(got), tc.want)
		}
	}
}

func TestSummaryRequest(t *testing.T) {
	es := Summarizable([]Entry{
		user(PinnedHeader + "\n\n## Current plan"),
		user("fix it"),
		{Kind: Assistant, Text: "on it"},
		{Kind: ToolCall, Name: "shell", CallID: "c1", Arguments: `{"cmd":"ls"}`},
		{Kind: ToolOutput, CallID: "c1", Output: "a.go"},
	})
	want := "<transcript>\n\n[user]\nfix it\n\n[assistant]\non it\n\n[tool call shell c1]\n{\"cmd\":\"ls\"}\n\n[tool output c1]\na.go\n</transcript>\n\n" + Prompt
	if got := SummaryRequest(es); got != want {
		t.Errorf("SummaryRequest = %q, want %q", got, want)
	}
}

func TestPinned(t *testing.T) {
	plan := []protocol.TurnPlanStep{{Step: "read", Status: "completed"}, {Step: "fix", Status: "inProgress"}}
	last := PinnedHeader + "\n\n## Objective (full auto)\nold" + PlanHeading + "\n- [pending] carried"
	for _, tc := range []struct {
		name, objective string
		plan            []protocol.TurnPlanStep
		last, want      string
	}{
		{"nothing", "", nil, "", ""},
		{"objective and plan", "ship it", plan, last,
			PinnedHeader + "\n\n## Objective (full auto)\nship it" + PlanHeading + "\n- [completed] read\n- [inProgress] fix"},
		{"no plan: the last pinned one is carried", "", nil, last, PinnedHeader + PlanHeading + "\n- [pending] carried"},
	} {
		got := Pinned(tc.objective, tc.plan, tc.last)
		if got != tc.want {
			t.Errorf("%s: Pinned = %q, want %q", tc.name, got, tc.want)
		}
		if got != "" && PlanSection(got) != "" && !strings.HasPrefix(PlanSection(got), PlanHeading) {
			t.Errorf("%s: PlanSection(%q) = %q", tc.name, got, PlanSection(got))
		}
	}
}

func TestEntry(t *testing.T) {
	if s, ok := user(SummaryHeader + "\n\n  the summary \n").Summary(); !ok || s != "the summary" {
		t.Errorf("Summary() = %q, %v, want the summary", s, ok)
	}
	if _, ok := (Entry{Kind: Assistant, Text: SummaryHeader}).Summary(); ok {
		t.Errorf("an assistant's text is no summary")
	}
	if !user(PinnedHeader).Written() || !user(PinnedHeader).Pinned() || user(SummaryHeader).Pinned() || user("x").Written() {
		t.Errorf("Written/Pinned misjudge the entries a compaction wrote")
	}
	if got := (Entry{Text: "ab", CallID: "c", Name: "n", Arguments: "{}", Output: "o"}).Bytes(); got != 7+EntryOverhead {
		t.Errorf("Bytes() = %d, want %d", got, 7+EntryOverhead)
	}
}

func TestCompactOnOverflow(t *testing.T) {
	for _, tc := range []struct {
		o    Overflow
		want bool
	}{
		{Overflow{}, true},
		{Overflow{Compacted: true}, false},
		{Overflow{CompactionTurn: true}, false},
		{Overflow{Output: true}, false},
	} {
		if got := CompactOnOverflow(tc.o); got != tc.want {
			t.Errorf("CompactOnOverflow(%+v) = %v, want %v", tc.o, got, tc.want)
		}
	}
}

func TestLatestUser(t *testing.T) {
	h := []Entry{user("a"), {Kind: Assistant, Text: "A"}, user("b"), user(SummaryHeader + "\n\ns"), {Kind: ToolOutput}}
	for _, tc := range []struct {
		from, want int
	}{
		{0, 2}, {2, 2}, {3, -1}, {9, -1},
	} {
		if got := LatestUser(h, tc.from); got != tc.want {
			t.Errorf("LatestUser(h, %d) = %d, want %d", tc.from, got, tc.want)
		}
	}
}

func TestRetryShorter(t *testing.T) {
	es := []Entry{user("a"), user("b")}
	for _, tc := range []struct {
		entries []Entry
		attempt int
		want    []Entry
		ok      bool
	}{
		{es, 0, es[1:], true},
		{es, MaxOverflowRetries - 1, es[1:], true},
		{es, MaxOverflowRetries, es, false},
		{es[1:], 0, es[1:], false},
	} {
		got, ok := RetryShorter(tc.entries, tc.attempt)
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("RetryShorter(%d entries, %d) = %d entries, %v; want %d, %v", len(tc.entries), tc.attempt, len(got), ok, len(tc.want), tc.ok)
		}
	}
}
