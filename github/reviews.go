package github

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// Comment is one review comment in a thread.
type Comment struct {
	ID          int64  `json:"id"` // REST id (databaseId): what a run records as consumed
	ThreadID    string `json:"threadId"`
	ReviewID    int64  `json:"reviewId"` // the submitted review it belongs to; 0 when none
	Author      string `json:"author"`
	Association string `json:"association"` // OWNER | MEMBER | COLLABORATOR | CONTRIBUTOR | NONE | …
	Bot         bool   `json:"bot"`
	Body        string `json:"body"`
	Path        string `json:"path,omitempty"`
	Line        int    `json:"line,omitempty"`
	URL         string `json:"url,omitempty"`
}

// Thread is a review thread with its state.
type Thread struct {
	ID       string    `json:"id"`
	Resolved bool      `json:"resolved"`
	Outdated bool      `json:"outdated"`
	Path     string    `json:"path,omitempty"`
	Line     int       `json:"line,omitempty"`
	Comments []Comment `json:"comments"`
}

// ReplyMarker ends every reply apserver writes, so that a later read never
// takes apserver's own words for a reviewer's.
const ReplyMarker = "<!-- apserver -->"

const threadsQuery = `query($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes {
          id isResolved isOutdated path line
          comments(first: 100) {
            nodes { databaseId body authorAssociation url author { __typename login } pullRequestReview { databaseId } }
          }
        }
      }
    }
  }
}`

// ReviewThreads reads every review thread of the pull request (GraphQL:
// REST has no resolved or outdated state).
func (c *Client) ReviewThreads(ctx context.Context, number int) ([]Thread, error) {
	var out []Thread
	var after any
	for page := 0; page < 50; page++ {
		var data struct {
			Repository struct {
				PullRequest *struct {
					ReviewThreads struct {
						PageInfo struct {
							HasNextPage bool
							EndCursor   string
						}
						Nodes []struct {
							ID         string
							IsResolved bool
							IsOutdated bool
							Path       string
							Line       int
							Comments   struct {
								Nodes []struct {
									DatabaseID        int64
									Body              string
									AuthorAssociation string
									URL               string
									Author            *struct {
										Typename string `json:"__typename"`
										Login    string
									}
									PullRequestReview *struct{ DatabaseID int64 }
								}
							}
						}
					}
				}
			}
		}
		err := c.graphql(ctx, fmt.Sprintf("read the review threads of #%d", number), threadsQuery,
			map[string]any{"owner": c.repo.Owner, "name": c.repo.Name, "number": number, "after": after}, &data)
		if err != nil {
			return nil, err
		}
		pr := data.Repository.PullRequest
		if pr == nil {
			return nil, &Error{Kind: NotFound, Op: fmt.Sprintf("read the review threads of #%d", number), Message: "no such pull request"}
		}
		for _, n := range pr.ReviewThreads.Nodes {
			t := Thread{ID: n.ID, Resolved: n.IsResolved, Outdated: n.IsOutdated, Path: n.Path, Line: n.Line}
			for _, cm := range n.Comments.Nodes {
				x := Comment{ID: cm.DatabaseID, ThreadID: n.ID, Body: cm.Body, Association: cm.AuthorAssociation,
					URL: cm.URL, Path: n.Path, Line: n.Line}
				if cm.Author != nil {
					x.Author = cm.Author.Login
					x.Bot = cm.Author.Typename == "Bot" || strings.HasSuffix(cm.Author.Login, "[bot]")
				}
				if cm.PullRequestReview != nil {
					x.ReviewID = cm.PullRequestReview.DatabaseID
				}
				t.Comments = append(t.Comments, x)
			}
			out = append(out, t)
		}
		if !pr.ReviewThreads.PageInfo.HasNextPage {
			return out, nil
		}
		after = pr.ReviewThreads.PageInfo.EndCursor
	}
	return out, nil
}

// Batch is the comments of one submitted review that a run acts on as one
// fix task.
type Batch struct {
	ReviewID int64     `json:"reviewId"`
	Comments []Comment `json:"comments"`
}

// Filter says whose comments a run acts on.
type Filter struct {
	// Consumed are the comment ids already acted on (the run's log).
	Consumed map[int64]bool
	// Bots are bot logins whose comments count (config); others never do.
	Bots []string
	// Self is the login of the token's user: its own comments never count.
	Self string
}

// writeAccess are the author associations of people who may steer a run.
var writeAccess = map[string]bool{"OWNER": true, "MEMBER": true, "COLLABORATOR": true}

// Actionable picks the comments a run acts on — in unresolved threads, by
// authors with write access (or listed bots), not apserver's own, not
// consumed before — and batches them by submitted review, in the order
// the reviews and comments came. Pure: the same threads and filter give
// the same batches.
func Actionable(threads []Thread, f Filter) []Batch {
	bots := map[string]bool{}
	for _, b := range f.Bots {
		bots[strings.ToLower(b)] = true
	}
	byReview := map[int64]*Batch{}
	var order []int64
	for _, t := range threads {
		if t.Resolved {
			continue
		}
		for _, c := range t.Comments {
			switch {
			case f.Consumed[c.ID]:
			case strings.Contains(c.Body, ReplyMarker):
			case f.Self != "" && strings.EqualFold(c.Author, f.Self):
			case c.Bot && !bots[strings.ToLower(c.Author)]:
			case !c.Bot && !writeAccess[c.Association]:
			default:
				b, ok := byReview[c.ReviewID]
				if !ok {
					b = &Batch{ReviewID: c.ReviewID}
					byReview[c.ReviewID] = b
					order = append(order, c.ReviewID)
				}
				b.Comments = append(b.Comments, c)
			}
		}
	}
	out := make([]Batch, 0, len(order))
	for _, id := range order {
		b := *byReview[id]
		sort.SliceStable(b.Comments, func(i, j int) bool { return b.Comments[i].ID < b.Comments[j].ID })
		out = append(out, b)
	}
	return out
}

// Reply answers a review comment in its thread; the body gets the marker.
func (c *Client) Reply(ctx context.Context, number int, commentID int64, body string) error {
	_, _, err := c.gh.PullRequests.CreateCommentInReplyTo(ctx, c.repo.Owner, c.repo.Name, number, body+"\n\n"+ReplyMarker, commentID)
	return classify(fmt.Sprintf("reply to comment %d on #%d", commentID, number), err)
}

// Resolve resolves a review thread (GraphQL).
func (c *Client) Resolve(ctx context.Context, threadID string) error {
	const q = `mutation($id: ID!) { resolveReviewThread(input: {threadId: $id}) { thread { isResolved } } }`
	return c.graphql(ctx, "resolve review thread "+threadID, q, map[string]any{"id": threadID}, nil)
}
