package runs

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/apserver/apserver/protocol"
)

// Dir is where a run's artifacts live in its branch.
func Dir(runID string) string { return path.Join(".apserver", "runs", runID) }

// MemoryFile is the project's memory of decisions, read by later runs.
const MemoryFile = ".apserver/memory.md"

func when(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}

func cell(s string) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

// Artifacts renders the run's files, by path relative to the worktree:
// plan.md, state.md, context.json and validation-report.md.
func Artifacts(s Snapshot) map[string][]byte {
	d := Dir(s.Run.ID)
	return map[string][]byte{
		path.Join(d, "plan.md"):              []byte(PlanMarkdown(s.Run)),
		path.Join(d, "state.md"):             []byte(StateMarkdown(s)),
		path.Join(d, "context.json"):         ContextJSON(s),
		path.Join(d, "validation-report.md"): []byte(ValidationReport(s)),
	}
}

// PlanMarkdown is plan.md: the plan as a reader wants it.
func PlanMarkdown(r protocol.Run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Plan of run %s (v%d)\n\nRequest: %s\n\n", r.ID, r.Plan.Version, r.Request)
	if r.Plan.Summary != "" {
		fmt.Fprintf(&b, "%s\n\n", r.Plan.Summary)
	}
	fmt.Fprintf(&b, "Approved: %v\n", r.Plan.Approved)
	for i, t := range r.Plan.Tasks {
		fmt.Fprintf(&b, "\n## %d. %s — %s\n\n", i+1, t.ID, t.Title)
		fmt.Fprintf(&b, "- kind: %s, risk: %s, estimate: %s, status: %s, retries: %d\n", t.Kind, t.Risk, orDash(t.Estimate), t.Status, t.RetryCount)
		fmt.Fprintf(&b, "- depends on: %s\n", orDash(strings.Join(t.Dependencies, ", ")))
		if t.Description != "" {
			fmt.Fprintf(&b, "\n%s\n", t.Description)
		}
		if len(t.Acceptance.Criteria)+len(t.Acceptance.Checks)+len(t.Acceptance.Files) > 0 {
			b.WriteString("\nAcceptance:\n")
			for _, c := range t.Acceptance.Criteria {
				fmt.Fprintf(&b, "- %s\n", c)
			}
			for _, c := range t.Acceptance.Checks {
				fmt.Fprintf(&b, "- check: `%s`\n", c)
			}
			for _, f := range t.Acceptance.Files {
				fmt.Fprintf(&b, "- file: `%s`\n", f)
			}
		}
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// StateMarkdown is state.md, rewritten on every transition.
func StateMarkdown(s Snapshot) string {
	r := s.Run
	var b strings.Builder
	fmt.Fprintf(&b, "# Run %s\n\nRequest: %s\n\n", r.ID, r.Request)
	cur, sub, retries := "-", s.Step, 0
	id, note := "", ""
	switch {
	case r.CurrentTaskID != nil:
		id = *r.CurrentTaskID
	case r.RepairProposal != nil:
		// A blocked task is no longer in flight, but it is what the run
		// waits on, with its retries.
		id, note = r.RepairProposal.TaskID, " (blocked)"
	}
	if id != "" {
		cur = id + note
		for _, t := range r.Plan.Tasks {
			if t.ID == id {
				retries = t.RetryCount
			}
		}
	}
	wait := "-"
	if r.WaitingFor != nil {
		wait = string(*r.WaitingFor)
	}
	fmt.Fprintf(&b, "| | |\n| --- | --- |\n| status | %s |\n| stage | %s |\n| current task | %s |\n| sub-step | %s |\n| retry count | %d |\n| waiting for | %s |\n| reason | %s |\n| branch | %s (from %s) |\n| updated | %s |\n",
		r.Status, r.Stage, cur, sub, retries, wait, cell(deref(r.Reason)), r.Branch, r.BaseBranch, when(r.UpdatedAtMs))
	if pr := r.PullRequest; pr != nil {
		fmt.Fprintf(&b, "| pull request | #%d %s (%s) |\n", pr.Number, pr.URL, pr.State)
	}
	if r.Status == protocol.RunFailed || (r.WaitingFor != nil && *r.WaitingFor == protocol.WaitRepair) {
		b.WriteString("\nThis run is not retried automatically: it waits for the user (run/resume, run/repair/approve or run/cancel).\n")
	}
	b.WriteString("\n## Completed tasks\n\n| task | when | key outcome |\n| --- | --- | --- |\n")
	for _, t := range r.Plan.Tasks {
		if t.Status == protocol.TaskCompleted {
			var at int64
			if t.CompletedAtMs != nil {
				at = *t.CompletedAtMs
			}
			fmt.Fprintf(&b, "| %s %s | %s | commit %s |\n", t.ID, cell(t.Title), when(at), deref(t.Commit))
		}
	}
	b.WriteString("\n## Key decisions\n\n")
	for _, d := range s.Decisions {
		fmt.Fprintf(&b, "- %s %s\n", when(d.AtMs), d.Text)
	}
	fmt.Fprintf(&b, "\n## Last session\n\n- ended at: %s\n- reason: %s\n", when(s.LastEvent.AtMs), lastSession(s.LastEvent))
	if s.LastEvent.Reason != "" {
		fmt.Fprintf(&b, "- notes: %s\n", cell(s.LastEvent.Reason))
	}
	b.WriteString("\n## Retry log\n\n")
	for _, a := range s.Attempts {
		if !a.OK {
			fmt.Fprintf(&b, "- %s task %s attempt %d failed: %s\n", when(a.AtMs), a.TaskID, a.Attempt, cell(a.Report))
		}
	}
	b.WriteString("\n## Blockers\n\n")
	for _, x := range s.Blockers {
		fmt.Fprintf(&b, "- %s\n", x)
	}
	return b.String()
}

// lastSession says what the last event of the log was, in words where its
// type alone would mislead (a run left for review is not "merged").
func lastSession(ev Event) string {
	if ev.Type != EvMerged {
		return string(ev.Type)
	}
	switch {
	case ev.Commit != "":
		return "merged as " + ev.Commit
	case ev.Reason != "":
		return "not merged: the branch is left for review"
	}
	return "the branch is left for review (not merged)"
}

// ValidationReport is validation-report.md: every validation of every
// task, with what it found.
func ValidationReport(s Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Validation report of run %s\n", s.Run.ID)
	for _, a := range s.Attempts {
		verdict := "passed"
		if !a.OK {
			verdict = "failed"
		}
		fmt.Fprintf(&b, "\n## %s attempt %d: %s (%s)\n\n%s\n", a.TaskID, a.Attempt, verdict, when(a.AtMs), strings.TrimSpace(a.Report))
	}
	return b.String()
}

// ContextJSON is context.json: request, configuration, trust, model
// routing, clarifications with answers, decisions, and the artifacts with
// their commits.
func ContextJSON(s Snapshot) []byte {
	r := s.Run
	type artifact struct {
		TaskID string `json:"taskId"`
		Title  string `json:"title"`
		Commit string `json:"commit"`
	}
	arts := []artifact{}
	for _, t := range r.Plan.Tasks {
		if t.Commit != nil {
			arts = append(arts, artifact{t.ID, t.Title, *t.Commit})
		}
	}
	if r.MergeCommit != nil {
		arts = append(arts, artifact{"", "merge into " + r.BaseBranch, *r.MergeCommit})
	}
	v := map[string]any{
		"runId":   r.ID,
		"request": r.Request,
		"config": map[string]any{
			"baseBranch": r.BaseBranch, "branch": r.Branch, "autonomy": r.Autonomy, "merge": r.Merge,
			"maxClarifications": r.MaxClarifications,
		},
		"trust":          r.Trust,
		"models":         r.Models,
		"clarifications": r.Clarifications,
		"decisions":      s.Decisions,
		"artifacts":      arts,
		"status":         r.Status,
	}
	if r.PullRequest != nil {
		// What a second machine needs to find the run's pull request again.
		v["pullRequest"] = r.PullRequest
	}
	// The whole run as clients see it: what `apserver runs import`
	// rebuilds a run from when the data dir is gone.
	v["run"] = r
	b, _ := json.MarshalIndent(v, "", "  ")
	return append(b, '\n')
}

// MemoryEntry is the run's section of .apserver/memory.md: its key
// decisions, for later runs to read.
func MemoryEntry(s Snapshot) string {
	r := s.Run
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Run %s (%s): %s\n\n", r.ID, r.Status, cell(r.Request))
	for _, d := range s.Decisions {
		fmt.Fprintf(&b, "- %s\n", d.Text)
	}
	return b.String()
}
