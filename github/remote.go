package github

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Repo is a repository on a GitHub host with the endpoints of its API.
type Repo struct {
	Host  string // github.com, or a GitHub Enterprise Server host
	Owner string
	Name  string
	// REST is the REST API's base URL, ending in "/": https://api.github.com/
	// or https://HOST/api/v3/.
	REST string
	// GraphQL is the GraphQL endpoint: https://api.github.com/graphql or
	// https://HOST/api/graphql.
	GraphQL string
}

// FullName is owner/name.
func (r Repo) FullName() string { return r.Owner + "/" + r.Name }

// ErrNotGitHub says a remote URL names no repository on a GitHub host.
var ErrNotGitHub = errors.New("not a GitHub remote")

// ParseRemote reads a git remote URL — https://github.com/o/r(.git),
// git@github.com:o/r.git, ssh://git@host[:port]/o/r.git, https://HOST/o/r —
// into the repository and its API endpoints. A host other than github.com
// is taken as GitHub Enterprise Server. apiURL, when not empty, is the REST
// base to use instead (config `[github] api_url`); the GraphQL endpoint is
// derived from it the way GitHub lays them out.
func ParseRemote(remote, apiURL string) (Repo, error) {
	host, path, err := splitRemote(strings.TrimSpace(remote))
	if err != nil {
		return Repo{}, err
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	parts := strings.Split(path, "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return Repo{}, fmt.Errorf("%w: %q does not name owner/repository", ErrNotGitHub, remote)
	}
	r := Repo{Host: strings.ToLower(host), Owner: parts[0], Name: parts[1]}
	if apiURL != "" {
		rest, gql, err := Endpoints(apiURL)
		if err != nil {
			return Repo{}, err
		}
		r.REST, r.GraphQL = rest, gql
		return r, nil
	}
	if r.Host == "github.com" {
		r.REST, r.GraphQL = "https://api.github.com/", "https://api.github.com/graphql"
	} else {
		r.REST, r.GraphQL = "https://"+r.Host+"/api/v3/", "https://"+r.Host+"/api/graphql"
	}
	return r, nil
}

// Endpoints derives the REST base and the GraphQL endpoint from an API URL:
// https://api.github.com[/] → …/ and …/graphql; http(s)://HOST[/api/v3][/]
// → HOST/api/v3/ and HOST/api/graphql.
func Endpoints(apiURL string) (rest, graphql string, err error) {
	u, err := url.Parse(apiURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", fmt.Errorf("github api_url %q is not an http(s) URL with a host", apiURL)
	}
	if u.Host == "api.github.com" {
		return "https://api.github.com/", "https://api.github.com/graphql", nil
	}
	base := strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/api/v3")
	root := u.Scheme + "://" + u.Host + base
	return root + "/api/v3/", root + "/api/graphql", nil
}

// splitRemote returns the host and the path of a remote URL.
func splitRemote(remote string) (host, path string, err error) {
	if remote == "" {
		return "", "", fmt.Errorf("%w: no remote URL", ErrNotGitHub)
	}
	if strings.Contains(remote, "://") {
		u, err := url.Parse(remote)
		if err != nil {
			return "", "", fmt.Errorf("%w: %v", ErrNotGitHub, err)
		}
		switch u.Scheme {
		case "https", "http", "ssh", "git":
		default:
			return "", "", fmt.Errorf("%w: %q is a %s remote", ErrNotGitHub, redact(remote), u.Scheme)
		}
		if u.Hostname() == "" {
			return "", "", fmt.Errorf("%w: %q has no host", ErrNotGitHub, redact(remote))
		}
		return u.Hostname(), u.Path, nil
	}
	// scp-like: [user@]host:owner/repo.git
	at := strings.LastIndex(remote, "@")
	colon := strings.Index(remote, ":")
	if colon <= at+1 || strings.HasPrefix(remote, "/") || strings.HasPrefix(remote, ".") {
		return "", "", fmt.Errorf("%w: %q is a local path", ErrNotGitHub, remote)
	}
	return remote[at+1 : colon], remote[colon+1:], nil
}

// redact drops the user info of a URL, which may hold a token
// (https://x-access-token:TOKEN@github.com/o/r).
func redact(remote string) string {
	u, err := url.Parse(remote)
	if err != nil || u.User == nil {
		return remote
	}
	u.User = nil
	return u.String()
}

// Token returns the token to use and the variable it came from: tokenEnv
// (config `[github] token_env`) when set, else GITHUB_TOKEN, else GH_TOKEN.
// "" when none holds one.
func Token(getenv func(string) string, tokenEnv string) (token, from string) {
	names := []string{"GITHUB_TOKEN", "GH_TOKEN"}
	if tokenEnv != "" {
		names = []string{tokenEnv}
	}
	for _, n := range names {
		if v := strings.TrimSpace(getenv(n)); v != "" {
			return v, n
		}
	}
	return "", ""
}
