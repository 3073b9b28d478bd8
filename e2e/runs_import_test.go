package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// `apserver runs import` on a fresh data dir rebuilds, from git alone,
// what run/list and run/read of the first data dir showed: the same runs,
// tasks, commits and outcome.
func TestRunsImport(t *testing.T) {
	t.Parallel()
	model := startModel(t, shoutRules(t)...)
	repo := shoutRepo(t)
	c := newRunsClient(t, model, faOptions{})
	var ids []string
	for _, autonomy := range []string{"full_auto", "off"} {
		id := c.startRun(map[string]any{"cwd": repo, "request": "add a shout option to greet.sh", "baseBranch": "main",
			"trust": map[string]any{"planning": "auto"}, "autonomy": autonomy})
		if end := c.runEnd(id); end.str("run.status") != "completed" {
			t.Fatalf("run/completed = %s", end.Raw)
		}
		ids = append(ids, id)
	}
	first := map[string]map[string]any{}
	for _, id := range ids {
		first[id] = c.call("run/read", map[string]any{"runId": id}).get("run").(map[string]any)
	}

	home := t.TempDir()
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := t.TempDir()
	imp := func() execResult {
		r := execResult{dataDir: fresh, cwd: repo}
		r.run(t, home, []string{"runs", "import", "--config", cfg, "--data-dir", fresh, "--repo", repo})
		if r.code != 0 {
			t.Fatalf("apserver runs import = exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		return r
	}
	out := imp().stdout
	for _, id := range ids {
		if !strings.Contains(out, "imported "+id+" completed") {
			t.Errorf("runs import:\n%s\nwant %s imported", out, id)
		}
	}
	if again := imp().stdout; !strings.Contains(again, "skipped "+ids[0]+": already in the data dir") {
		t.Errorf("a second import:\n%s", again)
	}

	c2 := newRunsClient(t, model, faOptions{dataDir: fresh})
	list := c2.call("run/list", map[string]any{})
	if n := len(list.get("runs").([]any)); n != 2 {
		t.Fatalf("run/list after the import = %s", list.Raw)
	}
	for _, id := range ids {
		got := c2.call("run/read", map[string]any{"runId": id}).get("run").(map[string]any)
		want := first[id]
		for _, k := range []string{"id", "request", "status", "stage", "baseBranch", "branch", "trust", "autonomy", "merge", "models",
			"counts", "mergeCommit", "clarifications", "createdAtMs"} {
			if !reflect.DeepEqual(got[k], want[k]) {
				t.Errorf("run %s: %s = %v after the import, want %v", id, k, got[k], want[k])
			}
		}
		gt, wt := tasksOf(got), tasksOf(want)
		if !reflect.DeepEqual(gt, wt) {
			t.Errorf("run %s: tasks after the import\n%s\nwant\n%s", id, js(gt), js(wt))
		}
	}
	if first[ids[0]]["mergeCommit"] == nil || first[ids[1]]["mergeCommit"] != nil {
		t.Errorf("the test needs a merged run and one left unmerged: %v, %v", first[ids[0]]["mergeCommit"], first[ids[1]]["mergeCommit"])
	}
}

// tasksOf keeps what a task is and how it ended.
func tasksOf(run map[string]any) []map[string]any {
	var out []map[string]any
	for _, t := range run["plan"].(map[string]any)["tasks"].([]any) {
		m := t.(map[string]any)
		out = append(out, map[string]any{"id": m["id"], "title": m["title"], "status": m["status"], "commit": m["commit"],
			"acceptance": m["acceptance"], "dependencies": m["dependencies"]})
	}
	return out
}

func js(v any) string { b, _ := json.MarshalIndent(v, "", " "); return string(b) }
