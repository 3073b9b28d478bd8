package controller

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// normalizeText lowercases s, straightens quotes and collapses whitespace.
func normalizeText(s string) string {
	s = strings.NewReplacer("\u2019", "'", "\u2018", "'", "\u201c", `"`, "\u201d", `"`).Replace(s)
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// doneClaims are phrases with which agents say the work is finished.
var doneClaims = []string{
	"task is complete", "task is done", "task is finished", "task is now complete",
	"task has been completed", "task complete", "task completed",
	"objective is complete", "objective has been achieved", "objective is achieved", "objective is met",
	"goal is complete", "goal has been achieved", "goal is achieved", "goal is met",
	"work is complete", "work is done", "work is finished",
	"implementation is complete", "changes are complete",
	"everything is done", "everything is complete", "everything is in place",
	"all done", "i'm done", "i am done", "we're done", "we are done",
	"i have completed", "i've completed", "i have finished", "i've finished",
	"has been completed", "have been completed", "is now complete", "are now complete",
	"successfully completed", "nothing left to do", "nothing else to do", "nothing remains",
}

// notDone vetoes a claim: the message also says something is left.
var notDone = []string{
	"not done", "not yet", "not complete", "not finished", "not fully", "isn't done",
	"isn't complete", "isn't finished", "aren't done", "incomplete", "yet to",
	"still need", "still fail", "still broken", "remaining step", "remaining work",
	"remaining task", "next step", "next, i", "next i will", "next i'll",
	"i will now", "i'll now", "i will continue", "i'll continue", "in progress",
	"todo", "unable to", "could not", "couldn't", "cannot", "can't", "blocked",
	"failed to",
}

// ClaimsDone reports whether an agent message says the work is finished:
// a typical completion phrase ("The task is complete.", "I've finished…",
// a bare "Done."), with no sign that something is left ("not yet", "next
// step", "still failing", "blocked"). It is deliberately conservative:
// missing a claim costs a turn, a false claim would end the run.
func ClaimsDone(msg string) bool {
	m := normalizeText(msg)
	if m == "" {
		return false
	}
	for _, neg := range notDone {
		if strings.Contains(m, neg) {
			return false
		}
	}
	switch strings.Trim(m, ".! ") {
	case "done", "complete", "completed", "finished":
		return true
	}
	// A report that leads with the verdict: "Done: …", "Finished — …".
	for _, w := range []string{"done", "finished", "complete", "completed", "all done"} {
		rest, ok := strings.CutPrefix(m, w)
		if rest = strings.TrimLeft(rest, " "); ok && rest != "" && strings.ContainsRune(":,;.!-\u2014\u2013", []rune(rest)[0]) {
			return true
		}
	}
	for _, p := range doneClaims {
		if strings.Contains(m, p) {
			return true
		}
	}
	return false
}

// ReviewVerdict reads a reviewer's reply to the review input: its first
// non-empty line starts with "APPROVED" (accepted) or "CHANGES REQUESTED"
// (not accepted). Anything else is no verdict (nil), which Decide treats
// as not accepted.
func ReviewVerdict(msg string) *bool {
	for line := range strings.Lines(msg) {
		l := strings.TrimLeft(normalizeText(line), "#*_>`- ")
		if l == "" {
			continue
		}
		var v bool
		switch {
		case strings.HasPrefix(l, "approved"):
			v = true
		case strings.HasPrefix(l, "changes requested"):
			v = false
		default:
			return nil
		}
		return &v
	}
	return nil
}

func reviewInput(objective string) string {
	return "Review the work done toward this objective:\n" + objective + "\n\n" +
		"Inspect the changes (the diff against the starting point) and run the tests, build and linters. " +
		"Do not modify any file. Start your reply with APPROVED if the work fully achieves the objective " +
		"and every check passes; otherwise start it with CHANGES REQUESTED and list each problem that must be fixed."
}

func reviewRejectedInput(review string) string {
	if strings.TrimSpace(review) == "" {
		review = "(the reviewer gave no details)"
	}
	return "A reviewer did not accept the work:\n\n" + review + "\n\n" +
		"Address every point, run the checks, and say \"The task is complete.\" only when they pass."
}

func disputedInput(dis []string) string {
	return "You said the work is done, but " + strings.Join(dis, "; ") + ".\n" +
		"Finish the remaining work (or update the plan if a step is no longer needed), " +
		"run the tests, and say \"The task is complete.\" only when the plan is done and they pass."
}

func wrapUpInput(b budget) string {
	return fmt.Sprintf("The run is about to exhaust its %s budget (%s used). This is the last turn: start no new work.\n", b.name, b.used()) +
		"Leave the workspace clean: make the tests pass, or revert the unfinished change so they pass. " +
		"Update the plan to show what is done and what is left. " +
		"End with a short handoff note: what was done, what is left, and how to verify it."
}

// continueInput is the input of a plain continuation: the objective, what
// is left on the plan, the last check and the budget left.
func (r *run) continueInput() string {
	var b strings.Builder
	b.WriteString("Continue working toward the objective:\n")
	b.WriteString(r.in.Objective)
	b.WriteString("\n")
	if open := openSteps(r.in.Turn.Plan); len(open) > 0 {
		b.WriteString("\nPlan steps not completed:\n")
		for _, s := range open {
			b.WriteString("- " + s + "\n")
		}
	}
	if c := r.lastChecks(); c != nil && !*c {
		b.WriteString("\nThe last test/build/lint run failed.\n")
	}
	if bs := r.budgets(); len(bs) > 0 {
		left := make([]string, len(bs))
		for i, bu := range bs {
			left[i] = bu.left()
		}
		b.WriteString("\nBudget left: " + strings.Join(left, ", ") + ".\n")
	}
	b.WriteString("\nWhen the objective is fully achieved and verified (tests pass), say \"The task is complete.\" " +
		"If you are blocked, say exactly what blocks you.")
	return b.String()
}

// checkWords are words that make a command in backquotes a check.
var checkWords = map[string]bool{
	"test": true, "tests": true, "check": true, "lint": true, "build": true, "vet": true, "verify": true,
	"pytest": true, "tox": true, "mypy": true, "ruff": true, "eslint": true, "tsc": true, "clippy": true,
	"ctest": true, "staticcheck": true, "golangci-lint": true, "shellcheck": true, "typecheck": true,
}

// checkPhrases are ways an objective asks for checks to pass.
var checkPhrases = regexp.MustCompile(`\b(?:` +
	`(?:unit |integration |e2e |end-to-end |the |all )*tests? (?:pass|passes|passing|succeed|succeeds|are green|is green|green)` +
	`|(?:run|fix|make|get|keep) (?:the |all |every |our )?(?:failing |broken |unit |integration |e2e )*tests?(?: pass| passing| green)?` +
	`|test suite|failing tests?|tests? (?:are|is) failing` +
	`|(?:the |a )?(?:build|lint|linter|type ?check|typecheck|ci) (?:pass|passes|passing|succeeds?|is green|is clean|clean)` +
	`|(?:it|the code|code) compiles|make it compile` +
	`)\b`)

// NamedChecks lists the checks an objective names: the commands it gives
// in backquotes that run a test, build or linter (`make test`, `go test
// ./...`, `./gradlew check`), or else the phrase with which it asks for
// checks to pass ("make the tests pass", "the build passes", "fix the
// failing tests"). A completion with no check run in the run is then not
// accepted without a human (step 8, done.unverified).
func NamedChecks(objective string) []string {
	var out []string
	parts := strings.Split(objective, "`")
	for i := 1; i < len(parts); i += 2 {
		span := strings.TrimSpace(parts[i])
		words := strings.FieldsFunc(strings.ToLower(span), func(r rune) bool {
			return r == ' ' || r == '\t' || r == '/' || r == ':' || r == '.' || r == '='
		})
		if len(words) > 0 && (words[0] == "test" || words[0] == "[") {
			continue // the shell's test, `test -f x`
		}
		for _, w := range words {
			if checkWords[w] {
				out = append(out, "`"+clip(span, 80)+"`")
				break
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	if m := checkPhrases.FindString(normalizeText(objective)); m != "" {
		out = append(out, strconv.Quote(m))
	}
	return out
}
