package github

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	gh "github.com/google/go-github/v60/github"
)

// Client talks to one repository's GitHub. Safe for concurrent use.
type Client struct {
	repo Repo
	gh   *gh.Client
	hc   *http.Client // with the token: for GraphQL and job logs
	now  func() time.Time
}

// New returns a client for repo that authenticates with token. A nil hc
// means http.DefaultClient's transport. The token is sent as a bearer
// token and appears nowhere else.
func New(repo Repo, token string, hc *http.Client) (*Client, error) {
	if token == "" {
		return nil, &Error{Kind: Unauthorized, Op: "connect", Message: "no token: set GITHUB_TOKEN or GH_TOKEN, or name a variable with [github] token_env"}
	}
	base := http.DefaultTransport
	if hc != nil && hc.Transport != nil {
		base = hc.Transport
	}
	authed := &http.Client{Transport: bearer{token: token, next: base}}
	if hc != nil {
		authed.Timeout = hc.Timeout
	}
	c := gh.NewClient(authed)
	u, err := url.Parse(repo.REST)
	if err != nil {
		return nil, fmt.Errorf("github REST URL %q: %w", repo.REST, err)
	}
	c.BaseURL = u
	c.UploadURL = u
	return &Client{repo: repo, gh: c, hc: authed, now: time.Now}, nil
}

// Repo is the repository the client works on.
func (c *Client) Repo() Repo { return c.repo }

// bearer adds the token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// Kind is what a caller does about an error.
type Kind int

const (
	Other        Kind = iota
	RateLimited       // wait: until Reset (primary) or RetryAfter (secondary)
	Unauthorized      // a missing, expired or under-scoped token: a human fixes it
	NotFound          // the repository, PR or ref does not exist (or the token cannot see it)
	Conflict          // the head moved, or the PR exists already
	MergeRefused      // GitHub will not merge: branch protection, checks, conflicts
	Network           // GitHub could not be reached: try again later
	GraphQL           // errors inside an HTTP 200 GraphQL answer
	Invalid           // 422: GitHub refused the request as invalid
)

func (k Kind) String() string {
	return [...]string{"other", "rateLimited", "unauthorized", "notFound", "conflict", "mergeRefused", "network", "graphql", "invalid"}[k]
}

// Error is GitHub's answer as something a run can act on.
type Error struct {
	Kind    Kind
	Op      string // what was being done: "create pull request", "merge #12", …
	Status  int    // the HTTP status, 0 when none
	Message string // GitHub's message, or ours
	// Reset is when a primary rate limit resets; RetryAfter how long a
	// secondary one says to wait. Zero when not a rate limit.
	Reset      time.Time
	RetryAfter time.Duration
	// Scopes are the token's OAuth scopes GitHub reported, when it did
	// (X-OAuth-Scopes), for an under-scoped token's message.
	Scopes string
}

func (e *Error) Error() string {
	s := "github: " + e.Op + ": "
	if e.Status != 0 {
		s += fmt.Sprintf("HTTP %d: ", e.Status)
	}
	s += e.Message
	switch {
	case e.Kind == RateLimited && !e.Reset.IsZero():
		s += " (rate limit resets at " + e.Reset.UTC().Format(time.RFC3339) + ")"
	case e.Kind == RateLimited && e.RetryAfter > 0:
		s += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	case e.Kind == Unauthorized && e.Scopes != "":
		s += " (the token's scopes: " + e.Scopes + "; a run needs repo, or contents, pull_requests and checks read/write)"
	}
	return s
}

// IsKind reports whether err is an *Error of kind k.
func IsKind(err error, k Kind) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == k
}

// Wait is how long to wait before trying again after err, from now; 0 when
// err is no rate limit or the limit has already reset.
func Wait(err error, now time.Time) time.Duration {
	var e *Error
	if !errors.As(err, &e) || e.Kind != RateLimited {
		return 0
	}
	if e.RetryAfter > 0 {
		return e.RetryAfter
	}
	if d := e.Reset.Sub(now); d > 0 {
		return d
	}
	return 0
}

