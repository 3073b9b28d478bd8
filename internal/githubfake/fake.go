// Package githubfake is a stateful fake of the parts of GitHub that runs
// use, on httptest: REST under /api/v3/ (pull requests, reviewers, labels,
// merges, check runs and their annotations, commit statuses, job logs,
// review comments, refs) and GraphQL at /api/graphql (ready for review,
// review threads, resolving a thread, auto-merge). A repository's branch
// heads can come from a real (bare) git repository, so a run that pushes
// with the git CLI sees its commits as the pull request's head. Tests
// inject rate limits, bad tokens and server errors.
//
// Only tests and test helpers import it; it imports the standard library
// only.
package githubfake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server is the fake. Its zero state has no repositories: add them with
// AddRepo. Every field is guarded by mu.
type Server struct {
	*httptest.Server
	// Token is the token requests must carry ("" accepts any).
	Token string

	mu       sync.Mutex
	repos    map[string]*Repo
	nextID   int64
	failures []Failure
	requests []string // "METHOD path" of every request, in order
}

// Repo is one repository's state.
type Repo struct {
	Owner, Name string
	// GitDir, when set, is a git repository whose refs/heads/* are the
	// branches' heads; otherwise Heads holds them.
	GitDir string
	Heads  map[string]string
	// Protected makes every merge answer 405 with ProtectedReason.
	Protected       bool
	ProtectedReason string
	// RequireAutoMerge makes a direct merge answer 405 (the repository's
	// rules want auto-merge); enabling auto-merge then merges at once.
	RequireAutoMerge bool
	// AutoChecks, when set, gives the check runs of a commit the first
	// time its checks are asked for and it has none: n counts the commits
	// asked so far (1 for the first), so a test says "the first head
	// fails, the second passes" before the SHAs exist.
	AutoChecks func(sha string, n int) []CheckRun
	autoSeen   int

	PRs      []*PR
	Checks   map[string][]*CheckRun // by head SHA
	Statuses map[string][]Status    // by head SHA
	Logs     map[int64]string       // job logs by check run id
	Deleted  []string               // branches deleted
}

// PR is a pull request.
type PR struct {
	Number                int
	NodeID                string
	Title, Body           string
	Head, Base            string
	Draft, Merged, Closed bool
	OpenedDraft           bool // opened as a draft
	MergeSHA              string
	MergedHead            string // the head SHA that was merged
	MergeMethod           string
	AutoMerge             string // the method auto-merge was enabled with
	Reviewers, Teams      []string
	Labels                []string
	Threads               []*Thread
	Edits                 int // body edits
}

// Thread is a review thread.
type Thread struct {
	ID       string
	Resolved bool
	Outdated bool
	Path     string
	Line     int
	Comments []*Comment
}

// Comment is a review comment.
type Comment struct {
	ID          int64
	ReviewID    int64
	Author      string
	Bot         bool
	Association string
	Body        string
	InReplyTo   int64
}

// CheckRun is a check run of a commit.
type CheckRun struct {
	ID          int64
	Name        string
	Status      string // queued | in_progress | completed
	Conclusion  string
	App         string // "github-actions" for a job with a log
	Summary     string
	Annotations []Annotation
}

// Annotation is a check run's annotation.
type Annotation struct {
	Path    string
	Line    int
	Level   string
	Message string
}

// Status is a commit status.
type Status struct {
	Context, State, Description string
}

// Failure is an injected answer for the next request whose "METHOD path"
// matches Match (a regexp; "" matches any).
type Failure struct {
	Match string
	// Kind: "primary" (403, X-RateLimit-Remaining 0, reset at Reset),
	// "secondary" (403, Retry-After), "badToken" (401), "scopes" (403 with
	// X-OAuth-Scopes), "server" (502), "graphqlError" (200 with errors).
	Kind       string
	Reset      time.Time
	RetryAfter time.Duration
	Times      int // how many requests it answers; 0 means 1
}

