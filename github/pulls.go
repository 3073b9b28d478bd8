package github

import (
	"context"
	"fmt"
	"strings"

	gh "github.com/google/go-github/v60/github"
)

// PR is a pull request as a run records it.
type PR struct {
	Number  int    `json:"number"`
	URL     string `json:"url"`
	NodeID  string `json:"nodeId"` // for GraphQL mutations
	State   string `json:"state"`  // open | closed
	Draft   bool   `json:"draft"`
	Merged  bool   `json:"merged"`
	Head    string `json:"head"` // the branch
	Base    string `json:"base"`
	HeadSHA string `json:"headSha"`
	// MergeCommit is the merge commit's SHA once merged.
	MergeCommit string `json:"mergeCommit,omitempty"`
}

func prFrom(p *gh.PullRequest) PR {
	out := PR{Number: p.GetNumber(), URL: p.GetHTMLURL(), NodeID: p.GetNodeID(), State: p.GetState(),
		Draft: p.GetDraft(), Merged: p.GetMerged(), HeadSHA: p.GetHead().GetSHA(),
		Head: p.GetHead().GetRef(), Base: p.GetBase().GetRef()}
	if out.Merged {
		out.MergeCommit = p.GetMergeCommitSHA()
	}
	return out
}

// NewPR is what a run opens.
type NewPR struct {
	Head, Base, Title, Body string
	Draft                   bool
}

// EnsurePR opens the pull request for n.Head, or finds the open one that
// exists already for that branch (GitHub answers 422 to a second one):
// a run that restarts, or retries after an error, never opens a duplicate.
// created says which.
func (c *Client) EnsurePR(ctx context.Context, n NewPR) (pr PR, created bool, err error) {
	if found, ok, err := c.FindPR(ctx, n.Head); err != nil {
		return PR{}, false, err
	} else if ok {
		return found, false, nil
	}
	p, _, err := c.gh.PullRequests.Create(ctx, c.repo.Owner, c.repo.Name, &gh.NewPullRequest{
		Title: gh.String(n.Title), Head: gh.String(n.Head), Base: gh.String(n.Base),
		Body: gh.String(n.Body), Draft: gh.Bool(n.Draft),
	})
	if err == nil {
		return prFrom(p), true, nil
	}
	err = classify("create pull request for "+n.Head, err)
	if !IsKind(err, Invalid) {
		return PR{}, false, err
	}
	// Opened meanwhile (a race with another process, or GitHub's own
	// lag): reuse it.
	if found, ok, ferr := c.FindPR(ctx, n.Head); ferr == nil && ok {
		return found, false, nil
	}
	return PR{}, false, err
}

// FindPR returns the open pull request whose head is branch, if any.
func (c *Client) FindPR(ctx context.Context, branch string) (PR, bool, error) {
	ps, _, err := c.gh.PullRequests.List(ctx, c.repo.Owner, c.repo.Name, &gh.PullRequestListOptions{
		State: "open", Head: c.repo.Owner + ":" + branch, ListOptions: gh.ListOptions{PerPage: 10},
	})
	if err != nil {
		return PR{}, false, classify("find the pull request of "+branch, err)
	}
	for _, p := range ps {
		if p.GetHead().GetRef() == branch {
			return prFrom(p), true, nil
		}
	}
	return PR{}, false, nil
}

// FindRunPR finds the pull request, open or not, whose head was branch and
// whose body names runID (Body's link-back line): how a run's history is
// rebuilt after its branch was deleted on GitHub. ok is false when there
// is none.
func (c *Client) FindRunPR(ctx context.Context, branch, runID string) (PR, bool, error) {
	ps, _, err := c.gh.PullRequests.List(ctx, c.repo.Owner, c.repo.Name, &gh.PullRequestListOptions{
		State: "all", Head: c.repo.Owner + ":" + branch, ListOptions: gh.ListOptions{PerPage: 30},
	})
	if err != nil {
		return PR{}, false, classify("find the pull request of run "+runID, err)
	}
	for _, p := range ps {
		if p.GetHead().GetRef() == branch && RunIDFromBody(p.GetBody()) == runID {
			full, err := c.GetPR(ctx, p.GetNumber())
			return full, err == nil, err
		}
	}
	return PR{}, false, nil
}

// GetPR reads pull request number.
func (c *Client) GetPR(ctx context.Context, number int) (PR, error) {
	p, _, err := c.gh.PullRequests.Get(ctx, c.repo.Owner, c.repo.Name, number)
	if err != nil {
		return PR{}, classify(fmt.Sprintf("read #%d", number), err)
	}
	return prFrom(p), nil
}

