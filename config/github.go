package config

import (
	"fmt"
	"regexp"
	"slices"
	"time"
)

// GitHub push modes, merge methods and auto-merge settings of [github].
var (
	GitHubPushModes    = []string{"end", "after_plan"}
	GitHubMergeMethods = []string{"merge", "squash", "rebase"}
	GitHubAutoMerges   = []string{"false", "true", "when_required"}
)

// GitHubConfig is the [github] table (docs/github.md): how a run ends on
// GitHub — its branch pushed, a draft pull request opened, checks and
// review comments fed back, merged under trust.
type GitHubConfig struct {
	// Enabled: nil means on when the run's origin is a GitHub remote (or
	// Repository names one) and a token exists; false never uses GitHub;
	// true says, in the run's state, why GitHub cannot be used.
	Enabled *bool
	// APIURL is the REST base ("" derives it from the remote's host).
	APIURL string
	// TokenEnv names the variable holding the token ("" means GITHUB_TOKEN,
	// then GH_TOKEN). The token itself is never stored.
	TokenEnv string
	// Repository is "owner/name" when origin is not a GitHub URL.
	Repository string
	// Push is "end" (push and open the PR when the tasks are done) or
	// "after_plan" (push and open a draft as soon as the plan is approved).
	Push string
	// Draft opens the pull request as a draft.
	Draft bool
	// Reviewers and TeamReviewers are requested on the pull request;
	// Labels are added to it.
	Reviewers     []string
	TeamReviewers []string
	Labels        []string
	// MergeMethod is merge, squash or rebase.
	MergeMethod string
	// AutoMerge is "false" (merge directly), "true" (always enable
	// GitHub's auto-merge) or "when_required" (when a direct merge is
	// refused because the repository requires auto-merge or a queue).
	AutoMerge string
	// Bots are bot logins whose review comments a run acts on.
	Bots []string
	// DeleteBranchAfterMerge deletes the run's branch on GitHub once
	// merged.
	DeleteBranchAfterMerge bool
	// PollInterval is the first wait between two looks at a pull
	// request's checks and reviews; it doubles per look up to PollMax.
	PollInterval time.Duration
	PollMax      time.Duration
}

func defaultGitHub() GitHubConfig {
	return GitHubConfig{Push: "end", Draft: true, MergeMethod: "merge", AutoMerge: "false",
		DeleteBranchAfterMerge: true, PollInterval: 10 * time.Second, PollMax: 5 * time.Minute}
}

// fileGitHub mirrors [github].
type fileGitHub struct {
	Enabled                *bool    `toml:"enabled"`
	APIURL                 *string  `toml:"api_url"`
	TokenEnv               *string  `toml:"token_env"`
	Repository             *string  `toml:"repository"`
	Push                   *string  `toml:"push"`
	Draft                  *bool    `toml:"draft"`
	Reviewers              []string `toml:"reviewers"`
	TeamReviewers          []string `toml:"team_reviewers"`
	Labels                 []string `toml:"labels"`
	MergeMethod            *string  `toml:"merge_method"`
	AutoMerge              any      `toml:"auto_merge"`
	Bots                   []string `toml:"bots"`
	DeleteBranchAfterMerge *bool    `toml:"delete_branch_after_merge"`
	PollIntervalMs         *int64   `toml:"poll_interval_ms"`
	PollMaxMs              *int64   `toml:"poll_max_ms"`
}

var (
	reRepository = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
	reEnvName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// mergeGitHub applies [github] from a file. may guards what could send
// the token elsewhere (api_url, token_env, repository) and what lets a run
// merge by itself (auto_merge).
func (c *Config) mergeGitHub(f *fileGitHub, bad func(key, format string, args ...any) error, may func(key string, value any, loosens bool) bool) error {
	if f == nil {
		return nil
	}
	g := &c.GitHub
	if f.Enabled != nil && may("github.enabled", *f.Enabled, *f.Enabled) {
		g.Enabled = f.Enabled
	}
	if f.APIURL != nil {
		if *f.APIURL != "" && !reURL.MatchString(*f.APIURL) {
			return bad("github.api_url", "%q is not an http(s) URL", *f.APIURL)
		}
		if may("github.api_url", *f.APIURL, *f.APIURL != g.APIURL) {
			g.APIURL = *f.APIURL
		}
	}
	if f.TokenEnv != nil {
		if *f.TokenEnv != "" && !reEnvName.MatchString(*f.TokenEnv) {
			return bad("github.token_env", "%q is not an environment variable name", *f.TokenEnv)
		}
		if may("github.token_env", *f.TokenEnv, *f.TokenEnv != g.TokenEnv) {
			g.TokenEnv = *f.TokenEnv
		}
	}
	if f.Repository != nil {
		if *f.Repository != "" && !reRepository.MatchString(*f.Repository) {
			return bad("github.repository", "%q is not owner/name", *f.Repository)
		}
		if may("github.repository", *f.Repository, *f.Repository != g.Repository) {
			g.Repository = *f.Repository
		}
	}
	if f.Push != nil {
		if !slices.Contains(GitHubPushModes, *f.Push) {
			return bad("github.push", "%q is not one of %s", *f.Push, quoteAll(GitHubPushModes))
		}
		g.Push = *f.Push
	}
	if f.Draft != nil {
		g.Draft = *f.Draft
	}
	if f.Reviewers != nil {
		g.Reviewers = slices.Clone(f.Reviewers)
	}
	if f.TeamReviewers != nil {
		g.TeamReviewers = slices.Clone(f.TeamReviewers)
	}
	if f.Labels != nil {
		g.Labels = slices.Clone(f.Labels)
	}
	if f.MergeMethod != nil {
		if !slices.Contains(GitHubMergeMethods, *f.MergeMethod) {
			return bad("github.merge_method", "%q is not one of %s", *f.MergeMethod, quoteAll(GitHubMergeMethods))
		}
		g.MergeMethod = *f.MergeMethod
	}
	if f.AutoMerge != nil {
		var v string
		switch a := f.AutoMerge.(type) {
		case bool:
			v = fmt.Sprint(a)
		case string:
			v = a
		}
		if !slices.Contains(GitHubAutoMerges, v) {
			return bad("github.auto_merge", "%v is not false, true or \"when_required\"", f.AutoMerge)
		}
		if may("github.auto_merge", v, v != "false" && g.AutoMerge == "false") {
			g.AutoMerge = v
		}
	}
	if f.Bots != nil && may("github.bots", f.Bots, len(f.Bots) > 0) {
		g.Bots = slices.Clone(f.Bots)
	}
	if f.DeleteBranchAfterMerge != nil {
		g.DeleteBranchAfterMerge = *f.DeleteBranchAfterMerge
	}
	for _, d := range []struct {
		key string
		v   *int64
		dst *time.Duration
	}{{"github.poll_interval_ms", f.PollIntervalMs, &g.PollInterval}, {"github.poll_max_ms", f.PollMaxMs, &g.PollMax}} {
		if d.v == nil {
			continue
		}
		if *d.v <= 0 {
			return bad(d.key, "must be positive")
		}
		*d.dst = time.Duration(*d.v) * time.Millisecond
	}
	if g.PollMax < g.PollInterval {
		g.PollMax = g.PollInterval
	}
	return nil
}

var reURL = regexp.MustCompile(`^https?://[^/\s]+(/\S*)?$`)
