package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// The manager (docs/manager.md): the real binary, the planner,
// implementers and reviewers scripted at the HTTP level.

// managerSpec has two phases; the first holds the shout feature.
const managerSpec = `# Phase 1: Greeting

## Feature: Shout

The tool MUST accept --shout and greet in capitals.

# Phase 2: Later

## Feature: Whisper

The tool MAY whisper.
`

func managerOutline(t *testing.T) string {
	t.Helper()
	node := func(kind, heading string) map[string]any {
		return map[string]any{"kind": kind, "heading": heading, "title": heading, "summary": "", "priority": "", "risk": "",
			"estimate": "", "dependsOn": []string{}}
	}
	b, err := json.Marshal(map[string]any{"nodes": []any{node("phase", "Phase 1: Greeting"), node("feature", "Feature: Shout"),
		node("phase", "Phase 2: Later"), node("feature", "Feature: Whisper")}, "next": ""})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// managerTasks: S1, then S2 and S3 (both after S1: a fork the manager may
// run two at once).
func managerTasks(t *testing.T) string {
	t.Helper()
	task := func(title, check string, deps ...string) map[string]any {
		return map[string]any{"title": title, "kind": "file_edit", "criteria": []string{title}, "checks": []string{check},
			"files": []string{}, "dependsOn": append([]string{}, deps...), "estimate": "S", "risk": "low", "excerpt": "The tool MUST accept --shout and greet in capitals."}
	}
	b, err := json.Marshal(map[string]any{"tasks": []any{
		task("S1 make greet.sh accept --shout", "sh greet.sh --shout bob | grep -q 'HELLO, BOB'"),
		task("S2 add test_greet.sh", "sh test_greet.sh", "S1 make greet.sh accept --shout"),
		task("S3 document --shout", "grep -q -- --shout README.md", "S1 make greet.sh accept --shout"),
	}, "next": ""})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// managerProject is a repository with managerSpec ingested and the
// tasks of its first feature made: a cli of the real binary on it, and
// the two features' ids.
func managerProject(t *testing.T) (repo string, cli func(args ...string) *exec.Cmd, features []string) {
	t.Helper()
	return managerProjectWith(t, "")
}

// managerProjectWith is managerProject with config as the user's
// configuration file.
func managerProjectWith(t *testing.T, config string) (repo string, cli func(args ...string) *exec.Cmd, features []string) {
	t.Helper()
	e := newManagerEnv(t, config)
	return e.repo, e.cli, e.features
}

// managerEnv is managerProject's project with its model and data dir
// (a server on the same data dir sees the same project).
type managerEnv struct {
	repo     string
	cli      func(args ...string) *exec.Cmd
	features []string
	model    *scripted.Server
	dataDir  string
}

func newManagerEnv(t *testing.T, config string) *managerEnv {
	t.Helper()
	var (
		repo     string
		cli      func(args ...string) *exec.Cmd
		features []string
	)
	rules := append([]scripted.Rule{
		{Match: "[blueprint chunk 1/1 cursor=start]", Steps: []scripted.Step{{Text: managerOutline(t)}}},
		{Match: "[blueprint tasks n_", Steps: []scripted.Step{{Text: managerTasks(t)}}},
	}, shoutRules(t)...)
	model := startModel(t, rules...)
	repo = shoutRepo(t)
	if err := os.WriteFile(filepath.Join(repo, "spec.md"), []byte(managerSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	home, dataDir := t.TempDir(), t.TempDir()
	cfg := filepath.Join(home, "config.toml")
	os.WriteFile(cfg, []byte(config), 0o600)
	cli = func(args ...string) *exec.Cmd {
		cmd := exec.Command(binPath, append(append([]string{}, args[:2]...), append([]string{"--data-dir", dataDir, "--config", cfg, "--model", "scripted-model"}, args[2:]...)...)...)
		cmd.Dir = repo
		cmd.Env = serverEnv(t, home, model)
		return cmd
	}
	if out, err := cli("blueprint", "ingest", "spec.md").CombinedOutput(); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	out, err := cli("blueprint", "show").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "feature" {
			for _, w := range f {
				if strings.HasPrefix(w, "n_") {
					features = append(features, w)
				}
			}
		}
	}
	if len(features) != 2 {
		t.Fatalf("show:\n%s", out)
	}
	if out, err := cli("blueprint", "tasks", features[0]).CombinedOutput(); err != nil || strings.Count(string(out), "\tplanned\t") != 3 {
		t.Fatalf("tasks of %s: %v\n%s", features[0], err, out)
	}
	return &managerEnv{repo: repo, cli: cli, features: features, model: model, dataDir: dataDir}
}

// TestManagerAutopilot: in off the tick is idle; `apserver project
// autopilot --mode full_auto --max-parallel-runs 2` builds phase 1 (each
// task once, in dependency order: S1's commit under S2's and S3's),
// approving the plans of its runs, and stops with phase 1 done and phase 2
// untouched; a budget of one run a day then answers budget_exhausted.
func TestManagerAutopilot(t *testing.T) {
	t.Parallel()
	repo, cli, features := managerProject(t)
	if out, err := cli("project", "tick").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "idle:") {
		t.Fatalf("tick while off: %v\n%s", err, out)
	}
	out, err := cli("project", "autopilot", "--mode", "full_auto", "--max-parallel-runs", "2", "--interval", "100ms").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "done") {
		t.Fatalf("autopilot: %v\n%s", err, out)
	}
	t.Logf("autopilot:\n%s", out)
	if n := strings.Count(string(out), "started_run:"); n != 3 {
		t.Errorf("autopilot started %d runs, want 3:\n%s", n, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "started_run:") && !strings.Contains(l, "(0 of 2 runs") && !strings.Contains(l, "(1 of 2 runs") {
			t.Errorf("a run started beside two others: %s", l)
		}
	}
	if !strings.Contains(string(out), "advanced_run: full_auto approves the plan") {
		t.Errorf("full_auto did not approve the runs' plans:\n%s", out)
	}
	out, err = cli("blueprint", "tasks", features[0]).CombinedOutput()
	if err != nil || strings.Count(string(out), "\tdone\t") != 3 {
		t.Fatalf("tasks after the autopilot: %v\n%s", err, out)
	}
	commit := func(title string) string {
		return gitOut(t, repo, "log", "feature", "--format=%H", "--grep", title)
	}
	s1, s2, s3 := commit("S1 make greet.sh"), commit("S2 add test_greet.sh"), commit("S3 document")
	if len(strings.Fields(s1)) != 1 || len(strings.Fields(s2)) != 1 || len(strings.Fields(s3)) != 1 {
		t.Fatalf("task commits: S1 %q S2 %q S3 %q", s1, s2, s3)
	}
	for _, c := range []string{s2, s3} {
		if err := exec.Command("git", "-C", repo, "merge-base", "--is-ancestor", s1, c).Run(); err != nil {
			t.Errorf("S1's commit %s is not under %s: a dependent task started before it landed", s1, c)
		}
	}
	out, err = cli("blueprint", "tasks", features[1]).CombinedOutput()
	if strings.Contains(string(out), "\tdone\t") || strings.Contains(string(out), "in_progress") {
		t.Errorf("phase 2 was touched: %v\n%s", err, out)
	}
	if out, err := cli("project", "replay").CombinedOutput(); err != nil || !strings.Contains(string(out), " ticks replayed, 0 differ") {
		t.Errorf("replay: %v\n%s", err, out)
	}
	// apserver replay, the command that replays threads' receipts, replays
	// a project's ticks too
	// (the same data dir and config as cli's: its --data-dir and --config)
	pr := cli("project", "replay")
	rp := exec.Command(binPath, append([]string{"replay", "--project", repo}, pr.Args[3:7]...)...)
	rp.Env, rp.Dir = pr.Env, pr.Dir
	if out, err := rp.CombinedOutput(); err != nil || !strings.Contains(string(out), " ticks replayed, 0 differ") || strings.Contains(string(out), " 0 ticks replayed") {
		t.Errorf("apserver replay --project: %v\n%s", err, out)
	}
	st, err := cli("project", "status", "--json").Output()
	if err != nil || !strings.Contains(string(st), `"phaseDone":true`) || !strings.Contains(string(st), `"completed":3`) {
		t.Errorf("status: %v\n%s", err, st)
	}
}

// TestManagerProtocol: the manager's methods over stdio, every message
// checked against the schema: bad params are -32602 naming the field and
// the server goes on; settings round-trip and send project/updated; in
// off the tick is idle; explain and status answer for a project without a
// blueprint.
func TestManagerProtocol(t *testing.T) {
	t.Parallel()
	model := startModel(t)
	repo := shoutRepo(t)
	c := newRunsClient(t, model, faOptions{})
	c.callErr("manager/tick", map[string]any{}, -32602, "cwd")
	c.callErr("project/settings/update", map[string]any{"cwd": repo, "mode": "fast"}, -32602, "mode")
	c.callErr("project/settings/update", map[string]any{"cwd": repo, "maxParallelRuns": -1}, -32602, "maxParallelRuns")
	if m := c.call("manager/tick", map[string]any{"cwd": repo}); m.str("result") != "idle" {
		t.Fatalf("manager/tick while off = %s", m.Raw)
	}
	up := c.call("project/settings/update", map[string]any{"cwd": repo, "mode": "semi_auto", "maxParallelRuns": 3, "budget": map[string]any{"runsPerDay": 4}})
	if up.str("settings.mode") != "semi_auto" || up.get("settings.maxParallelRuns") != 3.0 || up.get("settings.budget.runsPerDay") != 4.0 {
		t.Fatalf("project/settings/update = %s", up.Raw)
	}
	c.waitFor("project/updated", func(m *message) bool { return m.str("cwd") == repo })
	if rd := c.call("project/settings/read", map[string]any{"cwd": repo}); rd.str("settings.mode") != "semi_auto" {
		t.Fatalf("project/settings/read = %s", rd.Raw)
	}
	if m := c.call("manager/tick", map[string]any{"cwd": repo}); m.str("result") != "nothing_to_do" || !strings.Contains(m.str("reason"), "no active blueprint") {
		t.Fatalf("manager/tick without a blueprint = %s", m.Raw)
	}
	if m := c.call("manager/explain", map[string]any{"cwd": repo}); !strings.Contains(m.str("summary"), "no active blueprint") {
		t.Fatalf("manager/explain = %s", m.Raw)
	}
	st := c.call("project/status", map[string]any{"cwd": repo})
	if st.str("mode") != "semi_auto" || st.str("lastTick.result") != "nothing_to_do" || st.get("spend.budget.runsPerDay") != 4.0 {
		t.Fatalf("project/status = %s", st.Raw)
	}
}

// TestManagerBudget: with a budget of one run a day, the autopilot starts
// S1, and once it is done stops with budget_exhausted (exit 5) instead of
// starting S2 and S3; the status says so.
func TestManagerBudget(t *testing.T) {
	t.Parallel()
	_, cli, features := managerProject(t)
	out, err := cli("project", "autopilot", "--mode", "full_auto", "--max-parallel-runs", "2", "--runs-per-day", "1", "--interval", "100ms").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 5 || !strings.Contains(string(out), "budget_exhausted: runs today: 1 of 1") {
		t.Fatalf("autopilot with a budget of 1 run: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "started_run:"); n != 1 {
		t.Errorf("%d runs started, want 1:\n%s", n, out)
	}
	if out, err := cli("blueprint", "tasks", features[0]).CombinedOutput(); err != nil || strings.Count(string(out), "\tdone\t") != 1 {
		t.Errorf("tasks: %v\n%s", err, out)
	}
	st, err := cli("project", "status", "--json").Output()
	if err != nil || !strings.Contains(string(st), `"result":"budget_exhausted"`) {
		t.Errorf("status: %v\n%s", err, st)
	}
}