// classify turns go-github's and net/http's errors into an *Error.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	if ctxErr := contextError(err); ctxErr != nil {
		return ctxErr
	}
	var rl *gh.RateLimitError
	if errors.As(err, &rl) {
		return &Error{Kind: RateLimited, Op: op, Status: status(rl.Response), Message: rl.Message, Reset: rl.Rate.Reset.Time}
	}
	var ab *gh.AbuseRateLimitError
	if errors.As(err, &ab) {
		e := &Error{Kind: RateLimited, Op: op, Status: status(ab.Response), Message: ab.Message, RetryAfter: time.Minute}
		if ab.RetryAfter != nil {
			e.RetryAfter = *ab.RetryAfter
		}
		return e
	}
	var er *gh.ErrorResponse
	if errors.As(err, &er) {
		e := &Error{Op: op, Status: status(er.Response), Message: er.Message}
		for _, d := range er.Errors {
			if d.Message != "" {
				e.Message += "; " + d.Message
			}
		}
		if e.Message == "" && er.Response != nil {
			e.Message = http.StatusText(er.Response.StatusCode)
		}
		if er.Response != nil {
			e.Scopes = er.Response.Header.Get("X-OAuth-Scopes")
		}
		switch e.Status {
		case http.StatusUnauthorized:
			e.Kind = Unauthorized
		case http.StatusForbidden:
			// Not a rate limit (handled above): permissions.
			e.Kind = Unauthorized
		case http.StatusNotFound:
			e.Kind = NotFound
		case http.StatusConflict:
			e.Kind = Conflict
		case http.StatusMethodNotAllowed:
			e.Kind = MergeRefused
		case http.StatusUnprocessableEntity:
			e.Kind = Invalid
		default:
			if e.Status >= 500 {
				e.Kind = Network
			}
		}
		return e
	}
	var ne net.Error
	var ue *url.Error
	if errors.As(err, &ne) || errors.As(err, &ue) {
		return &Error{Kind: Network, Op: op, Message: err.Error()}
	}
	return &Error{Kind: Other, Op: op, Message: err.Error()}
}

func contextError(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

func status(r *http.Response) int {
	if r == nil {
		return 0
	}
	return r.StatusCode
}

// graphql posts a query with variables and decodes its data into out.
// Errors in the answer (GitHub answers them with HTTP 200) are an *Error
// of kind GraphQL naming the first; a rate limit is RateLimited.
func (c *Client) graphql(ctx context.Context, op, query string, vars map[string]any, out any) error {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.repo.GraphQL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return classify(op, err)
	}
	defer resp.Body.Close()
	if err := gh.CheckResponse(resp); err != nil {
		return classify(op, err)
	}
	var ans struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		return &Error{Kind: GraphQL, Op: op, Message: "the answer is not JSON: " + err.Error()}
	}
	if len(ans.Errors) > 0 {
		e := &Error{Kind: GraphQL, Op: op, Message: ans.Errors[0].Message}
		switch ans.Errors[0].Type {
		case "RATE_LIMITED":
			e.Kind, e.RetryAfter = RateLimited, time.Minute
		case "NOT_FOUND":
			e.Kind = NotFound
		case "FORBIDDEN", "INSUFFICIENT_SCOPES":
			e.Kind = Unauthorized
		}
		if len(ans.Errors) > 1 {
			e.Message += fmt.Sprintf(" (and %d more)", len(ans.Errors)-1)
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(ans.Data, out); err != nil {
		return &Error{Kind: GraphQL, Op: op, Message: "unexpected data: " + err.Error()}
	}
	return nil
}

// tail keeps the last n bytes of s, on a line boundary where there is
// one, with a marker saying what was cut.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := s[len(s)-n:]
	if i := strings.IndexByte(cut, '\n'); i >= 0 && i < len(cut)-1 {
		cut = cut[i+1:]
	}
	return fmt.Sprintf("[… %d earlier bytes of the log cut]\n", len(s)-len(cut)) + cut
}