// New starts a fake.
func New() *Server {
	s := &Server{repos: map[string]*Repo{}, nextID: 1000}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// APIURL is the REST base, as a GitHub Enterprise Server's: URL/api/v3/.
func (s *Server) APIURL() string { return s.URL + "/api/v3/" }

// AddRepo adds a repository and returns it; change it under Do.
func (s *Server) AddRepo(owner, name string) *Repo {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &Repo{Owner: owner, Name: name, Heads: map[string]string{}, Checks: map[string][]*CheckRun{},
		Statuses: map[string][]Status{}, Logs: map[int64]string{}}
	s.repos[owner+"/"+name] = r
	return r
}

// Do runs f with the fake's state locked: read or change it there.
func (s *Server) Do(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

// Fail injects a failure.
func (s *Server) Fail(f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Times == 0 {
		f.Times = 1
	}
	s.failures = append(s.failures, f)
}

// Requests are the requests served so far ("METHOD path").
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// NewID is a fresh id for a check run, comment or review.
func (s *Server) NewID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	return s.nextID
}

// NewIDLocked is NewID for a caller that holds the lock (inside Do).
func (s *Server) NewIDLocked() int64 {
	s.nextID++
	return s.nextID
}

// AddCheck adds a check run to sha (under the lock).
func (r *Repo) AddCheck(id int64, sha string, c CheckRun) *CheckRun {
	c.ID = id
	if c.Status == "" {
		c.Status = "completed"
	}
	cr := &c
	r.Checks[sha] = append(r.Checks[sha], cr)
	return cr
}

// PR returns the pull request with this number, or nil (under the lock).
func (r *Repo) PR(n int) *PR {
	for _, p := range r.PRs {
		if p.Number == n {
			return p
		}
	}
	return nil
}

// AddThread opens a review thread on pr with its first comment (under the
// lock); ids come from the caller (NewID before Do).
func (p *PR) AddThread(threadNum int64, path string, line int, c Comment) *Thread {
	t := &Thread{ID: fmt.Sprintf("PRRT_%d", threadNum), Path: path, Line: line, Comments: []*Comment{&c}}
	p.Threads = append(p.Threads, t)
	return t
}

// Head is the head SHA of branch ("" when there is none).
func (r *Repo) Head(branch string) string {
	if r.GitDir != "" {
		out, err := exec.Command("git", "--git-dir", r.GitDir, "rev-parse", "--verify", "-q", "refs/heads/"+branch).Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	return r.Heads[branch]
}

func (s *Server) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	key := req.Method + " " + req.URL.Path
	s.requests = append(s.requests, key)
	if strings.HasPrefix(req.URL.Path, "/logs/") {
		id, _ := strconv.ParseInt(strings.TrimPrefix(req.URL.Path, "/logs/"), 10, 64)
		for _, r := range s.repos {
			if l, ok := r.Logs[id]; ok {
				io.WriteString(w, l)
				return
			}
		}
		http.NotFound(w, req)
		return
	}
	if s.Token != "" && req.Header.Get("Authorization") != "Bearer "+s.Token {
		writeJSON(w, 401, map[string]any{"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"})
		return
	}
	if s.inject(w, key) {
		return
	}
	switch {
	case req.URL.Path == "/api/graphql":
		s.graphql(w, body)
	case strings.HasPrefix(req.URL.Path, "/api/v3/repos/"):
		s.rest(w, req, strings.TrimPrefix(req.URL.Path, "/api/v3/repos/"), body)
	default:
		writeJSON(w, 404, map[string]any{"message": "Not Found"})
	}
}

// inject answers with the first failure that matches key.
func (s *Server) inject(w http.ResponseWriter, key string) bool {
	for i, f := range s.failures {
		if f.Match != "" && !regexp.MustCompile(f.Match).MatchString(key) {
			continue
		}
		if s.failures[i].Times--; s.failures[i].Times <= 0 {
			s.failures = append(s.failures[:i], s.failures[i+1:]...)
		}
		switch f.Kind {
		case "primary":
			w.Header().Set("X-RateLimit-Limit", "5000")
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(f.Reset.Unix(), 10))
			writeJSON(w, 403, map[string]any{"message": "API rate limit exceeded", "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"})
		case "secondary":
			w.Header().Set("Retry-After", strconv.Itoa(int(f.RetryAfter.Seconds())))
			writeJSON(w, 403, map[string]any{"message": "You have exceeded a secondary rate limit.", "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"})
		case "badToken":
			writeJSON(w, 401, map[string]any{"message": "Bad credentials"})
		case "scopes":
			w.Header().Set("X-OAuth-Scopes", "read:org")
			writeJSON(w, 403, map[string]any{"message": "Resource not accessible by personal access token"})
		case "server":
			writeJSON(w, 502, map[string]any{"message": "Server Error"})
		case "graphqlError":
			writeJSON(w, 200, map[string]any{"data": nil, "errors": []any{map[string]any{"type": "UNPROCESSABLE", "message": "Something went wrong while executing your query."}}})
		default:
			panic("githubfake: unknown failure kind " + f.Kind)
		}
		return true
	}
	return false
}