// SetBody replaces the pull request's body (the run keeps it current).
func (c *Client) SetBody(ctx context.Context, number int, body string) error {
	_, _, err := c.gh.PullRequests.Edit(ctx, c.repo.Owner, c.repo.Name, number, &gh.PullRequest{Body: gh.String(body)})
	return classify(fmt.Sprintf("update the body of #%d", number), err)
}

// MarkReady takes a draft out of draft (GraphQL: REST cannot).
func (c *Client) MarkReady(ctx context.Context, pr PR) error {
	const q = `mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { isDraft } } }`
	return c.graphql(ctx, fmt.Sprintf("mark #%d ready for review", pr.Number), q, map[string]any{"id": pr.NodeID}, nil)
}

// RequestReviewers asks users and teams (slugs) to review.
func (c *Client) RequestReviewers(ctx context.Context, number int, users, teams []string) error {
	if len(users) == 0 && len(teams) == 0 {
		return nil
	}
	_, _, err := c.gh.PullRequests.RequestReviewers(ctx, c.repo.Owner, c.repo.Name, number, gh.ReviewersRequest{Reviewers: users, TeamReviewers: teams})
	return classify(fmt.Sprintf("request reviewers on #%d", number), err)
}

// AddLabels labels the pull request.
func (c *Client) AddLabels(ctx context.Context, number int, labels []string) error {
	if len(labels) == 0 {
		return nil
	}
	_, _, err := c.gh.Issues.AddLabelsToIssue(ctx, c.repo.Owner, c.repo.Name, number, labels)
	return classify(fmt.Sprintf("label #%d", number), err)
}

// MergeMethod is how a pull request is merged.
type MergeMethod string

const (
	MergeCommit MergeMethod = "merge"
	MergeSquash MergeMethod = "squash"
	MergeRebase MergeMethod = "rebase"
)

// Merge merges the pull request if and only if its head is still sha —
// what was validated is what merges. A head that moved is a Conflict; a
// merge GitHub refuses (branch protection, required checks or reviews, a
// conflict with the base) is MergeRefused with GitHub's reason. It returns
// the merge commit's SHA.
func (c *Client) Merge(ctx context.Context, number int, sha string, method MergeMethod, title string) (string, error) {
	if sha == "" {
		return "", &Error{Kind: Invalid, Op: fmt.Sprintf("merge #%d", number), Message: "no head SHA: a merge is always guarded by the SHA that was validated"}
	}
	res, _, err := c.gh.PullRequests.Merge(ctx, c.repo.Owner, c.repo.Name, number, "", &gh.PullRequestOptions{
		SHA: sha, MergeMethod: string(method), CommitTitle: title,
	})
	if err != nil {
		e := classify(fmt.Sprintf("merge #%d", number), err)
		// GitHub answers a moved head with 409 "Head branch was modified".
		return "", e
	}
	if !res.GetMerged() {
		return "", &Error{Kind: MergeRefused, Op: fmt.Sprintf("merge #%d", number), Message: res.GetMessage()}
	}
	return res.GetSHA(), nil
}

// EnableAutoMerge asks GitHub to merge once the requirements are met, for
// repositories that require it (GraphQL).
func (c *Client) EnableAutoMerge(ctx context.Context, pr PR, method MergeMethod, sha string) error {
	const q = `mutation($id: ID!, $method: PullRequestMergeMethod!, $sha: GitObjectID) {
  enablePullRequestAutoMerge(input: {pullRequestId: $id, mergeMethod: $method, expectedHeadOid: $sha}) { pullRequest { number } } }`
	return c.graphql(ctx, fmt.Sprintf("enable auto-merge on #%d", pr.Number), q,
		map[string]any{"id": pr.NodeID, "method": strings.ToUpper(string(method)), "sha": sha}, nil)
}

// DeleteBranch deletes a branch on GitHub; one already gone is no error.
func (c *Client) DeleteBranch(ctx context.Context, branch string) error {
	_, err := c.gh.Git.DeleteRef(ctx, c.repo.Owner, c.repo.Name, "heads/"+branch)
	err = classify("delete branch "+branch, err)
	if IsKind(err, NotFound) || IsKind(err, Invalid) {
		return nil
	}
	return err
}

// Close closes the pull request without merging it.
func (c *Client) Close(ctx context.Context, number int) error {
	_, _, err := c.gh.PullRequests.Edit(ctx, c.repo.Owner, c.repo.Name, number, &gh.PullRequest{State: gh.String("closed")})
	return classify(fmt.Sprintf("close #%d", number), err)
}
