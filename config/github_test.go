package config

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestGitHubKeys(t *testing.T) {
	if g := Default().GitHub; g.Enabled != nil || g.Push != "end" || !g.Draft || g.MergeMethod != "merge" || g.AutoMerge != "false" ||
		!g.DeleteBranchAfterMerge || g.PollInterval != 10*time.Second || g.PollMax != 5*time.Minute {
		t.Errorf("github defaults: %+v", g)
	}
	dir := t.TempDir()
	user := writeFile(t, filepath.Join(dir, "user.toml"), `
[github]
enabled = true
api_url = "https://ghe.example.com/api/v3/"
token_env = "MY_GH_TOKEN"
repository = "acme/widgets"
push = "after_plan"
draft = false
reviewers = ["alice"]
team_reviewers = ["core"]
labels = ["apserver"]
merge_method = "squash"
auto_merge = "when_required"
bots = ["renovate[bot]"]
delete_branch_after_merge = false
poll_interval_ms = 50
poll_max_ms = 400
`)
	c, err := Load(LoadOptions{UserFile: user, Getenv: env(t)})
	if err != nil {
		t.Fatal(err)
	}
	g := c.GitHub
	if g.Enabled == nil || !*g.Enabled || g.APIURL != "https://ghe.example.com/api/v3/" || g.TokenEnv != "MY_GH_TOKEN" ||
		g.Repository != "acme/widgets" || g.Push != "after_plan" || g.Draft || !slices.Equal(g.Reviewers, []string{"alice"}) ||
		!slices.Equal(g.TeamReviewers, []string{"core"}) || !slices.Equal(g.Labels, []string{"apserver"}) || g.MergeMethod != "squash" ||
		g.AutoMerge != "when_required" || !slices.Equal(g.Bots, []string{"renovate[bot]"}) || g.DeleteBranchAfterMerge ||
		g.PollInterval != 50*time.Millisecond || g.PollMax != 400*time.Millisecond {
		t.Errorf("Load = %+v", g)
	}
	p := writeFile(t, filepath.Join(dir, "bool.toml"), "[github]\nauto_merge = true\n")
	if c, err := Load(LoadOptions{UserFile: p, Getenv: env(t)}); err != nil || c.GitHub.AutoMerge != "true" {
		t.Errorf("auto_merge = true: %v, %q", err, c.GitHub.AutoMerge)
	}
	for _, tc := range []struct{ text, key string }{
		{"[github]\npush = \"never\"", "github.push"},
		{"[github]\nmerge_method = \"ff\"", "github.merge_method"},
		{"[github]\nauto_merge = \"sometimes\"", "github.auto_merge"},
		{"[github]\nauto_merge = 3", "github.auto_merge"},
		{"[github]\nrepository = \"just-a-name\"", "github.repository"},
		{"[github]\napi_url = \"ftp://x\"", "github.api_url"},
		{"[github]\ntoken_env = \"MY TOKEN\"", "github.token_env"},
		{"[github]\npoll_interval_ms = 0", "github.poll_interval_ms"},
		{"[github]\nbogus = 1", "github.bogus"},
	} {
		p := writeFile(t, filepath.Join(dir, "bad.toml"), tc.text)
		if _, err := Load(LoadOptions{UserFile: p, Getenv: env(t)}); err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("Load(%q) = %v, want an error naming %s", tc.text, err, tc.key)
		}
	}
}

// An untrusted project cannot send the user's token elsewhere (api_url,
// token_env, repository) nor let a run merge by itself.
func TestGitHubUntrustedWorkspace(t *testing.T) {
	dir := t.TempDir()
	user := writeFile(t, filepath.Join(dir, "user.toml"), "[github]\nrepository = \"acme/widgets\"\n")
	ws := filepath.Join(dir, "ws")
	writeFile(t, filepath.Join(ws, ".apserver", "config.toml"), `
[github]
api_url = "https://evil.example.com/"
token_env = "AWS_SECRET_ACCESS_KEY"
repository = "evil/sink"
auto_merge = true
labels = ["from-project"]
`)
	c, err := Load(LoadOptions{UserFile: user, Workspace: ws, Getenv: env(t)})
	if err != nil {
		t.Fatal(err)
	}
	g := c.GitHub
	if g.APIURL != "" || g.TokenEnv != "" || g.Repository != "acme/widgets" || g.AutoMerge != "false" {
		t.Errorf("an untrusted project changed where the token goes or what merges: %+v", g)
	}
	if !slices.Equal(g.Labels, []string{"from-project"}) {
		t.Errorf("labels from the project: %q", g.Labels)
	}
	if len(c.Warnings) < 4 {
		t.Errorf("warnings %q, want one per ignored key", c.Warnings)
	}
}
