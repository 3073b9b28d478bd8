// Package github is apserver's adapter to GitHub: it translates what a run
// needs — a draft pull request for its branch, the checks of a head commit,
// the review threads to answer, a merge guarded by the head SHA — into
// GitHub's REST API (google/go-github) and GraphQL API, and GitHub's answers
// and errors back into plain Go values. It decides nothing: whether to push,
// to open, to merge or to wait is the run's (runs, runner); this package only
// says what GitHub answered.
//
// Endpoints: github.com's REST API is https://api.github.com/ and its
// GraphQL https://api.github.com/graphql; GitHub Enterprise Server's are
// https://HOST/api/v3/ and https://HOST/api/graphql. Remote reads the host,
// owner and repository from a git remote URL (https, ssh or scp-like);
// an explicit API URL (config `[github] api_url`) wins, which is how tests
// point a run at a fake on 127.0.0.1.
//
// Errors are *Error with a Kind a caller branches on: RateLimited (primary:
// wait until Reset; secondary: wait RetryAfter), Unauthorized (a missing,
// expired or under-scoped token), NotFound, Conflict (the head moved),
// MergeRefused (branch protection, with GitHub's reason), Network, and
// GraphQL (errors inside an HTTP 200). The token never appears in an error,
// a log line or a PR body.
//
// The package imports go-github and the standard library only; it must not
// import session, runner, server or store.
package github