var (
	rePulls     = regexp.MustCompile(`^([^/]+)/([^/]+)/pulls$`)
	rePull      = regexp.MustCompile(`^([^/]+)/([^/]+)/pulls/(\d+)$`)
	reMerge     = regexp.MustCompile(`^([^/]+)/([^/]+)/pulls/(\d+)/merge$`)
	reReviewers = regexp.MustCompile(`^([^/]+)/([^/]+)/pulls/(\d+)/requested_reviewers$`)
	reComments  = regexp.MustCompile(`^([^/]+)/([^/]+)/pulls/(\d+)/comments$`)
	reLabels    = regexp.MustCompile(`^([^/]+)/([^/]+)/issues/(\d+)/labels$`)
	reCheckRuns = regexp.MustCompile(`^([^/]+)/([^/]+)/commits/([^/]+)/check-runs$`)
	reStatus    = regexp.MustCompile(`^([^/]+)/([^/]+)/commits/([^/]+)/status$`)
	reAnnots    = regexp.MustCompile(`^([^/]+)/([^/]+)/check-runs/(\d+)/annotations$`)
	reJobLogs   = regexp.MustCompile(`^([^/]+)/([^/]+)/actions/jobs/(\d+)/logs$`)
	reRef       = regexp.MustCompile(`^([^/]+)/([^/]+)/git/refs/heads/(.+)$`)
)

