package github

import (
	"fmt"
	"regexp"
	"strings"
)

// RunInfo is what a pull request's body says about the run behind it.
type RunInfo struct {
	RunID   string
	Request string
	Branch  string
	Base    string
	Status  string // the run's status, as the run reports it
	Tasks   []TaskInfo
	// Clarifications asked and answered during the run.
	Clarifications []QA
	Decisions      []string
	// Validation is the run's last validator verdict, "" before one.
	Validation string
}

// TaskInfo is one task of the plan and its evidence.
type TaskInfo struct {
	ID       string
	Title    string
	Status   string
	Commit   string // the task's commit on the branch, "" before it has one
	Evidence string // what showed it done: the checks that ran, the validator's words
}

// QA is a clarification and its answer.
type QA struct{ Question, Answer string }

// runMarker is the hidden link-back line; RunIDFromBody reads it back.
var runMarker = regexp.MustCompile(`<!-- apserver-run: ([A-Za-z0-9._:-]+) -->`)

// Body is the pull request's description, generated from the run — never
// written by the model: the request, the plan with each task's commit and
// evidence, clarifications, decisions, and a line naming the run. The
// same run gives the same text, so a body is rewritten only when the run
// changed.
func Body(r RunInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", quote(r.Request))
	if r.Status != "" {
		fmt.Fprintf(&b, "**Run status:** %s\n\n", r.Status)
	}
	if len(r.Tasks) > 0 {
		done := 0
		for _, t := range r.Tasks {
			if t.Status == "done" || t.Status == "completed" {
				done++
			}
		}
		fmt.Fprintf(&b, "### Plan (%d of %d tasks done)\n\n| task | status | commit | evidence |\n| --- | --- | --- | --- |\n", done, len(r.Tasks))
		for _, t := range r.Tasks {
			commit := "—"
			if t.Commit != "" {
				commit = "`" + short(t.Commit) + "`"
			}
			ev := t.Evidence
			if ev == "" {
				ev = "—"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(t.Title), cell(t.Status), commit, cell(ev))
		}
		b.WriteString("\n")
	}
	if r.Validation != "" {
		fmt.Fprintf(&b, "### Validation\n\n%s\n\n", r.Validation)
	}
	if len(r.Clarifications) > 0 {
		b.WriteString("### Clarifications\n\n")
		for _, q := range r.Clarifications {
			fmt.Fprintf(&b, "- **Q:** %s\n  **A:** %s\n", oneLine(q.Question), oneLine(q.Answer))
		}
		b.WriteString("\n")
	}
	if len(r.Decisions) > 0 {
		b.WriteString("### Decisions\n\n")
		for _, d := range r.Decisions {
			fmt.Fprintf(&b, "- %s\n", oneLine(d))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "---\nOpened by apserver run `%s` from branch `%s` into `%s`.\n<!-- apserver-run: %s -->\n", r.RunID, r.Branch, r.Base, r.RunID)
	return b.String()
}

// RunIDFromBody is the run a body names, "" when none.
func RunIDFromBody(body string) string {
	m := runMarker.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

// Title is a pull request's title from the run's request: its first line,
// at most 72 characters.
func Title(request string) string {
	t := oneLine(request)
	if r := []rune(t); len(r) > 72 {
		t = string(r[:71]) + "…"
	}
	if t == "" {
		t = "apserver run"
	}
	return t
}

func quote(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = "> " + l
	}
	return strings.Join(lines, "\n")
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " …"
	}
	return s
}

func cell(s string) string {
	return strings.ReplaceAll(oneLine(s), "|", `\|`)
}
