package github

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"time"

	gh "github.com/google/go-github/v60/github"
)

// CheckState is where the checks of a commit stand, all of them together.
type CheckState string

const (
	ChecksPending        CheckState = "pending"        // some still run (or none reported yet)
	ChecksPassed         CheckState = "passed"         // every check and status passed (or was skipped/neutral)
	ChecksFailed         CheckState = "failed"         // at least one failed, none waits for approval
	ChecksActionRequired CheckState = "actionRequired" // a workflow waits for a human to approve it
)

// Annotation is one line a check pointed at.
type Annotation struct {
	Path    string `json:"path"`
	Line    int    `json:"line"`
	Level   string `json:"level"` // notice | warning | failure
	Title   string `json:"title,omitempty"`
	Message string `json:"message"`
}

// Check is one check run or commit status.
type Check struct {
	Name       string `json:"name"`
	Kind       string `json:"kind"`   // checkRun | status
	Status     string `json:"status"` // queued | in_progress | completed (status: pending | completed)
	Conclusion string `json:"conclusion,omitempty"`
	URL        string `json:"url,omitempty"`
	Summary    string `json:"summary,omitempty"`
	// For a failed check: what it said, and the end of its job's log when
	// it ran on GitHub Actions.
	Annotations []Annotation `json:"annotations,omitempty"`
	LogTail     string       `json:"logTail,omitempty"`
	id          int64
	app         string
}

// Checks are the checks of one commit.
type Checks struct {
	SHA    string     `json:"sha"`
	State  CheckState `json:"state"`
	Checks []Check    `json:"checks"`
}

// Failed are the checks that failed.
func (cs Checks) Failed() []Check {
	var out []Check
	for _, c := range cs.Checks {
		if failedConclusion(c.Conclusion) {
			out = append(out, c)
		}
	}
	return out
}

func failedConclusion(c string) bool {
	switch c {
	case "failure", "timed_out", "cancelled", "startup_failure", "error":
		return true
	}
	return false
}

// LogTailBytes is how much of a failed job's log a fix task gets.
const LogTailBytes = 8 << 10

// Checks reads the check runs and commit statuses of sha and sums them
// up. For each failed check run it reads the annotations and, for one that
// ran on GitHub Actions, the tail of its job's log (best effort: a log that
// cannot be read leaves LogTail empty).
func (c *Client) Checks(ctx context.Context, sha string) (Checks, error) {
	out := Checks{SHA: sha}
	opts := &gh.ListCheckRunsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		res, resp, err := c.gh.Checks.ListCheckRunsForRef(ctx, c.repo.Owner, c.repo.Name, sha, opts)
		if err != nil {
			return Checks{}, classify("list the check runs of "+short(sha), err)
		}
		for _, r := range res.CheckRuns {
			out.Checks = append(out.Checks, Check{Name: r.GetName(), Kind: "checkRun", Status: r.GetStatus(),
				Conclusion: r.GetConclusion(), URL: r.GetHTMLURL(), Summary: r.GetOutput().GetSummary(),
				id: r.GetID(), app: r.GetApp().GetSlug()})
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	st, _, err := c.gh.Repositories.GetCombinedStatus(ctx, c.repo.Owner, c.repo.Name, sha, &gh.ListOptions{PerPage: 100})
	if err != nil && !IsKind(classify("", err), NotFound) {
		return Checks{}, classify("read the statuses of "+short(sha), err)
	}
	var statuses []*gh.RepoStatus
	if st != nil {
		statuses = st.Statuses
	}
	for _, s := range statuses {
		ch := Check{Name: s.GetContext(), Kind: "status", URL: s.GetTargetURL(), Summary: s.GetDescription()}
		switch s.GetState() {
		case "pending":
			ch.Status = "pending"
		default:
			ch.Status, ch.Conclusion = "completed", s.GetState() // success | failure | error
		}
		out.Checks = append(out.Checks, ch)
	}
	sort.SliceStable(out.Checks, func(i, j int) bool { return out.Checks[i].Name < out.Checks[j].Name })
	out.State = sumUp(out.Checks)
	for i := range out.Checks {
		ch := &out.Checks[i]
		if ch.Kind != "checkRun" || !failedConclusion(ch.Conclusion) {
			continue
		}
		anns, _, err := c.gh.Checks.ListCheckRunAnnotations(ctx, c.repo.Owner, c.repo.Name, ch.id, &gh.ListOptions{PerPage: 50})
		if err != nil {
			return Checks{}, classify("read the annotations of "+ch.Name, err)
		}
		for _, a := range anns {
			ch.Annotations = append(ch.Annotations, Annotation{Path: a.GetPath(), Line: a.GetStartLine(),
				Level: a.GetAnnotationLevel(), Title: a.GetTitle(), Message: a.GetMessage()})
		}
		if ch.app == "github-actions" {
			ch.LogTail = c.jobLogTail(ctx, ch.id)
		}
	}
	return out, nil
}

// sumUp is the state of a set of checks: action required wins (nothing
// moves until a human approves), then pending, then failed.
func sumUp(cs []Check) CheckState {
	if len(cs) == 0 {
		return ChecksPending
	}
	pending, failed := false, false
	for _, c := range cs {
		switch {
		case c.Conclusion == "action_required":
			return ChecksActionRequired
		case c.Status != "completed":
			pending = true
		case failedConclusion(c.Conclusion):
			failed = true
		}
	}
	switch {
	case pending:
		return ChecksPending
	case failed:
		return ChecksFailed
	}
	return ChecksPassed
}

// jobLogTail reads the end of an Actions job's log ("" when it cannot).
func (c *Client) jobLogTail(ctx context.Context, jobID int64) string {
	u, _, err := c.gh.Actions.GetWorkflowJobLogs(ctx, c.repo.Owner, c.repo.Name, jobID, 2)
	if err != nil || u == nil {
		return ""
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return ""
	}
	// The log URL is pre-signed: no token goes to it.
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return ""
	}
	return tail(string(b), LogTailBytes)
}

// PollDelay is the wait before the next look at pending checks: 10 s
// doubling per look to 5 minutes, so a long CI costs few requests.
func PollDelay(looks int) time.Duration {
	d := 10 * time.Second
	for i := 0; i < looks && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// Describe is a failed check as a fix task's objective reads it: the
// check, its annotations and the end of its log.
func (ch Check) Describe() string {
	s := fmt.Sprintf("The check %q failed (%s)", ch.Name, ch.Conclusion)
	if ch.URL != "" {
		s += ": " + ch.URL
	}
	s += "\n"
	if ch.Summary != "" {
		s += ch.Summary + "\n"
	}
	for _, a := range ch.Annotations {
		s += fmt.Sprintf("- %s:%d %s: %s\n", a.Path, a.Line, a.Level, a.Message)
	}
	if ch.LogTail != "" {
		s += "The end of its log:\n```\n" + ch.LogTail + "\n```\n"
	}
	return s
}