func (s *Server) rest(w http.ResponseWriter, req *http.Request, path string, body []byte) {
	var in map[string]any
	_ = json.Unmarshal(body, &in)
	repoOf := func(m []string) *Repo { return s.repos[m[1]+"/"+m[2]] }
	num := func(m []string) int { n, _ := strconv.Atoi(m[3]); return n }
	var m []string
	match := func(re *regexp.Regexp) bool { m = re.FindStringSubmatch(path); return m != nil }
	switch {
	case match(rePulls):
		r := repoOf(m)
		if r == nil {
			notFound(w)
			return
		}
		if req.Method == http.MethodGet {
			head := req.URL.Query().Get("head")
			state := req.URL.Query().Get("state")
			out := []any{}
			for _, p := range r.PRs {
				if head != "" && r.Owner+":"+p.Head != head {
					continue
				}
				if state == "open" && (p.Closed || p.Merged) {
					continue
				}
				out = append(out, s.prJSON(r, p))
			}
			writeJSON(w, 200, out)
			return
		}
		head, _ := in["head"].(string)
		for _, p := range r.PRs {
			if p.Head == head && !p.Closed && !p.Merged {
				writeJSON(w, 422, map[string]any{"message": "Validation Failed", "errors": []any{map[string]any{"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for " + r.Owner + ":" + head + "."}}})
				return
			}
		}
		if r.Head(head) == "" {
			writeJSON(w, 422, map[string]any{"message": "Validation Failed", "errors": []any{map[string]any{"resource": "PullRequest", "field": "head", "code": "invalid"}}})
			return
		}
		p := &PR{Number: len(r.PRs) + 1, Head: head}
		p.NodeID = fmt.Sprintf("PR_%s_%d", r.Name, p.Number)
		p.Title, _ = in["title"].(string)
		p.Body, _ = in["body"].(string)
		p.Base, _ = in["base"].(string)
		p.Draft, _ = in["draft"].(bool)
		p.OpenedDraft = p.Draft
		r.PRs = append(r.PRs, p)
		writeJSON(w, 201, s.prJSON(r, p))
	case match(reMerge):
		r := repoOf(m)
		p := r.PR(num(m))
		if p == nil {
			notFound(w)
			return
		}
		sha, _ := in["sha"].(string)
		method, _ := in["merge_method"].(string)
		switch {
		case p.Merged:
			writeJSON(w, 405, map[string]any{"message": "Pull Request is not mergeable"})
		case r.Protected:
			writeJSON(w, 405, map[string]any{"message": r.ProtectedReason})
		case r.RequireAutoMerge:
			writeJSON(w, 405, map[string]any{"message": "Repository rule violations found: changes must be made through the merge queue"})
		case p.Draft:
			writeJSON(w, 405, map[string]any{"message": "Pull Request is still a draft"})
		case sha != "" && sha != r.Head(p.Head):
			writeJSON(w, 409, map[string]any{"message": "Head branch was modified. Review and try the merge again."})
		default:
			s.merge(r, p, method)
			writeJSON(w, 200, map[string]any{"merged": true, "sha": p.MergeSHA, "message": "Pull Request successfully merged"})
		}
	case match(rePull):
		r := repoOf(m)
		p := r.PR(num(m))
		if p == nil {
			notFound(w)
			return
		}
		if req.Method == http.MethodPatch {
			if b, ok := in["body"].(string); ok {
				p.Body = b
				p.Edits++
			}
			if st, ok := in["state"].(string); ok {
				p.Closed = st == "closed"
			}
		}
		writeJSON(w, 200, s.prJSON(r, p))
	case match(reReviewers):
		p := repoOf(m).PR(num(m))
		for _, v := range in["reviewers"].([]any) {
			p.Reviewers = append(p.Reviewers, v.(string))
		}
		if ts, ok := in["team_reviewers"].([]any); ok {
			for _, v := range ts {
				p.Teams = append(p.Teams, v.(string))
			}
		}
		writeJSON(w, 201, s.prJSON(repoOf(m), p))
	case match(reLabels):
		p := repoOf(m).PR(num(m))
		out := []any{}
		var labels []string
		if err := json.Unmarshal(body, &labels); err != nil {
			var obj struct{ Labels []string }
			_ = json.Unmarshal(body, &obj)
			labels = obj.Labels
		}
		p.Labels = append(p.Labels, labels...)
		for _, l := range p.Labels {
			out = append(out, map[string]any{"name": l})
		}
		writeJSON(w, 200, out)
	case match(reComments):
		p := repoOf(m).PR(num(m))
		to := int64(in["in_reply_to"].(float64))
		for _, t := range p.Threads {
			for _, c := range t.Comments {
				if c.ID == to {
					s.nextID++
					nc := &Comment{ID: s.nextID, Author: "apserver-bot", Association: "COLLABORATOR", Body: in["body"].(string), InReplyTo: to}
					t.Comments = append(t.Comments, nc)
					writeJSON(w, 201, map[string]any{"id": nc.ID, "body": nc.Body, "in_reply_to_id": to})
					return
				}
			}
		}
		notFound(w)
	case match(reCheckRuns):
		r := repoOf(m)
		if len(r.Checks[m[3]]) == 0 && r.AutoChecks != nil {
			r.autoSeen++
			for _, c := range r.AutoChecks(m[3], r.autoSeen) {
				s.nextID++
				r.AddCheck(s.nextID, m[3], c)
			}
		}
		runs := []any{}
		for _, c := range r.Checks[m[3]] {
			cr := map[string]any{"id": c.ID, "name": c.Name, "status": c.Status, "html_url": fmt.Sprintf("%s/checks/%d", s.URL, c.ID),
				"output": map[string]any{"summary": c.Summary}, "app": map[string]any{"slug": c.App}}
			if c.Status == "completed" {
				cr["conclusion"] = c.Conclusion
			}
			runs = append(runs, cr)
		}
		writeJSON(w, 200, map[string]any{"total_count": len(runs), "check_runs": runs})
	case match(reStatus):
		r := repoOf(m)
		sts := []any{}
		state := "success"
		for _, st := range r.Statuses[m[3]] {
			sts = append(sts, map[string]any{"context": st.Context, "state": st.State, "description": st.Description})
			if st.State != "success" {
				state = st.State
			}
		}
		writeJSON(w, 200, map[string]any{"state": state, "statuses": sts, "sha": m[3]})
	case match(reAnnots):
		r := repoOf(m)
		id, _ := strconv.ParseInt(m[3], 10, 64)
		out := []any{}
		for _, cs := range r.Checks {
			for _, c := range cs {
				if c.ID == id {
					for _, a := range c.Annotations {
						out = append(out, map[string]any{"path": a.Path, "start_line": a.Line, "annotation_level": a.Level, "message": a.Message})
					}
				}
			}
		}
		writeJSON(w, 200, out)
	case match(reJobLogs):
		w.Header().Set("Location", s.URL+"/logs/"+m[3])
		w.WriteHeader(http.StatusFound)
	case match(reRef):
		r := repoOf(m)
		if req.Method == http.MethodDelete {
			if r.Head(m[3]) == "" {
				writeJSON(w, 422, map[string]any{"message": "Reference does not exist"})
				return
			}
			r.Deleted = append(r.Deleted, m[3])
			delete(r.Heads, m[3])
			if r.GitDir != "" {
				_ = exec.Command("git", "--git-dir", r.GitDir, "update-ref", "-d", "refs/heads/"+m[3]).Run()
			}
			w.WriteHeader(204)
			return
		}
		notFound(w)
	default:
		notFound(w)
	}
}

