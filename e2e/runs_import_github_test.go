package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestRunsImportMergedOnGitHub: a run that ended on GitHub (its pull
// request merged there) committed no end to its branch; `apserver runs
// import` asks GitHub and reproduces the run as the first machine had it:
// completed, the pull request merged, the same merge commit and tasks.
func TestRunsImportMergedOnGitHub(t *testing.T) {
	t.Parallel()
	g := ghSetup(t)
	g.fake.Do(func() { g.repo.AutoChecks = green })
	model := startModel(t, ghRules(t)...)
	env := []string{"GITHUB_TOKEN=" + ghToken}
	c := newRunsClient(t, model, faOptions{config: g.config(""), env: env})
	id, _ := g.start(c, nil)
	if end := c.runEnd(id); end.str("run.pullRequest.state") != "merged" {
		t.Fatalf("run/completed = %s", end.Raw)
	}
	want := c.call("run/read", map[string]any{"runId": id}).get("run").(map[string]any)

	home := t.TempDir()
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte(g.config("")), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := t.TempDir()
	imp := func(token bool) string {
		cmd := exec.Command(binPath, "runs", "import", "--config", cfg, "--data-dir", fresh, "--repo", g.dir)
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
		if token {
			cmd.Env = append(cmd.Env, env...)
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("apserver runs import: %v\n%s", err, out.String())
		}
		return out.String()
	}
	// Without a token GitHub cannot be asked: the run is skipped, saying so.
	if out := imp(false); !strings.Contains(out, "skipped "+id) || !strings.Contains(out, "no token") {
		t.Errorf("runs import without a token:\n%s", out)
	}
	if out := imp(true); !strings.Contains(out, "imported "+id+" completed") {
		t.Fatalf("runs import:\n%s", out)
	}
	c2 := newRunsClient(t, model, faOptions{dataDir: fresh})
	got := c2.call("run/read", map[string]any{"runId": id}).get("run").(map[string]any)
	for _, k := range []string{"id", "request", "status", "stage", "branch", "mergeCommit", "counts"} {
		if !reflect.DeepEqual(got[k], want[k]) {
			t.Errorf("%s = %v after the import, want %v", k, got[k], want[k])
		}
	}
	gp, _ := got["pullRequest"].(map[string]any)
	wp, _ := want["pullRequest"].(map[string]any)
	if gp == nil || gp["number"] != wp["number"] || gp["state"] != "merged" || gp["url"] != wp["url"] {
		t.Errorf("pullRequest = %v after the import, want %v", gp, wp)
	}
	if !reflect.DeepEqual(tasksOf(got), tasksOf(want)) {
		t.Errorf("tasks after the import\n%s\nwant\n%s", js(tasksOf(got)), js(tasksOf(want)))
	}
}