// merge merges p: the base moves to a merge commit made in GitDir when
// there is one (so that the base branch really has the change), or to a
// made-up SHA.
func (s *Server) merge(r *Repo, p *PR, method string) {
	head := r.Head(p.Head)
	p.Merged, p.MergedHead, p.MergeMethod = true, head, method
	p.MergeSHA = fmt.Sprintf("%040x", s.nextID)
	s.nextID++
	if r.GitDir != "" {
		// A fast-forward of the base to the head stands in for GitHub's merge.
		if err := exec.Command("git", "--git-dir", r.GitDir, "update-ref", "refs/heads/"+p.Base, head).Run(); err == nil {
			p.MergeSHA = head
		}
	} else {
		r.Heads[p.Base] = p.MergeSHA
	}
}

func (s *Server) prJSON(r *Repo, p *PR) map[string]any {
	state := "open"
	if p.Closed || p.Merged {
		state = "closed"
	}
	out := map[string]any{
		"number": p.Number, "node_id": p.NodeID, "state": state, "draft": p.Draft, "merged": p.Merged,
		"title": p.Title, "body": p.Body, "html_url": fmt.Sprintf("%s/%s/%s/pull/%d", s.URL, r.Owner, r.Name, p.Number),
		"head": map[string]any{"ref": p.Head, "sha": r.Head(p.Head)},
		"base": map[string]any{"ref": p.Base},
	}
	if p.Merged {
		out["merge_commit_sha"] = p.MergeSHA
	}
	return out
}

// graphql answers the operations the adapter sends, told apart by the
// field they name.
func (s *Server) graphql(w http.ResponseWriter, body []byte) {
	var q struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if err := json.Unmarshal(body, &q); err != nil {
		writeJSON(w, 400, map[string]any{"message": "Problems parsing JSON"})
		return
	}
	v := q.Variables
	findPR := func(nodeID string) (*Repo, *PR) {
		for _, r := range s.repos {
			for _, p := range r.PRs {
				if p.NodeID == nodeID {
					return r, p
				}
			}
		}
		return nil, nil
	}
	gqlErr := func(typ, msg string) {
		writeJSON(w, 200, map[string]any{"data": nil, "errors": []any{map[string]any{"type": typ, "message": msg}}})
	}
	switch {
	case strings.Contains(q.Query, "markPullRequestReadyForReview"):
		_, p := findPR(str(v["id"]))
		if p == nil {
			gqlErr("NOT_FOUND", "Could not resolve to a node with the global id of '"+str(v["id"])+"'")
			return
		}
		p.Draft = false
		writeJSON(w, 200, map[string]any{"data": map[string]any{"markPullRequestReadyForReview": map[string]any{"pullRequest": map[string]any{"isDraft": false}}}})
	case strings.Contains(q.Query, "enablePullRequestAutoMerge"):
		r, p := findPR(str(v["id"]))
		if p == nil {
			gqlErr("NOT_FOUND", "Could not resolve to a node")
			return
		}
		if sha := str(v["sha"]); sha != "" && sha != r.Head(p.Head) {
			gqlErr("UNPROCESSABLE", "Head sha didn't match expected head oid")
			return
		}
		p.AutoMerge = strings.ToLower(str(v["method"]))
		if !r.Protected && !p.Draft {
			s.merge(r, p, p.AutoMerge)
		}
		writeJSON(w, 200, map[string]any{"data": map[string]any{"enablePullRequestAutoMerge": map[string]any{"pullRequest": map[string]any{"number": p.Number}}}})
	case strings.Contains(q.Query, "resolveReviewThread"):
		for _, r := range s.repos {
			for _, p := range r.PRs {
				for _, t := range p.Threads {
					if t.ID == str(v["id"]) {
						t.Resolved = true
						writeJSON(w, 200, map[string]any{"data": map[string]any{"resolveReviewThread": map[string]any{"thread": map[string]any{"isResolved": true}}}})
						return
					}
				}
			}
		}
		gqlErr("NOT_FOUND", "Could not resolve to a node")
	case strings.Contains(q.Query, "reviewThreads"):
		r := s.repos[str(v["owner"])+"/"+str(v["name"])]
		if r == nil {
			gqlErr("NOT_FOUND", "Could not resolve to a Repository")
			return
		}
		p := r.PR(int(v["number"].(float64)))
		if p == nil {
			writeJSON(w, 200, map[string]any{"data": map[string]any{"repository": map[string]any{"pullRequest": nil}}})
			return
		}
		nodes := []any{}
		for _, t := range p.Threads {
			cs := []any{}
			for _, c := range t.Comments {
				typ := "User"
				if c.Bot {
					typ = "Bot"
				}
				cs = append(cs, map[string]any{"databaseId": c.ID, "body": c.Body, "authorAssociation": c.Association,
					"author": map[string]any{"__typename": typ, "login": c.Author}, "pullRequestReview": map[string]any{"databaseId": c.ReviewID}})
			}
			nodes = append(nodes, map[string]any{"id": t.ID, "isResolved": t.Resolved, "isOutdated": t.Outdated, "path": t.Path, "line": t.Line,
				"comments": map[string]any{"nodes": cs}})
		}
		writeJSON(w, 200, map[string]any{"data": map[string]any{"repository": map[string]any{"pullRequest": map[string]any{
			"reviewThreads": map[string]any{"pageInfo": map[string]any{"hasNextPage": false, "endCursor": ""}, "nodes": nodes}}}}})
	default:
		gqlErr("UNKNOWN", "githubfake: an operation it does not know")
	}
}

func str(v any) string { s, _ := v.(string); return s }

func notFound(w http.ResponseWriter) {
	writeJSON(w, 404, map[string]any{"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
